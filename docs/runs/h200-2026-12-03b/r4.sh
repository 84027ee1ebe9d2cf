# Fourth call: split-devsync at 3-4 workers on the whole card for f3, f5 and f6, four
# draws each, against docs/predictions/contention/draws/unseen (committed before it).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r4; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
. gpuprove/contention_families.sh
for rep in 1 2 3 4; do for fam in f3 f5 f6; do
  family $fam; n=$fam-140GiB-$rep; [ $(left 200) -gt 12 ] || break 2
  timeout $(left 210) $K bench contention --backend gpu $COSTS $MEM --vram-limit 140GiB --designs split-devsync --workers 3,4 \
    --trace-dir $R/$n > $R/$n.txt 2> $R/$n.err
  say "$n: $? $(awk '$1=="split-devsync"{printf "w%s %s items/s %s; ", $2, $3, $4}' $R/$n.txt)"
done; done
gzip $R/*/*.json 2>/dev/null; tar czf $OUT/r4.tgz -C $R .
cat $OUT/summary.txt
