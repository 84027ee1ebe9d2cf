# Third call: why F9 OOMed under 16 GiB (what the limit's ballast leaves free, the exact
# free at each OOM and each cudaMemGetInfo), F9's ballast run again with mem_info's free
# in its trace, and the one-worker calibration of the unseen family F10.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r3; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
. gpuprove/contention_families.sh; family f9
timeout 60 $K --verbose bench contention --backend gpu --vram-limit 16GiB --workers 1,3,4 --designs budget,split-first $COSTS $MEM --trace-dir $R/f9-16g-probe > $R/f9-16g-probe.txt 2> $R/f9-16g-probe.err; say "f9 16GiB probe: $?"
cat $R/f9-16g-probe.txt >> $OUT/summary.txt; grep -E "vram limit" $R/f9-16g-probe.err | cut -c1-300 >> $OUT/summary.txt; grep -o "allocate [^;]*bytes free" $R/f9-16g-probe.err | sort | uniq -c >> $OUT/summary.txt
timeout 30 $K --verbose bench contention --backend gpu --vram-limit 16GiB --workers 1 --designs split $COSTS $MEM --trace-dir $R/traces-f9-ballast > $R/traces-f9-ballast.txt 2> $R/traces-f9-ballast.err; say "f9 ballast again: $?"; grep "vram limit" $R/traces-f9-ballast.err | cut -c1-300 >> $OUT/summary.txt
CUZK=$K OUT=$R/calibration FAMILIES=f10 timeout 150 gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1; say "calibration f10: $?"; tail -n 3 $R/calibration/*.txt >> $OUT/summary.txt
grep -h "vram limit" $R/calibration/*.err | cut -c1-300 >> $OUT/summary.txt
gzip $R/*/*.json $R/*.err $R/calibration/*.err $R/calibration/*/*.json 2>/dev/null; tar czf $OUT/r3.tgz -C $R .
cat $OUT/summary.txt
