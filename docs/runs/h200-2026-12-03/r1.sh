# First call: e0e633e (a chunk's Yield lets goroutines outside the pool run; a whole-layout
# partition staged while the device computes nothing copies a alone). GPU tests of the
# staged-alone path, then one 10-partition porep-sha job at 2^20 and 2^22 (three workers,
# whole card): default, CUZK_COPIES_AHEAD=off (the whole stage), CUZK_CPU_HOLD_READY=2 and
# CUZK_CPU_HOLD=off, alternated, and a stream of four. The kernel library is carried
# (cuda/ unchanged since it was built).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r1; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so gpuprove.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1)"
(cd gpuprove && CUZK_REQUIRE_GPU=1 timeout 200 ../$C/gpuprove.test -test.run 'GPUComputeEqualsCPU|ProveOnGPUUnderEachDesign|DeviceOpsAndLimit' -test.v > $R/gpuprove-test.txt 2>&1)
say "gpuprove.test: $? ($(grep -c -- '--- PASS' $R/gpuprove-test.txt) passed, $(grep -c -- '--- FAIL' $R/gpuprove-test.txt) failed)"
grep -E -- "--- (PASS|FAIL)|staged with a alone" $R/gpuprove-test.txt | head -40 >> $OUT/summary.txt
for run in new-j1a inorder-j1a ready2-j1a off-j1a new-j1b inorder-j1b new-j4; do
  [ $(left 590) -lt 50 ] && { say "skipped $run: time"; continue; }
  jobs=1; case $run in *j4) jobs=4;; esac
  env=(); case $run in inorder*) env=(CUZK_COPIES_AHEAD=off);; ready2*) env=(CUZK_CPU_HOLD_READY=2);; off*) env=(CUZK_CPU_HOLD=off);; esac
  env "${env[@]}" timeout $(left 585) $K bench prove --backend gpu --circuit porep-sha --sizes 1M,4M --keys memory --designs budget,split-first,split --workers 3 --jobs $jobs --vram-limits 0 --gnark-runs 0 --partition-runs 1 --trace-dir $R/tr-$run > $R/$run.txt 2> $R/$run.err
  say "porep-sha 1M,4M w3 card, $run (${env[*]:-default}), jobs $jobs: $?"; grep -E "^circuit|^ +(design|budget|split)" $R/$run.txt >> $OUT/summary.txt
done
for f in $R/*.err; do grep -v "WRN\|INF\|verifier done\|streamed msm" $f | gzip > $f.gz; rm $f; done
gzip $R/tr-*/*.json $R/gpuprove-test.txt 2>/dev/null; tar czf $OUT/r1.tgz -C $R .
cat $OUT/summary.txt
