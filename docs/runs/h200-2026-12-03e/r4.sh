# Fourth call: f19's grid, both limits, against the predictions committed in
# the commit that added docs/predictions/contention/f19.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r4; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
for lim in 16GiB 140GiB; do
  CUZK=$K OUT=$R/grid FAMILIES=f19 LIMITS=$lim TRACES=1 timeout $(left 520) gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "grid f19 $lim: $?"
  cat $R/grid/gpu-f19-$lim.txt >> $OUT/summary.txt
done
gzip $R/*/*.json $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/r4.tgz -C $R .
cat $OUT/summary.txt
