#!/usr/bin/env bash
# Fits each family's profile from contention_calibrate.sh's one-worker traces
# (cuzk sim calibrate): the stage costs and the partition's memory from the
# single design's run with the family's CPU stages; the device's figures
# (bandwidth, the work a cudaFree leaves on the copy engine, the host time of
# cudaMalloc, cudaFree, a trim and a regrowth) from every one-worker trace of
# the family, and the extra cost of pool growth under the 16 GiB limit's
# ballast from traces-<family>-ballast when the calibration has it, and what
# the ballast left short of the 16 GiB limit from its cudaMemGetInfo calls
# (traces made since their events carry the free bytes), and how long a
# cudaMalloc right after a cudaFree waits for the freed bytes from
# traces-<family>-probe-ballast when its mallocs waited; the rest
# from the base profile. A calibration made with RUNS > 1 has every run's
# trace (trace-<design>-w1-r<i>.json beside the first): the stage costs come
# from the single design's first run, the device's figures from all of them.
# Writes
# $PROFILES/h200-contention-<family>.json and the fit's log beside it.
#   contention_fit.sh CALIBRATION_DIR
#   CUZK (default build/cuzk), FAMILIES ("f3 f4"),
#   PROFILES (default docs/predictions/contention),
#   BASE (default docs/predictions/contention/h200-contention-base.json).
set -eu
[ $# -eq 1 ] || { echo "usage: $0 CALIBRATION_DIR" >&2; exit 2; }
CUZK=${CUZK:-build/cuzk}
PROFILES=${PROFILES:-docs/predictions/contention}
BASE=${BASE:-docs/predictions/contention/h200-contention-base.json}
mkdir -p "$PROFILES"
# one_worker DIR...: every run's one-worker trace in each DIR that has any.
one_worker() {
	local dir t
	for dir in "$@"; do
		for t in "$dir"/trace-*-w1.json "$dir"/trace-*-w1-r*.json; do
			[ -f "$t" ] && printf '%s\n' "$t"
		done
	done
}
for fam in ${FAMILIES:-f3 f4}; do
	d=$1/traces-$fam
	traces=(--trace "$d/trace-single-w1.json")
	while IFS= read -r t; do
		[ "$t" != "$d/trace-single-w1.json" ] && traces+=(--trace "$t")
	done < <(one_worker "$d" "$1/traces-$fam-probe")
	while IFS= read -r t; do
		traces+=(--ballast-trace "$t" --ballast-limit 16GiB)
	done < <(one_worker "$1/traces-$fam-ballast" "$1/traces-$fam-probe-ballast")
	"$CUZK" sim calibrate --profile "$BASE" --constraints 1M --name "h200-contention-$fam" "${traces[@]}" \
		--out "$PROFILES/h200-contention-$fam.json" 2> "$PROFILES/fit-$fam.log"
	echo "$fam: $PROFILES/h200-contention-$fam.json"
	cat "$PROFILES/fit-$fam.log"
done
