# Third call: the one-worker calibration runs of f14, a family no profile has seen,
# with the new probe under 16 GiB (a cudaMalloc right after a cudaFree); and the same
# probe for f11 and f12, whose mallocs waited in their grids, to set the one-worker fit
# beside the grids' multi-worker one (the base's 3.116 ms a GiB).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r3; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
CUZK=$K OUT=$R/cal FAMILIES="f14" timeout 200 gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1; say "calibration f14: $?"
. gpuprove/contention_families.sh
for fam in f11 f12; do
  family $fam; n=probe-ballast-$fam
  timeout 60 $K bench contention --backend gpu $COSTS --before 0s --after 0s $MEM --vram-limit 16GiB --designs single --workers 1 \
    --trace-dir $R/$n > $R/$n.txt 2> $R/$n.err; say "$n: $? $(awk '$1=="single"{print $3, "items/s"}' $R/$n.txt)"
done
gzip $R/*/*.json $R/*.err $R/*/*.err 2>/dev/null; tar czf $OUT/r3.tgz -C $R .
cat $OUT/summary.txt
