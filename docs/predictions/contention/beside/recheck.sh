#!/usr/bin/env bash
# The grids of f12-f17 (both limits), predicted with each family's committed profile,
# once as it is (S=0) and once with device.pool_slowdown_kernel set to the base
# profile's (fitted on f12-f14's whole-card grids: cuzk sim calibrate --beside-trace),
# against each family's card grid. f15-f17 were not in the fit, but this is after
# their grids ran. Writes $OUT/<S>/sim-<family>-<limit>.txt (.err) and
# errors-<family>-<limit>.txt, and prints each errors table's summary line. Run from
# the repository root after `make build`.
#   OUT (default /tmp/beside-recheck), CUZK (default build/cuzk)
set -eu
CUZK=${CUZK:-build/cuzk}
OUT=${OUT:-/tmp/beside-recheck}
D=docs/predictions/contention
S=$(python3 -c "import json; print(json.load(open('$D/h200-contention-base.json'))['device']['pool_slowdown_kernel'])")
. gpuprove/contention_families.sh
. $D/grids.sh
for s in 0 "$S"; do
	mkdir -p "$OUT/$s"
	for fam in f12 f13 f14 f15 f16 f17; do
		$D/setfield.py $D/$fam/h200-contention-$fam.json "$OUT/$s/h200-contention-$fam.json" device.pool_slowdown_kernel "$s"
		for lim in 140GiB 16GiB; do
			recheck "$OUT/$s" "$fam" $lim "slowdown $s, $fam $lim"
		done
	done
done
