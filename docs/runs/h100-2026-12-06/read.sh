# Reads round h100-2026-12-06 (README.md) against its predictions: f29's
# grids (c3's run.tgz: three draws of each row) against pred/ (one-worker
# calibration only) and pred-beside/ (the card's own pool figures), then
# f29's racing rows (split-devsync at 3 and 4 workers) against the three grid
# draws and c2's 20 racing draws together, and their launch/device-sync ties
# (h200-2026-12-05b/ties.py). c1 is read by h200-2026-12-05d/read_card.sh
# (c1/read.txt).
#   bash docs/runs/h100-2026-12-06/read.sh
set -eu
H=docs/runs/h100-2026-12-06
C=docs/predictions/contention/draws/compare.py
T=$(mktemp -d); trap 'rm -rf $T' EXIT
mkdir -p $T/grid $T/racing
tar xzf $H/c3/run.tgz -C $T/grid; tar xzf $H/c2/draws.tgz -C $T/racing
for p in pred pred-beside; do for l in 16GiB 140GiB; do
  echo "== f29 $l, $p: the grids' three draws"
  python3 $C $H/$p/sim-f29-$l.txt $T/grid/d*/gpu-f29-$l.txt
done; done
for l in 16GiB 140GiB; do
  echo "== f29 $l racing rows, pred: the grids' draws and c2's"
  python3 $C $H/pred/sim-f29-$l.txt $T/grid/d*/gpu-f29-$l.txt $T/racing/d*/gpu-f29-$l.txt | grep -E '^design|^split-devsync +[34] '
done
echo "== launch/device-sync ties in the racing draws"
(cd $T/racing && python3 $OLDPWD/docs/runs/h200-2026-12-05b/ties.py d*/traces-gpu-f29-*/*.json.gz 2>&1 | tail -8) || true
