# A trim's copy-engine work, copy by copy, in every committed H200 grid with traces
# (f6-f19 unpacked under docs/runs; f24 and f26 from their calls' archives), each
# family with its own one-worker figures (tables/fit-<family>.txt, from its start)
# and, where OLD is given, with a binary's figures read from the trim's return:
#   bash docs/runs/retro-2026-12-05/trimcopies_all.sh [OLD_COMMIT]
set -eu
R=docs/runs/retro-2026-12-05; T=$R/trimcopies.py
X=$(mktemp -d); trap 'rm -rf $X' EXIT
tar xzf docs/runs/h200-2026-12-05/c2/run.tgz -C $X --wildcards '*traces-gpu-f24*' 2>/dev/null || true
tar xzf docs/runs/h200-2026-12-05b/c2/run.tgz -C $X --wildcards '*traces-gpu-f26*' 2>/dev/null || true
fig() { awk -v f="$2" '$1 == f {print $NF}' "$1"; }
for fam in f6 f7 f8 f9 f10 f11 f12 f13 f14 f15 f16 f17 f18 f19 f24 f26; do
  files=$( (find docs/runs $X -path "*traces-gpu-$fam-*" -name '*.json*') | sort)
  [ -n "$files" ] || continue
  python3 $T $(fig $R/tables/fit-$fam.txt device.h2d_gbps) $(fig $R/tables/fit-$fam.txt device.trim_copy_work_ms_per_gib) --from-start $files > $X/new.txt 2>/dev/null
  new=$(head -1 $X/new.txt)
  line="$fam from the start: ${new#after a trim, its work left }"
  if [ -n "${1:-}" ]; then
    git show $1:$R/tables/fit-$fam.txt > $X/old.txt
    python3 $T $(fig $X/old.txt device.h2d_gbps) $(fig $X/old.txt device.trim_copy_work_ms_per_gib) $files > $X/out.txt 2>/dev/null
    old=$(head -1 $X/out.txt)
    line="$line | $1, from the return: ${old#after a trim, its work left }"
  fi
  echo "$line" | tr -s ' '
done
