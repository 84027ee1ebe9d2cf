# Predicts a call's grids from its one-worker calibration alone (fixed before
# the round, README.md "Checks") and reads them against the call's draws:
#   `cuzk bench contention calibrate --fit-only` on cal-<family>/ without race/
#   (with beside/ where the call ran it)
#   (the base: the embedded h200-contention-base, newest_first 0.973,
#   later_first 0.01), then BACKEND=sim contention_grid.sh, 16 seeds, and
#   draws/compare.py against RUN/d*/gpu-<family>-<limit>.txt.
# The partition's flags are the family's (the scratch is in no trace).
# usage: predict.sh RUN OUT   (FAMS, default "f24 f25"; CUZK, default build/cuzk;
#   SEEDS, default 16; COMPARE=0 predicts without reading RUN's draws)
set -eu
RUN=$1 OUT=$2
CUZK=${CUZK:-build/cuzk}
. gpuprove/contention_families.sh
nf=$(python3 -c "import json; print(json.load(open('sim/profiles/h200-contention-base.json'))['host']['handoff']['newest_first'])")
mkdir -p "$OUT"
for fam in ${FAMS:-f24 f25}; do
  [ -d "$RUN/cal-$fam" ] || continue
  family "$fam"
  cal=$OUT/cal-$fam; rm -rf "$cal"; mkdir -p "$cal"
  for d in designs probe ballast probe-ballast; do ln -s "$(realpath "$RUN/cal-$fam/$d")" "$cal/$d"; done
  # The runs of several workers beside each other, where the call made them
  # (call.sh BESIDE=N): the card's own pool figures, not the base's.
  [ ! -d "$RUN/cal-$fam/beside" ] || ln -s "$(realpath "$RUN/cal-$fam/beside")" "$cal/beside"
  # The card the runs had (recorded by binaries newer than 0a6cc46; older runs have none).
  [ ! -f "$RUN/cal-$fam/card.json" ] || cp "$RUN/cal-$fam/card.json" "$cal/"
  "$CUZK" bench contention calibrate --fit-only $COSTS $MEM --dir "$cal" --name h200-contention-$fam \
    --out "$OUT/h200-contention-$fam.json" > "$OUT/fit-$fam.txt" 2>&1
  # One run of each design is too few handoffs to fit newest_first: the base's.
  python3 docs/predictions/contention/setfield.py "$OUT/h200-contention-$fam.json" "$OUT/h200-contention-$fam.json" \
    host.handoff.newest_first "$nf" > /dev/null
  OUT=$OUT BACKEND=sim PROFILES=$OUT FAMILIES=$fam SEEDS=${SEEDS:-16} CUZK=$CUZK gpuprove/contention_grid.sh > /dev/null
  [ "${COMPARE:-1}" = 1 ] || continue
  for lim in 16GiB 140GiB; do
    draws=$(ls "$RUN"/d*/gpu-$fam-$lim.txt 2>/dev/null || true)
    [ -n "$draws" ] || continue
    echo "== $fam $lim"
    python3 docs/predictions/contention/draws/compare.py "$OUT/sim-$fam-$lim.txt" $draws
  done
done
