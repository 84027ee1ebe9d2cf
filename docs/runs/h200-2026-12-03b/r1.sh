# First call: family f11's one-worker calibration runs, then split-devsync at 3-4
# workers on f10 again and again, with the binary whose handlers queue their events
# (f6f1530, "new") and the one before (9285c65, "old", observers under locks).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r1; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk cuzk-old libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "new $($C/cuzk version | head -1); old $($C/cuzk-old version | head -1); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
CUZK=$PWD/$C/cuzk OUT=$R/cal FAMILIES=f11 timeout 150 gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1; say "calibration f11: $?"
. gpuprove/contention_families.sh; family f10
for rep in 1 2 3 4 5 6; do
  for bin in new old; do
    K=$PWD/$C/cuzk; [ $bin = old ] && K=$PWD/$C/cuzk-old
    for lim in 140GiB 16GiB; do
      [ $(left 520) -gt 15 ] || break 3
      n=f10-$bin-$lim-$rep
      timeout $(left 530) $K bench contention --backend gpu $COSTS $MEM --vram-limit $lim --designs split-devsync --workers 3,4 \
        --trace-dir $R/$n > $R/$n.txt 2> $R/$n.err
      say "$n: $? $(awk '$1=="split-devsync"{printf "w%s %s items/s %s; ", $2, $3, $4}' $R/$n.txt)"
    done
  done
done
gzip $R/*/*.json 2>/dev/null; tar czf $OUT/r1.tgz -C $R .
cat $OUT/summary.txt
