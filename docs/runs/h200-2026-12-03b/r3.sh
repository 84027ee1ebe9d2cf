# Third call: split-devsync at 3-4 workers of f7, f8 and f9, five draws each, against
# the predictions committed before their grids ran (reproduced by this binary's model in
# docs/predictions/contention/draws/sim-*.txt, committed before this call).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r3; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
. gpuprove/contention_families.sh
for rep in 1 2 3 4 5; do for fam in f7 f8 f9; do for lim in 140GiB 16GiB; do
  family $fam; n=$fam-$lim-$rep; [ $(left 440) -gt 12 ] || break 3
  timeout $(left 450) $K bench contention --backend gpu $COSTS $MEM --vram-limit $lim --designs split-devsync --workers 3,4 \
    --trace-dir $R/$n > $R/$n.txt 2> $R/$n.err
  say "$n: $? $(awk '$1=="split-devsync"{printf "w%s %s items/s %s; ", $2, $3, $4}' $R/$n.txt)"
done; done; done
gzip $R/*/*.json 2>/dev/null; tar czf $OUT/r3.tgz -C $R .
cat $OUT/summary.txt
