set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/f2; mkdir -p $R/tr-m25-16g $R/tr-m25-card
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libmain.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16); nproc $(nproc)"
/usr/bin/time -v $K setup --circuit mimc --constraints 32M --keys /tmp/km --keygen gpu > $R/setup-mimc32m.log 2>&1; say "setup mimc 32M: $? $(grep -E 'Maximum resident|Elapsed' $R/setup-mimc32m.log | tr '\n' ' ')"
$K prove --circuit mimc --constraints 32M --keys /tmp/km --backend gpu --vram-limit 16GiB --plan > $R/plan-m25-16g.txt 2>&1
timeout $(left 375) $K bench prove --backend gpu --circuit mimc --sizes 32M --keys /tmp/km --workers 3 --vram-limits 16GiB --layout compact --designs budget,split,split-first,split-devsync,single --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-m25-16g > $R/bench-m25-16g.txt 2> $R/bench-m25-16g.err; say "bench mimc 32M 16GiB: $?"; grep "^bench: [a-z]" $R/bench-m25-16g.err >> $OUT/summary.txt
[ $(left 570) -gt 50 ] && { timeout $(left 578) $K bench prove --backend gpu --circuit mimc --sizes 32M --keys /tmp/km --workers 3 --vram-limits 0 --designs split,split-first,split-devsync,single --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-m25-card > $R/bench-m25-card.txt 2> $R/bench-m25-card.err; say "bench mimc 32M card: $?"; grep "^bench: [a-z]" $R/bench-m25-card.err >> $OUT/summary.txt; }
find $R -name "*.json" -exec gzip {} \; ; gzip $R/*.log; tar czf $OUT/f2.tgz -C $R .
cat $OUT/summary.txt
