# Predicts a same-call round's grids from its one-worker calibration alone
# (the pipeline fixed before the round, runs/h200-2026-12-04e "For the next
# round"), and reads them against the round's draws:
#   contention_fit.sh on CAL with the base profile (newest_first 0.973,
#   later_first 0.01, stream_sync_waits_pool, scratch_oom_at_once_after_trim),
#   newest_first set back to the base's (one run of one family is too few
#   handoffs to fit it), then BACKEND=sim contention_grid.sh, 16 seeds, and
#   draws/compare.py against DRAWS_DIR/d*/gpu-<family>-<limit>.txt.
# usage: predict-same-call.sh CAL DRAWS_DIR OUT   (FAMS, default "f25"; CUZK, default build/cuzk)
set -eu
CAL=$1 DRAWS=$2 OUT=$3
CUZK=${CUZK:-build/cuzk}
B=docs/predictions/contention/h200-contention-base.json
mkdir -p "$OUT"
nf=$(python3 -c "import json; print(json.load(open('$B'))['host']['handoff']['newest_first'])")
for fam in ${FAMS:-f25}; do
  PROFILES=$OUT CUZK=$CUZK FAMILIES=$fam BASE=$B gpuprove/contention_fit.sh "$CAL" > /dev/null
  python3 docs/predictions/contention/setfield.py $OUT/h200-contention-$fam.json $OUT/h200-contention-$fam.json \
    host.handoff.newest_first "$nf" > /dev/null
  OUT=$OUT BACKEND=sim PROFILES=$OUT FAMILIES=$fam SEEDS=16 CUZK=$CUZK gpuprove/contention_grid.sh > /dev/null
  for lim in 16GiB 140GiB; do
    draws=$(ls "$DRAWS"/d*/gpu-$fam-$lim.txt 2>/dev/null || true)
    [ -n "$draws" ] || continue
    echo "== $fam $lim"
    python3 docs/predictions/contention/draws/compare.py $OUT/sim-$fam-$lim.txt $draws
  done
done
