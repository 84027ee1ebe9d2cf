# Second call: the unseen family f11's grid against the predictions of bf0c3ec; then
# split-devsync at 3-4 workers on the host alone (the emulated device, no GPU) for f10
# and f11, to see whether the host's race shows there; then f11's split-devsync rows
# on the card again and again.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r2; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
CUZK=$K OUT=$R/grid FAMILIES=f11 TRACES=1 timeout 260 gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "grid f11: $?"; cat $R/grid/gpu-f11-*.txt >> $OUT/summary.txt
. gpuprove/contention_families.sh
row(){ awk '$1=="split-devsync"{printf "w%s %s items/s %s; ", $2, $3, $4}' $1; }
for rep in 1 2 3 4; do for fam in f10 f11; do
  family $fam; n=emu-$fam-$rep; [ $(left 420) -gt 10 ] || break 2
  timeout $(left 430) $K bench contention --backend emu $(backend_flags emu) $COSTS $MEM --vram-limit 140GiB --designs split-devsync --workers 3,4 \
    --trace-dir $R/$n > $R/$n.txt 2> $R/$n.err; say "$n: $? $(row $R/$n.txt)"
done; done
family f11
for rep in 1 2 3 4 5; do for lim in 140GiB 16GiB; do
  n=f11-$lim-$rep; [ $(left 530) -gt 15 ] || break 2
  timeout $(left 540) $K bench contention --backend gpu $COSTS $MEM --vram-limit $lim --designs split-devsync --workers 3,4 \
    --trace-dir $R/$n > $R/$n.txt 2> $R/$n.err; say "$n: $? $(row $R/$n.txt)"
done; done
gzip $R/*/*.json $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/r2.tgz -C $R .
cat $OUT/summary.txt
