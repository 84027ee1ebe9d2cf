# Third call: the whole gpuprove suite with CUZK_REQUIRE_GPU=1 at this round's GPU code, then
# one 10-partition porep-sha job at 2^20 and 2^22, three draws, with the replica tree built
# on every core (one core before: 5.6 ms of every job's head at 2^22).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r3; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so gpuprove.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1)"
(cd gpuprove && CUZK_REQUIRE_GPU=1 timeout 300 ../$C/gpuprove.test -test.v > $R/gpuprove-test.txt 2>&1)
say "gpuprove.test: $? ($(grep -c -- '--- PASS' $R/gpuprove-test.txt) passed, $(grep -c -- '--- FAIL' $R/gpuprove-test.txt) failed)"
grep -E -- "--- FAIL|^(FAIL|ok|PASS)" $R/gpuprove-test.txt | head -20 >> $OUT/summary.txt
for run in j1a j1b j1c; do
  [ $(left 590) -lt 45 ] && { say "skipped $run: time"; continue; }
  timeout $(left 585) $K bench prove --backend gpu --circuit porep-sha --sizes 1M,4M --keys memory --designs budget,split-first,split --workers 3 --jobs 1 --vram-limits 0 --gnark-runs 0 --partition-runs 1 --trace-dir $R/tr-$run > $R/$run.txt 2> $R/$run.err
  say "porep-sha 1M,4M w3 card, $run, jobs 1: $?"; grep -E "^circuit|^one partition|^ +(design|budget|split)" $R/$run.txt >> $OUT/summary.txt
done
for f in $R/*.err; do grep -v "WRN\|INF\|verifier done\|streamed msm" $f | gzip > $f.gz; rm $f; done
gzip $R/tr-*/*.json $R/gpuprove-test.txt 2>/dev/null; tar czf $OUT/r3.tgz -C $R .
cat $OUT/summary.txt
