# The round's second call: porep-sha 2^26 in both runtimes (porep.sh, LIMIT 290 s),
# then draws of split-devsync at 3 and 4 workers under 16 GiB in place
# (runs/h200-2026-12-05d card.sh without its grid) until 560 s into the call.
#   OUT=$OUT bash docs/runs/h200-2026-12-06/callB.sh
t00=$(date +%s)
LIMIT=${PLIMIT:-290} bash docs/runs/h200-2026-12-06/porep.sh
GRID=0 RUNS="${RUNS:-inplace-f27 inplace-f24 inplace-f26}" LIMIT=$(( ${LIMIT:-560} - ($(date +%s) - t00) )) \
  bash docs/runs/h200-2026-12-05d/card.sh
cat $OUT/summary.txt
