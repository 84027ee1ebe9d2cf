# Second call: the unseen families f15, f16 and f17's grids against the predictions of
# 9fdc2c3 (committed before this call); then their split-devsync rows at 3-4 workers
# drawn again, as long as the call lasts.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r2; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
for fam in f15 f17 f16; do
  [ $(left 560) -gt 60 ] || break
  CUZK=$K OUT=$R/grid FAMILIES=$fam TRACES=1 timeout $(left 560) gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "grid $fam: $?"
  cat $R/grid/gpu-$fam-*.txt >> $OUT/summary.txt
  (cd $R && tar czf $OUT/grid-$fam.tgz grid/gpu-$fam-*)
done
. gpuprove/contention_families.sh
row(){ awk '$1=="split-devsync"{printf "w%s %s items/s %s; ", $2, $3, $4}' $1; }
for rep in 1 2 3 4 5 6; do for fam in f15 f16 f17; do for lim in 140GiB 16GiB; do
  family $fam; n=$fam-$lim-$rep; [ $(left 575) -gt 15 ] || break 3
  timeout $(left 580) $K bench contention --backend gpu $COSTS $MEM --vram-limit $lim --designs split-devsync --workers 3,4 \
    > $R/$n.txt 2> $R/$n.err; say "$n: $? $(row $R/$n.txt)"
done; done; done
gzip $R/*/*.json $R/*/*/*.json $R/*.err $R/*/*.err 2>/dev/null; tar czf $OUT/r2.tgz -C $R .
cat $OUT/summary.txt
