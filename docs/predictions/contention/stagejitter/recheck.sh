#!/usr/bin/env bash
# The grids of f7-f17 (both limits), predicted with each family's committed
# profile, once as it is (as/) and once with each stage's own jitter (stage/):
# the coefficients of variation `cuzk sim calibrate` now reads per stage from
# the family's one-worker calibration trace (trace-single-w1, the trace its
# stage costs came from), set into the committed profile and nothing else
# changed. Against each family's card grid; this is after the grids ran, not a
# prediction committed before them. Writes $OUT/<as|stage>/sim-<family>-<limit>.txt
# (.err), errors-<family>-<limit>.txt and the profiles, and prints each errors
# table's summary line. Run from the repository root after `make build`.
#   OUT (default /tmp/stagejitter-recheck), CUZK (default build/cuzk),
#   FAMILIES (default f7 ... f17)
set -eu
CUZK=${CUZK:-build/cuzk}
OUT=${OUT:-/tmp/stagejitter-recheck}
D=docs/predictions/contention
R=docs/runs
. gpuprove/contention_families.sh
. $D/grids.sh
cal() { # the family's one-worker calibration trace of the single design
	case $1 in
	f7) echo $R/h200-2026-12-01h/h3/calibration/traces-f7/trace-single-w1.json ;;
	f8) echo $R/h200-2026-12-01h/h5/calibration/traces-f8/trace-single-w1.json ;;
	f9) echo $R/h200-2026-12-02b/r1/calibration/traces-f9/trace-single-w1.json.gz ;;
	f10) echo $R/h200-2026-12-02b/r3/calibration/traces-f10/trace-single-w1.json.gz ;;
	f11) echo $R/h200-2026-12-03b/r1/cal/traces-f11/trace-single-w1.json.gz ;;
	f12 | f13) echo $R/h200-2026-12-03c/r1/cal/traces-$1/trace-single-w1.json ;;
	f14) echo $R/h200-2026-12-03c/r3/cal/traces-f14/trace-single-w1.json ;;
	f15 | f16 | f17) echo $R/h200-2026-12-03d/r1/cal/traces-$1/trace-single-w1.json.gz ;;
	esac
}
mkdir -p "$OUT/as" "$OUT/stage"
for fam in ${FAMILIES:-f7 f8 f9 f10 f11 f12 f13 f14 f15 f16 f17}; do
	committed=$D/$fam/h200-contention-$fam.json
	cp "$committed" "$OUT/as/"
	t=$(cal "$fam")
	case $t in *.gz) gunzip -c "$t" > "$OUT/stage/$fam-single-w1.json"; t=$OUT/stage/$fam-single-w1.json ;; esac
	"$CUZK" sim calibrate --profile "$committed" --constraints 1M --trace "$t" --out "$OUT/stage/refit-$fam.json" 2> "$OUT/stage/refit-$fam.log"
	python3 - "$committed" "$OUT/stage/refit-$fam.json" "$OUT/stage/h200-contention-$fam.json" <<'PY'
import json, sys
p, refit = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for name, st in refit["stages"].items():
    if "jitter" in st:
        p["stages"][name]["jitter"] = st["jitter"]
json.dump(p, open(sys.argv[3], "w"), indent=2)
PY
	for v in as stage; do
		for lim in 140GiB 16GiB; do
			recheck "$OUT/$v" "$fam" $lim "$v, $fam $lim"
		done
	done
done
