#!/usr/bin/env bash
# The 16 GiB grids of the families whose staged buffer does not fit beside the one just
# freed (f4, f6, f7, f11: in the base's malloc_free_wait_ms_per_gib fit; f12: not) and
# of two whose does (f10, f13), predicted with each family's committed profile, once as
# it is (W=0) and once with device.malloc_free_wait_ms_per_gib set to the base
# profile's, against each family's card grid. Writes $OUT/<W>/sim-<family>-16GiB.txt
# (.err) and errors-<family>-16GiB.txt, and prints each errors table's summary line.
# Run from the repository root after `make build`.
#   OUT (default /tmp/freewait-recheck), CUZK (default build/cuzk)
set -eu
CUZK=${CUZK:-build/cuzk}
OUT=${OUT:-/tmp/freewait-recheck}
D=docs/predictions/contention
W=$(python3 -c "import json; print(json.load(open('$D/h200-contention-base.json'))['device']['malloc_free_wait_ms_per_gib'])")
. gpuprove/contention_families.sh
. $D/grids.sh
profile() {
	case $1 in
	f4 | f6) echo $D/h200-contention-$1.json ;;
	*) echo $D/$1/h200-contention-$1.json ;;
	esac
}
for w in 0 "$W"; do
	mkdir -p "$OUT/$w"
	for fam in f4 f6 f7 f11 f12 f10 f13; do
		$D/setfield.py "$(profile $fam)" "$OUT/$w/h200-contention-$fam.json" device.malloc_free_wait_ms_per_gib "$w"
		recheck "$OUT/$w" "$fam" 16GiB "wait $w, $fam 16 GiB"
	done
done
