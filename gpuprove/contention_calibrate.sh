#!/usr/bin/env bash
# The one-worker runs the contention grid's profiles are calibrated on, and
# nothing else: per family, on the whole card,
#   traces-<family>/        every design with one worker and the family's CPU
#                           stages (the stage costs; the pool's costs from the
#                           designs that trim and grow it back);
#   traces-<family>-probe/  the single design with one worker and no CPU
#                           stages, so that each copy follows the previous
#                           item's cudaFree at once (the work a free leaves on
#                           the copy engine, docs/cuda-facts.md);
#   traces-<family>-ballast/ the split design (it trims and grows the pool
#                           back every item) with one worker under the grid's
#                           16 GiB limit, whose ballast slows pool growth;
#   traces-<family>-probe-ballast/ the single design with one worker and no
#                           CPU stages under 16 GiB, so that each cudaMalloc
#                           follows the previous item's cudaFree at once:
#                           where the buffer does not fit beside the one just
#                           freed, how long such a malloc waits;
# each with its table (<dir>.txt, .err). Each of these runs RUNS times
# (`--runs`; the first run's trace is trace-<design>-w1.json, run i's
# trace-<design>-w1-r<i>.json): a one-worker run is one draw of the card's
# pool and copy costs, which move by several per cent from run to run, and
# the fit takes the device's figures from every run's calls. Bring $OUT
# back whole; then
# contention_fit.sh fits the profiles from it and
# `BACKEND=sim contention_grid.sh` predicts the grid.
#   CUZK (default build/cuzk), OUT (default /tmp/contention-calibration),
#   FAMILIES ("f3 f4"), BACKEND (gpu; emu to try the pipeline without a card),
#   RUNS (3).
set -u
CUZK=${CUZK:-build/cuzk}
OUT=${OUT:-/tmp/contention-calibration}
BACKEND=${BACKEND:-gpu}
. "$(dirname "$0")/contention_families.sh"
mkdir -p "$OUT"
echo "cuzk $(sha256sum "$CUZK" | cut -c1-16): $("$CUZK" version | head -1)" | tee "$OUT/binary.txt"
status=0
run() { # name, limit, flags...
	local name=$1 limit=$2
	shift 2
	local t0
	t0=$(date +%s)
	"$CUZK" bench contention --backend "$BACKEND" $(backend_flags "$BACKEND") --vram-limit "$limit" --workers 1 \
		--runs "${RUNS:-3}" --trace-dir "$OUT/$name" "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err"
	local rc=$?
	[ $rc -eq 0 ] || status=1
	echo "$BACKEND $name: exit $rc, $(( $(date +%s) - t0 )) s"
}
for fam in ${FAMILIES:-f3 f4}; do
	family "$fam" || exit 2
	run "traces-$fam" 140GiB $COSTS $MEM --designs "$DESIGNS"
	# The same kernel and memory without the CPU stages.
	run "traces-$fam-probe" 140GiB $COSTS --before 0s --after 0s $MEM --designs single
	# Pool growth under the limit's ballast.
	run "traces-$fam-ballast" 16GiB $COSTS $MEM --designs split
	# A cudaMalloc right after a cudaFree, under the limit.
	run "traces-$fam-probe-ballast" 16GiB $COSTS --before 0s --after 0s $MEM --designs single
done
exit $status
