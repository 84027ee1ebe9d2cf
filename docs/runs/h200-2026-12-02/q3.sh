# 2^26 porep-sha, every design, 3 workers, 16 GiB then the whole card; keys made in this process; after the predictions were committed (f561211)
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/q3; mkdir -p $R/tr-ps26
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libmain.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so GOMEMLIMIT=64GiB
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(free -g | grep Mem)"
( while sleep 5; do echo "$(( $(date +%s)-t0 )) $(free -m | awk '/Mem/{print $3}') $(ps -o rss= -C cuzk | head -1)" >> $R/mem.txt; done ) & M=$!
timeout 555 /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 64M --keys memory --designs budget,split-first,split,split-devsync,single --workers 3 --vram-limits 16GiB,0 --host-mem-limit 36GiB --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-ps26 > $R/bench-ps26.txt 2> $R/bench-ps26.err; say "bench porep-sha 64M w3 16GiB,card: $?"; kill $M
grep -v "verifier done\|WRN\|INF" $R/bench-ps26.err | grep -E -A8 "^bench: |stamped|keygen stage|Maximum resident|Elapsed|rror|panic" | cut -c1-300 >> $OUT/summary.txt; cat $R/bench-ps26.txt >> $OUT/summary.txt
echo "mem samples (s, used MiB, cuzk RSS KiB): max used $(sort -k2 -n $R/mem.txt | tail -1)" >> $OUT/summary.txt; awk 'NR%6==0' $R/mem.txt >> $OUT/summary.txt
grep -v "WRN\|INF\|verifier done" $R/bench-ps26.err | gzip > $R/bench-ps26.err.gz; rm $R/bench-ps26.err
gzip $R/tr-*/*.json 2>/dev/null; tar czf $OUT/q3.tgz -C $R .
cat $OUT/summary.txt
