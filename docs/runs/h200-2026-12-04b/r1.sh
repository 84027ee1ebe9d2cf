# First call: the one-worker calibration runs of families f24 and f25 (three
# runs each), the families chosen to check scratch_oom_at_once_after_trim out
# of sample. Their grids run only after the predictions fitted from these
# runs are committed (r2.sh).
. docs/runs/preamble.sh
R=/tmp/cal; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
RUNS=3 CUZK=$K OUT=$R FAMILIES="f24 f25" timeout $(left 570) gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1; say "calibrate: $?"
gzip $R/*/*.json $R/*.err 2>/dev/null; tar czf $OUT/cal.tgz -C $R .
cat $OUT/summary.txt
