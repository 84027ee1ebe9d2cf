# Reads round h200-2026-12-05b against its checks (README.md):
#  (1) runs/h200-2026-12-05's pred-256 (256 seeds, committed before this
#      round) against call 1's draws of F24 and F25's racing rows, then the
#      16 GiB rows against calls 1 and 3 together;
#  (3) f26's prediction (pred/, predict.sh, committed before its grids were
#      read) against call 2's draw of its grids, the 32 rows outside the
#      racing rows summed up, and its racing rows against every draw;
#  (2) the launch/device-sync ties of every trace, by row (ties.py).
#   bash docs/runs/h200-2026-12-05b/read.sh
set -eu
H=docs/runs/h200-2026-12-05b
P=docs/runs/h200-2026-12-05/pred-256
C=docs/predictions/contention/draws/compare.py
T=$(mktemp -d); trap 'rm -rf $T' EXIT
for c in c1 c2 c3; do mkdir -p $T/$c; tar xzf $H/$c/draws.tgz -C $T/$c; done
mkdir -p $T/grid; tar xzf $H/c2/run.tgz -C $T/grid
racing() { grep -E '^split-devsync +[34] |^design|^rows'; }
echo "## (1) pred-256 against call 1"
for f in f24 f25; do for l in 16GiB 140GiB; do
  echo "== $f $l"; python3 $C $P/sim-$f-$l.txt $T/c1/d*/gpu-$f-$l.txt | racing
done; done
echo "## (1) the 16 GiB rows against calls 1 and 3"
for f in f24 f25; do
  echo "== $f 16GiB"; python3 $C $P/sim-$f-16GiB.txt $T/c1/d*/gpu-$f-16GiB.txt $T/c3/d*/gpu-$f-16GiB.txt | racing
done
echo "## (3) f26: its grids' draw, then its racing rows against every draw"
for l in 16GiB 140GiB; do
  echo "== f26 $l"
  python3 $C $H/pred/sim-f26-$l.txt $T/grid/d1/gpu-f26-$l.txt | tee $T/f26-$l.txt | grep -vE '^split-devsync +[34] '
  python3 $C $H/pred/sim-f26-$l.txt $T/grid/d1/gpu-f26-$l.txt $T/c2/d*/gpu-f26-$l.txt | racing
done
python3 - $T/f26-16GiB.txt $T/f26-140GiB.txt <<'PY'
import statistics as S, sys
e, b, oom = [], [], []
for path in sys.argv[1:]:
    for l in open(path):
        p = l.split()
        if len(p) > 12 and p[1].isdigit() and p[10].endswith('%') and not (p[0] == 'split-devsync' and int(p[1]) >= 3):
            e.append(abs(float(p[10].rstrip('%')))); b.append(abs(float(p[11])))
            d, s = p[13].split('/'), p[14].split('/')
            if (int(d[0]) * 2 > int(d[1])) != (int(s[0]) * 2 > int(s[1])):
                oom.append(p[0] + '/' + p[1])
print(f'f26 outside split-devsync at 3-4 workers: {len(e)} rows: throughput error median {S.median(e):.1f} %, max {max(e):.1f} %; '
      f'GPU busy within {max(b):.1f} points; OOM yes/no wrong: {", ".join(oom) or "none"}')
PY
echo "## (2) ties by row"
(cd $T && python3 $OLDPWD/$H/ties.py c[123]/d*/traces-gpu-f2*/trace-split-devsync-w[34].json.gz | sed -n '1,15p')
