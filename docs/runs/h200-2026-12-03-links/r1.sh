# First call: porep-sha with linked chains (9285c65). The solve of one partition on 16
# cores, linked and unlinked; one 10-partition job at 2^20 and 2^22, two draws; four jobs
# at once; then the whole gpuprove suite with CUZK_REQUIRE_GPU=1 (8115433 has not run on
# the card).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r1; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so gpuprove.test circuits.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1)"
(cd circuits && CUZK_SOLVE_LOGS=20,22 CUZK_SOLVE_UNLINKED=1 timeout 150 ../$C/circuits.test -test.run - -test.bench 'SolvePoRepSHA' -test.benchtime 10x > $R/solve-bench.txt 2>&1)
say "circuits.test bench SolvePoRepSHA: $?"; grep -E "^Benchmark|constraints, compiled" $R/solve-bench.txt >> $OUT/summary.txt
for run in j1a j1b; do
  [ $(left 590) -lt 45 ] && { say "skipped $run: time"; continue; }
  timeout $(left 585) $K bench prove --backend gpu --circuit porep-sha --sizes 1M,4M --keys memory --designs budget,split-first,split --workers 3 --jobs 1 --vram-limits 0 --gnark-runs 0 --partition-runs 1 --trace-dir $R/tr-$run > $R/$run.txt 2> $R/$run.err
  say "porep-sha 1M,4M w3 card, $run, jobs 1: $?"; grep -E "^circuit|^one partition|^ +(design|budget|split)" $R/$run.txt >> $OUT/summary.txt
done
if [ $(left 590) -gt 60 ]; then
  timeout $(left 585) $K bench prove --backend gpu --circuit porep-sha --sizes 1M,4M --keys memory --designs budget,split-first,split --workers 3 --jobs 4 --vram-limits 0 --gnark-runs 0 --partition-runs 0 > $R/j4.txt 2> $R/j4.err
  say "porep-sha 1M,4M w3 card, jobs 4: $?"; grep -E "^circuit|^ +(design|budget|split)" $R/j4.txt >> $OUT/summary.txt
fi
if [ $(left 590) -gt 80 ]; then
  (cd gpuprove && CUZK_REQUIRE_GPU=1 timeout $(left 585) ../$C/gpuprove.test -test.v > $R/gpuprove-test.txt 2>&1)
  say "gpuprove.test: $? ($(grep -c -- '--- PASS' $R/gpuprove-test.txt) passed, $(grep -c -- '--- FAIL' $R/gpuprove-test.txt) failed)"
  grep -E -- "--- FAIL|^(FAIL|ok|PASS)" $R/gpuprove-test.txt | head -20 >> $OUT/summary.txt
fi
for f in $R/*.err; do grep -v "WRN\|INF\|verifier done\|streamed msm" $f | gzip > $f.gz; rm $f; done
gzip $R/tr-*/*.json $R/gpuprove-test.txt 2>/dev/null; tar czf $OUT/r1.tgz -C $R .
cat $OUT/summary.txt
