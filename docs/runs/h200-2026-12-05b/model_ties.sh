# The model's launch/device-sync ties, counted as ties.py counts the card's
# (README.md (2)): split-devsync at 3 and 4 workers, both limits, 32 seeds
# traced, from the profiles the round's checks used (F24, F25:
# runs/h200-2026-12-05's pred/; f26: pred/).
#   bash docs/runs/h200-2026-12-05b/model_ties.sh   (CUZK, default build/cuzk)
set -eu
CUZK=${CUZK:-build/cuzk}
. gpuprove/contention_families.sh
T=$(mktemp -d); trap 'rm -rf $T' EXIT
for spec in "f24 docs/runs/h200-2026-12-05/pred/h200-contention-f24.json" \
            "f25 docs/runs/h200-2026-12-05/pred/h200-contention-f25.json" \
            "f26 docs/runs/h200-2026-12-05b/pred/h200-contention-f26.json"; do
  set -- $spec; family $1
  for lim in 16GiB 140GiB; do
    "$CUZK" bench contention --backend sim --profile $2 --seeds ${SEEDS:-32} $COSTS $MEM --vram-limit $lim \
      --designs split-devsync --workers 3,4 --constraints 1048576 --trace-dir $T/traces-sim-$1-$lim > /dev/null 2>&1
  done
done
python3 docs/runs/h200-2026-12-05b/ties.py $T/traces-sim-*/trace-split-devsync-w*.json | sed -n '1,15p'
