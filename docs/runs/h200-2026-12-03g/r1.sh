# First call: f22's and f23's one-worker calibration runs, three runs of each
# (contention_calibrate.sh's RUNS), nothing else; their profiles and
# predictions are committed before the grids run.
. docs/runs/preamble.sh
R=/tmp/r1; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
RUNS=3 CUZK=$K OUT=$R/cal FAMILIES="f22 f23" timeout $(left 560) gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1; say "calibration f22 f23: $?"
for f in $R/cal/*.txt; do echo "== $f"; cat $f; done >> $OUT/summary.txt
gzip $R/*/*.json $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/r1.tgz -C $R .
cat $OUT/summary.txt
