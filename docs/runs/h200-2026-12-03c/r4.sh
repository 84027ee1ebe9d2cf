# Fourth call: the unseen family f14's grid against the predictions committed after r3
# (its profile has malloc_free_wait_ms_per_gib from its own one-worker probe under
# 16 GiB); then its split-devsync rows at 3-4 workers drawn again.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r4; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
CUZK=$K OUT=$R/grid FAMILIES=f14 TRACES=1 timeout $(left 270) gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "grid f14: $?"
cat $R/grid/gpu-f14-*.txt >> $OUT/summary.txt; cp $R/grid/gpu-f14-*.txt $OUT/
(cd $R && tar czf $OUT/r4-grid.tgz grid)
. gpuprove/contention_families.sh; family f14
row(){ awk '$1=="split-devsync"{printf "w%s %s items/s %s; ", $2, $3, $4}' $1; }
for rep in 1 2 3 4 5 6; do for lim in 140GiB 16GiB; do
  n=f14-$lim-$rep; [ $(left 290) -gt 10 ] || break 2
  timeout $(left 295) $K bench contention --backend gpu $COSTS $MEM --vram-limit $lim --designs split-devsync --workers 3,4 \
    --trace-dir $R/$n > $R/$n.txt 2> $R/$n.err; say "$n: $? $(row $R/$n.txt)"
done; done
gzip $R/*/*.json $R/*/*/*.json $R/*.err $R/*/*.err 2>/dev/null; tar czf $OUT/r4.tgz -C $R .
cat $OUT/summary.txt
