# Second call: the first draw of f20's and f21's grids, both limits, against the
# predictions committed with docs/predictions/contention/f20 and f21.
set -u; C=.gpuprove-carry; t0=$(date +%s); D=${D:-1}; R=/tmp/d$D; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "draw $D: $($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
for fam in f20 f21; do for lim in 16GiB 140GiB; do
  CUZK=$K OUT=$R/grid FAMILIES=$fam LIMITS=$lim TRACES=1 timeout $(left 560) gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "grid $fam $lim: $?"
  cat $R/grid/gpu-$fam-$lim.txt >> $OUT/summary.txt
done; done
gzip $R/*/*.json $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/d$D.tgz -C $R .
cat $OUT/summary.txt
