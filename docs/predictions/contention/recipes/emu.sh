#!/usr/bin/env bash
# bench contention calibrate end to end on the emulated device (no card): the
# calibration of F24's partition with the H200's copy-engine work behind a
# free, the simulator's prediction of the grid (every design, 1-4 workers,
# whole card and 16 GiB, 16 seeds) from its profile, the emulated device's
# own grid (one draw a row), and draws/compare.py between them.
# Run from the repository root: bash docs/predictions/contention/recipes/emu.sh
#   CUZK (default build/cuzk), TMP (default a fresh temporary directory).
set -eu
CUZK=${CUZK:-build/cuzk}
TMP=${TMP:-$(mktemp -d)}
. gpuprove/contention_families.sh
family f24
EMU="--backend emu $(backend_flags emu)"
echo "cuzk $("$CUZK" version | head -1)"
start=$(date +%s)
"$CUZK" bench contention calibrate $EMU --dir "$TMP/cal" $MEM $COSTS 2> "$TMP/cal.err"
grep '^calibration' "$TMP/cal.err"
echo "calibration: $(( $(date +%s) - start )) s"
for lim in 140GiB 16GiB; do
	"$CUZK" bench contention --backend sim --profile "$TMP/cal/profile.json" --seeds 16 $MEM --vram-limit $lim \
		--workers 1,2,3,4 > "$TMP/sim-$lim.txt" 2> "$TMP/sim-$lim.err"
	"$CUZK" bench contention $EMU $MEM $COSTS --vram-limit $lim --workers 1,2,3,4 > "$TMP/emu-$lim.txt" 2> "$TMP/emu-$lim.err"
	echo "== $lim"
	python3 docs/predictions/contention/draws/compare.py "$TMP/sim-$lim.txt" "$TMP/emu-$lim.txt"
done
