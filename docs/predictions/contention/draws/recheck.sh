#!/usr/bin/env bash
# Split-devsync at 3-4 workers of f7-f11, predicted with each family's committed
# profile and host.handoff.later_first set to L (default: the base profile's), against
# the card's draws of runs/h200-2026-12-03b. Writes $OUT/sim-<family>-<limit>.txt (.err)
# and prints compare.py's rows. Run from the repository root after `make build`.
#   L, OUT (default /tmp/draws-recheck), CUZK (default build/cuzk)
set -eu
CUZK=${CUZK:-build/cuzk}
OUT=${OUT:-/tmp/draws-recheck}
D=docs/predictions/contention
RUNS=docs/runs/h200-2026-12-03b
L=${L:-$(python3 -c "import json; print(json.load(open('$D/h200-contention-base.json'))['host']['handoff'].get('later_first', 0))")}
. gpuprove/contention_families.sh
mkdir -p "$OUT"
for fam in f7 f8 f9 f10 f11; do
	$D/setfield.py $D/$fam/h200-contention-$fam.json "$OUT/h200-contention-$fam.json" host.handoff.later_first "$L"
	family "$fam"
	for lim in 140GiB 16GiB; do
		"$CUZK" bench contention --backend sim --profile "$OUT/h200-contention-$fam.json" --seeds 16 $MEM --vram-limit "$lim" \
			--designs split-devsync --workers 3,4 > "$OUT/sim-$fam-$lim.txt" 2> "$OUT/sim-$fam-$lim.err"
		case $fam in
		f7 | f8 | f9) runs=$(ls $RUNS/r3/$fam-$lim-*.txt) ;;
		f10) runs=$(ls $RUNS/r1/f10-*-$lim-*.txt) ;;
		f11) runs="$(ls $RUNS/r2/f11-$lim-*.txt) $RUNS/r2/grid/gpu-f11-$lim.txt" ;;
		esac
		python3 $D/draws/compare.py "$OUT/sim-$fam-$lim.txt" $runs | grep -v '^design' | sed "s/^/$fam $lim  /"
	done
done
