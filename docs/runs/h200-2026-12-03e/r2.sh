# Second call: f18's grid, both limits, against the predictions committed in
# f1ec6d1; then three more draws of f15's split and split-first at 2-4 workers
# on the whole card (is F15's gap the same every run?).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r2; mkdir -p $R/draws
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
for lim in 140GiB 16GiB; do
  CUZK=$K OUT=$R/grid FAMILIES=f18 LIMITS=$lim TRACES=1 timeout $(left 450) gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "grid f18 $lim: $?"
  cat $R/grid/gpu-f18-$lim.txt >> $OUT/summary.txt
done
. gpuprove/contention_families.sh; family f15
for i in 1 2 3; do
  [ $(left 540) -gt 40 ] || break
  timeout $(left 560) $K bench contention --backend gpu --vram-limit 140GiB --workers 2,3,4 --designs split,split-first $COSTS $MEM \
    > $R/draws/f15-d$i.txt 2> $R/draws/f15-d$i.err; say "f15 whole-card split draw $i: $?"
  tail -6 $R/draws/f15-d$i.txt >> $OUT/summary.txt
done
gzip $R/*/*.json $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/r2.tgz -C $R .
cat $OUT/summary.txt
