set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/f3; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libmain.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16); nproc $(nproc)"
CUZK=$K OUT=$R/grid FAMILIES="f5 f6" TRACES=1 timeout $(left 430) bash gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "grid: $?"
[ $(left 560) -gt 75 ] && { $K setup --circuit porep-sha --constraints 4M --keys /tmp/kp --keygen gpu > $R/setup-ps4m.log 2>&1; say "setup porep-sha 4M: $? $(tail -1 $R/setup-ps4m.log)"
 timeout $(left 578) $K bench prove --backend gpu --circuit porep-sha --sizes 4M --keys /tmp/kp --workers 3,4 --vram-limits 0 --designs budget,split --gnark-runs 0 --partition-runs 0 --jobs 4 > $R/bench-ps4m-jobs4.txt 2> $R/bench-ps4m-jobs4.err; say "bench porep-sha 4M jobs 4: $?"; grep -A8 "^  design" $R/bench-ps4m-jobs4.txt | head -8 >> $OUT/summary.txt; }
find $R -name "*.json" -exec gzip {} \; ; gzip $R/*.log 2>/dev/null; tar czf $OUT/f3.tgz -C $R .
cat $OUT/summary.txt
