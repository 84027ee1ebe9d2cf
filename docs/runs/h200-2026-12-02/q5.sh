# the keys' points moved into pinned memory (2e31a66): a check at 2^24, then 2^26 with three partitions on the host, every design, 16 GiB and the card; after the predictions were committed
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/q5; mkdir -p $R/tr-ps26
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libmain.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so GOMEMLIMIT=72GiB
say "$($K version | head -1) $(sha256sum $K | cut -c1-16)"
/usr/bin/time -v timeout 90 $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 16M --keys memory --designs budget --workers 1 --vram-limits 16GiB --key-tier pinned --gnark-runs 0 --partition-runs 1 > $R/ps24-moved.txt 2> $R/ps24-moved.err; say "ps24 moved: $?"
grep -v "verifier done\|WRN\|INF\|streamed msm" $R/ps24-moved.err | grep -E -A7 "^bench: |Maximum resident|panic|rror" | cut -c1-300 >> $OUT/summary.txt; grep -v "verifier done" $R/ps24-moved.txt >> $OUT/summary.txt; gzip $R/ps24-moved.err
( while sleep 5; do echo "$(( $(date +%s)-t0 )) $(free -m | awk '/Mem/{print $3}') $(ps -o rss= -C cuzk | head -1)" >> $R/mem.txt; done ) & M=$!
timeout $(left 575) /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 64M --keys memory --designs budget,split-first,split,split-devsync,single --workers 3 --vram-limits 16GiB,0 --host-mem-limit 54GiB --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-ps26 > $R/bench-ps26.txt 2> $R/bench-ps26.err; say "bench porep-sha 64M w3 16GiB,card gate 54: $?"; kill $M
grep -v "verifier done\|WRN\|INF\|streamed msm" $R/bench-ps26.err | grep -E -A8 "^bench: |stamped|keygen stage=g2|Maximum resident|Elapsed|rror|panic" | cut -c1-300 >> $OUT/summary.txt; grep -v "verifier done" $R/bench-ps26.txt >> $OUT/summary.txt
grep "streamed msm" $R/bench-ps26.err | sed 's/^time=[^ ]* level=DEBUG //' | head -400 | tail -10 >> $OUT/summary.txt
echo "mem samples (s, used MiB, cuzk RSS KiB): max used $(sort -k2 -n $R/mem.txt | tail -1)" >> $OUT/summary.txt; awk 'NR%6==0' $R/mem.txt >> $OUT/summary.txt
grep -v "WRN\|INF\|verifier done" $R/bench-ps26.err | gzip > $R/bench-ps26.err.gz; rm $R/bench-ps26.err
gzip $R/tr-*/*.json 2>/dev/null; tar czf $OUT/q5.tgz -C $R .
cat $OUT/summary.txt
