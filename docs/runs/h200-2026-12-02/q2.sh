set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/q2; mkdir -p $R/tr-ps24-host $R/tr-ps-stream
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libmain.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16)"
# calibration for 2^26: one worker, 16 GiB, the points streamed from the Go heap as the 2^26 runs will, the host-memory gate of those runs
timeout 200 /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 16M --keys memory --designs budget,split --workers 1 --vram-limits 16GiB --key-tier host --host-mem-limit 40GiB --gnark-runs 0 --partition-runs 3 --trace-dir $R/tr-ps24-host > $R/bench-ps24-host-w1.txt 2> $R/bench-ps24-host-w1.err; say "bench porep-sha 16M w1 16GiB host tier: $?"
grep -v "verifier done\|WRN\|INF" $R/bench-ps24-host-w1.err | grep -E -A8 "^bench: |stamped|keygen stage=g2|Maximum resident|Elapsed" | cut -c1-300 >> $OUT/summary.txt; cat $R/bench-ps24-host-w1.txt >> $OUT/summary.txt
# issue 14's busy goal as a stream: four 10-partition jobs at once, 2^20 and 2^22
timeout $(left 380) $K bench prove --backend gpu --circuit porep-sha --sizes 1M,4M --keys memory --designs budget,split-first,split --workers 3 --jobs 4 --vram-limits 0 --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-ps-stream > $R/bench-ps-stream.txt 2> $R/bench-ps-stream.err; say "bench porep-sha 1M,4M w3 jobs 4 card: $?"; grep "^bench: [a-z]" $R/bench-ps-stream.err >> $OUT/summary.txt; cat $R/bench-ps-stream.txt >> $OUT/summary.txt
gzip $R/tr-*/*.json $R/*.err 2>/dev/null; tar czf $OUT/q2.tgz -C $R .
cat $OUT/summary.txt
