# oomtie.py on the card's 16 GiB racing traces of runs/h200-2026-12-05 and -05b
# (each trace once), then on the model's (F24, F25, f26 profiles of those
# rounds' predictions, 64 seeds traced).
#   bash docs/runs/h200-2026-12-05c/oomtie.sh   (CUZK, default build/cuzk)
set -eu
CUZK=${CUZK:-build/cuzk}
. docs/runs/h200-2026-12-05c/traces.sh
O=docs/runs/h200-2026-12-05c/oomtie.py
echo "card:"
(cd $T && python3 $OLDPWD/$O $(once "*16GiB*"))
. gpuprove/contention_families.sh
for spec in "f24 docs/runs/h200-2026-12-05/pred/h200-contention-f24.json" \
            "f25 docs/runs/h200-2026-12-05/pred/h200-contention-f25.json" \
            "f26 docs/runs/h200-2026-12-05b/pred/h200-contention-f26.json"; do
  set -- $spec; family $1
  "$CUZK" bench contention --backend sim --profile $2 --seeds 64 $COSTS $MEM --vram-limit 16GiB \
    --designs split-devsync --workers 3,4 --constraints 1048576 --trace-dir $T/sim/traces-sim-$1-16GiB > /dev/null 2>&1
done
echo "model, 64 seeds:"
python3 $O $T/sim/traces-sim-*/*.json
