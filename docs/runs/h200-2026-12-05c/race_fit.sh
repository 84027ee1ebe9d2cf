# host.handoff.later_first fitted through the simulator (`bench contention
# calibrate --fit-only`, which fits it so since this round) from each family's
# calibration with its race runs: F24 and F25 from runs/h200-2026-12-05 c2,
# f26 from runs/h200-2026-12-05b c2.
#   bash docs/runs/h200-2026-12-05c/race_fit.sh   (CUZK, default build/cuzk)
set -eu
CUZK=${CUZK:-build/cuzk}
. gpuprove/contention_families.sh
T=$(mktemp -d); trap 'rm -rf $T' EXIT
mkdir -p $T/a $T/b
tar xzf docs/runs/h200-2026-12-05/c2/run.tgz -C $T/a
tar xzf docs/runs/h200-2026-12-05b/c2/run.tgz -C $T/b
for x in a:f24 a:f25 b:f26; do
  d=$T/${x%%:*}/cal-${x##*:}; family ${x##*:}
  echo "== ${x##*:}"
  "$CUZK" bench contention calibrate --fit-only $COSTS $MEM --dir $d --out $T/p.json 2>&1 | grep 'host.handoff'
done
