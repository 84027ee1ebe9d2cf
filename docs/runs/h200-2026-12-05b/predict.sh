# Predicts a family's grids from its call's one-worker calibration alone
# (round h200-2026-12-05b, README.md "Checks"): runs/h200-2026-12-05's
# predict.sh with SEEDS seeds (default 64, as `bench contention calibrate`
# suggests) instead of 16; the same fit (`--fit-only` on designs/, probe/,
# ballast/, probe-ballast/ without race/, newest_first and later_first the
# base's).
# usage: predict.sh RUN OUT   (FAMS, default f26; CUZK, default build/cuzk)
set -eu
RUN=$1 OUT=$2
CUZK=${CUZK:-build/cuzk}
. gpuprove/contention_families.sh
nf=$(python3 -c "import json; print(json.load(open('sim/profiles/h200-contention-base.json'))['host']['handoff']['newest_first'])")
mkdir -p "$OUT"
for fam in ${FAMS:-f26}; do
  [ -d "$RUN/cal-$fam" ] || continue
  family "$fam"
  cal=$OUT/cal-$fam; rm -rf "$cal"; mkdir -p "$cal"
  for d in designs probe ballast probe-ballast; do ln -s "$(realpath "$RUN/cal-$fam/$d")" "$cal/$d"; done
  "$CUZK" bench contention calibrate --fit-only $COSTS $MEM --dir "$cal" --name h200-contention-$fam \
    --out "$OUT/h200-contention-$fam.json" > "$OUT/fit-$fam.txt" 2>&1
  python3 docs/predictions/contention/setfield.py "$OUT/h200-contention-$fam.json" "$OUT/h200-contention-$fam.json" \
    host.handoff.newest_first "$nf" > /dev/null
  OUT=$OUT BACKEND=sim PROFILES=$OUT FAMILIES=$fam SEEDS=${SEEDS:-64} CUZK=$CUZK gpuprove/contention_grid.sh > /dev/null
  rm -rf "$cal"
done
