# Fourth call: the whole gpuprove suite at the stage refactor (stageCopies), then whether mimc and
# sha keep their figures with this round's host-side changes (the hold, the yields): one
# 10-partition job, three workers, whole card, default against CUZK_CPU_HOLD=off (and, for
# mimc, CUZK_CPU_LANES=off: no lanes, no hold).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r4; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so gpuprove.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1)"
(cd gpuprove && CUZK_REQUIRE_GPU=1 timeout 200 ../$C/gpuprove.test -test.v > $R/gpuprove-test.txt 2>&1)
say "gpuprove.test: $? ($(grep -c -- '--- PASS' $R/gpuprove-test.txt) passed, $(grep -c -- '--- FAIL' $R/gpuprove-test.txt) failed)"
grep -E -- "--- FAIL|^(FAIL|ok|PASS)" $R/gpuprove-test.txt | head -20 >> $OUT/summary.txt
for run in mimc-default mimc-holdoff mimc-lanesoff sha-default sha-holdoff mimc-default2 sha-default2; do
  [ $(left 580) -lt 50 ] && { say "skipped $run: time"; continue; }
  circ=${run%%-*}; sizes=1M; designs=budget,split,single; [ $circ = mimc ] && { sizes=1M,4M; designs=budget,split; }
  env=(); case $run in *holdoff) env=(CUZK_CPU_HOLD=off);; *lanesoff) env=(CUZK_CPU_LANES=off);; esac
  env "${env[@]}" timeout $(left 585) $K bench prove --backend gpu --circuit $circ --sizes $sizes --keys memory --designs $designs --workers 3 --jobs 1 --vram-limits 0 --gnark-runs 0 --partition-runs 1 --trace-dir $R/tr-$run > $R/$run.txt 2> $R/$run.err
  say "$circ $sizes w3 card, $run (${env[*]:-default}): $?"; grep -E "^circuit|^one partition|^ +(design|budget|split|single)" $R/$run.txt >> $OUT/summary.txt
done
for f in $R/*.err; do grep -v "WRN\|INF\|verifier done\|streamed msm" $f | gzip > $f.gz; rm $f; done
gzip $R/tr-*/*.json $R/gpuprove-test.txt 2>/dev/null; tar czf $OUT/r4.tgz -C $R .
cat $OUT/summary.txt
