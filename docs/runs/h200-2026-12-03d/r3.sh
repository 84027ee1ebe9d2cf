# Third call: what r2 left, against the same predictions of 9fdc2c3: f17's grid
# under 16 GiB (r2's call ended in it), then f16's grid.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r3; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
for job in "f17 16GiB" "f16 16GiB" "f16 140GiB"; do
  set -- $job; [ $(left 450) -gt 60 ] || break
  CUZK=$K OUT=$R/grid FAMILIES=$1 LIMITS=$2 TRACES=1 timeout $(left 460) gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "grid $1 $2: $?"
  cat $R/grid/gpu-$1-$2.txt >> $OUT/summary.txt
  (cd $R && tar czf $OUT/grid-$1-$2.tgz grid/gpu-$1-$2*)
done
gzip $R/*/*.json $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/r3.tgz -C $R .
cat $OUT/summary.txt
