# Third call: f19's one-worker calibration runs (a family no profile has seen);
# three more draws of f18's budget at 3 and 4 workers under 16 GiB (how much do
# the runs with kernels' scratch OOMs vary?).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r3; mkdir -p $R/draws
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
. gpuprove/contention_families.sh
CUZK=$K OUT=$R/cal FAMILIES=f19 timeout 300 gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1; say "calibration f19: $?"
for f in $R/cal/*.txt; do echo "== $f"; cat $f; done >> $OUT/summary.txt
family f18
for i in 1 2 3; do
  timeout 90 $K bench contention --backend gpu --vram-limit 16GiB --workers 3,4 --designs budget $COSTS $MEM \
    --trace-dir $R/draws/f18-d$i > $R/draws/f18-d$i.txt 2> $R/draws/f18-d$i.err; say "f18 16GiB budget draw $i: $?"
  tail -2 $R/draws/f18-d$i.txt >> $OUT/summary.txt
done
gzip $R/*/*.json $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/r3.tgz -C $R .
cat $OUT/summary.txt
