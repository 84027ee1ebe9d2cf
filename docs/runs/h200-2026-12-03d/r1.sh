# First call: the one-worker calibration runs of f15, f16 and f17, three families no
# profile has seen, outside the earlier families' ranges (copies longer than the
# kernel; short kernels beside long CPU stages and a 3 GiB scratch; a 12 GiB
# partition with an 8 GiB copy).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r1; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
CUZK=$K OUT=$R/cal FAMILIES="f15 f16 f17" timeout 400 gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1; say "calibration f15 f16 f17: $?"
for f in $R/cal/*.txt; do echo "== $f"; cat $f; done >> $OUT/summary.txt
gzip $R/*/*.json $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/r1.tgz -C $R .
cat $OUT/summary.txt
