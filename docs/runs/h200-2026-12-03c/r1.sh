# First call: the one-worker calibration runs of f12 and f13, two families no profile
# has seen; then f9's split-devsync rows on the whole card, drawn again (r3 of
# h200-2026-12-03b drew them five times, too few for a mean within the goal's points).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r1; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
CUZK=$K OUT=$R/cal FAMILIES="f12 f13" timeout 240 gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1; say "calibration f12 f13: $?"
. gpuprove/contention_families.sh; family f9
row(){ awk '$1=="split-devsync"{printf "w%s %s items/s %s; ", $2, $3, $4}' $1; }
for rep in 1 2 3 4 5 6 7 8 9 10; do
  n=f9-140GiB-$rep; [ $(left 330) -gt 12 ] || break
  timeout $(left 340) $K bench contention --backend gpu $COSTS $MEM --vram-limit 140GiB --designs split-devsync --workers 3,4 \
    --trace-dir $R/$n > $R/$n.txt 2> $R/$n.err; say "$n: $? $(row $R/$n.txt)"
done
gzip $R/*/*.json $R/*.err 2>/dev/null; tar czf $OUT/r1.tgz -C $R .
cat $OUT/summary.txt
