# Reads CALL/gotrace.txz (gotrace.sh on the card wrote it as gotrace.tgz,
# traces gzipped; docs/runs/repack.sh repacked it, or the .tgz if there): per
# row, the ties from the JSON traces (ties.py), the launches (gostall.py) and
# both chains of each tie (chain.py) from Go's execution trace.
#   bash docs/runs/h200-2026-12-05c/read.sh CALL
set -eu
D=docs/runs/h200-2026-12-05c/$1
T=$(mktemp -d)
if [ -f $D/gotrace.txz ]; then tar xJf $D/gotrace.txz -C $T; else tar xzf $D/gotrace.tgz -C $T; fi
for r in f26-16-w4 f24-16-w3 f25-whole-w3 f27-16-w3; do
  [ ! -f $T/$r.trace.gz ] || gunzip -f $T/$r.trace.gz
  [ -f $T/$r.trace ] || { echo "$r: no trace"; continue; }
  echo "== $r: $(grep -m1 'split-devsync ×' $T/$r.txt)"
  go tool trace -d=parsed $T/$r.trace > $T/$r.parsed 2>/dev/null
  python3 docs/runs/h200-2026-12-05b/ties.py $T/$r/traces-gpu-*/*.json* | sed -n '1,3p'
  python3 docs/runs/h200-2026-12-04d/gostall.py --show 0 $T/$r.parsed | sed "s|$T/||"
  python3 docs/runs/h200-2026-12-05c/chain.py --show ${SHOW:-3} $T/$r.parsed | sed "s|$T/||"
done
echo "(unpacked in $T)"
