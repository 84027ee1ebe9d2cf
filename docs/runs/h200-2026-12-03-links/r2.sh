# Second call: a third one-job draw at 2^20 and 2^22, a one-worker 2^22 trace, then 2^27 of the linked layout under
# 16 GiB, budget and split, against the prediction committed before it
# (predictions/h200-porepsha128m-16g-links-predicted.txt: 27.1 s, 89.8 %; split 9 OOMs,
# 9 fallbacks); last, if time is left, eight linked 2^22 solves at once.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r2; mkdir -p $R/tr-ps27
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so circuits.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1); $(free -g | grep Mem)"
timeout 90 $K bench prove --backend gpu --circuit porep-sha --sizes 1M,4M --keys memory --designs budget,split-first,split --workers 3 --jobs 1 --vram-limits 0 --gnark-runs 0 --partition-runs 1 --trace-dir $R/tr-j1c > $R/j1c.txt 2> $R/j1c.err
say "porep-sha 1M,4M w3 card, j1c, jobs 1: $?"; grep -E "^circuit|^one partition|^ +(design|budget|split)" $R/j1c.txt >> $OUT/summary.txt
timeout 90 $K bench prove --backend gpu --circuit porep-sha --sizes 4M --keys memory --designs budget --workers 1 --jobs 1 --vram-limits 0 --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-w1 > $R/w1.txt 2> $R/w1.err
say "porep-sha 4M budget w1 card (a calibration trace): $?"; grep -E "^circuit|^ +(design|budget)" $R/w1.txt >> $OUT/summary.txt
( while sleep 2; do echo "$(( $(date +%s)-t0 )) $(free -m | awk '/Mem/{print $3}') $(ps -o rss= -C cuzk | head -1)" >> $R/mem.txt; done ) & M=$!
timeout $(left 590) /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 128M --keys memory --designs budget,split --workers 3 --vram-limits 16GiB --host-mem-limit 66GiB --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-ps27 > $R/bench-ps27.txt 2> $R/bench-ps27.err; say "bench porep-sha 128M w3 16GiB gate 66: $?"; kill $M
grep -v "verifier done\|WRN\|INF\|streamed msm" $R/bench-ps27.err | grep -E -A8 "^bench: |^setup|stamped|keygen stage=|Maximum resident|Elapsed|rror|panic|signal|Killed" | cut -c1-300 >> $OUT/summary.txt; grep -E "^circuit|^one partition|^wire|^ +(design|budget|split|single)" $R/bench-ps27.txt >> $OUT/summary.txt
echo "mem samples (s, used MiB, cuzk RSS KiB): max used $(sort -k2 -n $R/mem.txt | tail -1)" >> $OUT/summary.txt
if [ $(left 590) -gt 60 ]; then
  (cd circuits && CUZK_SOLVE_LOGS=22 timeout $(left 585) ../$C/circuits.test -test.run - -test.bench 'SolvesAhead' -test.benchtime 5x > $R/solves-ahead.txt 2>&1)
  say "circuits.test bench SolvesAhead 2^22: $?"; grep -E "^Benchmark" $R/solves-ahead.txt >> $OUT/summary.txt
fi
for f in $R/*.err; do grep -v "WRN\|INF\|verifier done\|streamed msm" $f | gzip > $f.gz; rm $f; done
gzip $R/tr-*/*.json 2>/dev/null; tar czf $OUT/r2.tgz -C $R .
cat $OUT/summary.txt
