#!/usr/bin/env bash
# How much each way of calibrating the simulator loses, on the card's own
# runs: the one-worker calibration of runs/h200-2026-12-04b r1 (F24 and F25,
# three runs of each), four profiles fitted from it, each predicting the four
# grids (5 designs x 1-4 workers x whole card and 16 GiB, 16 seeds), read
# against the three draws of r2 with draws/compare.py. No device is used.
#   A  bench contention calibrate --fit-only (the H200 base; every run: the
#      designs, the probe, the ballast and the probe under it) =
#      gpuprove/contention_fit.sh
#   B  sim calibrate on budget's one-worker trace alone, from seed-16g
#      (the simulator's embedded default, the seed's 16 GiB card)
#   C  the same trace from h200-contention-base
#   D  every whole-card run (designs and probe) from h200-contention-base,
#      without the runs under the limit
# Run from the repository root: bash docs/predictions/contention/recipes/recipes.sh
#   CUZK (default build/cuzk), TMP (default a fresh temporary directory).
set -eu
CUZK=${CUZK:-build/cuzk}
TMP=${TMP:-$(mktemp -d)}
R=docs/runs/h200-2026-12-04b
. gpuprove/contention_families.sh
mkdir -p "$TMP/cal" "$TMP/draws"
tar xzf $R/r1/cal.tgz -C "$TMP/cal"
tar xzf $R/r2/grids.tgz -C "$TMP/draws"
echo "cuzk $("$CUZK" version | head -1)"
for fam in f24 f25; do
	family $fam
	C=$TMP/cal
	L=$TMP/layout-$fam
	mkdir -p "$L" "$TMP"/{A,B,C,D}
	# The calibration's directories under the names calibrate reads.
	for d in designs: probe:-probe ballast:-ballast probe-ballast:-probe-ballast; do
		ln -sfn "$C/traces-$fam${d#*:}" "$L/${d%%:*}"
	done
	"$CUZK" bench contention calibrate --fit-only --dir "$L" --name h200-contention-$fam \
		--out "$TMP/A/h200-contention-$fam.json" $MEM $COSTS > /dev/null 2>&1
	budget=$C/traces-$fam/trace-budget-w1.json.gz
	"$CUZK" sim calibrate --profile seed-16g --constraints 1M --trace "$budget" \
		--out "$TMP/B/h200-contention-$fam.json" 2> /dev/null
	"$CUZK" sim calibrate --profile h200-contention-base --constraints 1M --trace "$budget" \
		--out "$TMP/C/h200-contention-$fam.json" 2> /dev/null
	whole=(--trace "$C/traces-$fam/trace-single-w1.json.gz")
	for t in "$C"/traces-$fam/*.json.gz "$C"/traces-$fam-probe/*.json.gz; do
		[ "$t" != "$C/traces-$fam/trace-single-w1.json.gz" ] && whole+=(--trace "$t")
	done
	"$CUZK" sim calibrate --profile h200-contention-base --constraints 1M "${whole[@]}" \
		--out "$TMP/D/h200-contention-$fam.json" 2> /dev/null
done
for v in A B C D; do
	OUT=$TMP/pred-$v BACKEND=sim PROFILES=$TMP/$v FAMILIES="f24 f25" SEEDS=16 CUZK=$CUZK \
		bash gpuprove/contention_grid.sh > /dev/null 2>&1
	echo "== $v"
	for fl in f24-140GiB f24-16GiB f25-140GiB f25-16GiB; do
		printf '%-11s ' "$fl"
		python3 docs/predictions/contention/draws/compare.py "$TMP/pred-$v/sim-$fl.txt" "$TMP"/draws/d{1,2,3}/gpu-$fl.txt |
			grep 'rows against' | sed 's/^20 rows against the mean of their draws: //'
	done
done
