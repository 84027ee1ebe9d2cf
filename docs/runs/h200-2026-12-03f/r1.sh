# First call: f20's and f21's one-worker calibration runs (families no profile
# has seen), nothing else; their profiles and predictions are committed before
# the grids run.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r1; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
CUZK=$K OUT=$R/cal FAMILIES="f20 f21" timeout 400 gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1; say "calibration f20 f21: $?"
for f in $R/cal/*.txt; do echo "== $f"; cat $f; done >> $OUT/summary.txt
gzip $R/*/*.json $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/r1.tgz -C $R .
cat $OUT/summary.txt
