# Second call: the GPU tests of the compute order changed after r1 (b_g2's G2 MSM beside Z's
# MSM with the A and B wires one vector; the limit the ballast leaves), then the 2^24
# calibration runs in 2^27's plan again (one worker, one partition on the host), copies in
# order and ahead, to predict 2^27 from.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r2; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk gpuprove.test libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16); $(free -g | grep Mem)"
(cd gpuprove && CUZK_REQUIRE_GPU=1 timeout 150 $OLDPWD/$C/gpuprove.test -test.v -test.count=1 -test.run 'GPUComputeEqualsCPU|DeviceOpsAndLimit|PoRepSHAPlans' > $R/gpuprove-test.log 2>&1); say "gpuprove tests: $? $(grep -c -- '--- PASS' $R/gpuprove-test.log) passed $(grep -c -- '--- FAIL' $R/gpuprove-test.log) failed $(grep -c -- '--- SKIP' $R/gpuprove-test.log) skipped"
grep -E -- '--- (FAIL|SKIP|PASS)|^(FAIL|ok|panic)|mem info' $R/gpuprove-test.log | head -40 >> $OUT/summary.txt
for ca in off on; do
  fl=""; [ $ca = on ] && fl="--copies-ahead"
  timeout $(left 330) /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 16M --keys memory --designs budget --workers 1 --vram-limits 16GiB --key-tier pinned --chunk-points 2097152 --layout compact --ntt-in-place --host-mem-limit 6GiB --gnark-runs 0 --partition-runs 3 $fl --trace-dir $R/tr-ps24-ahead-$ca > $R/ps24-ahead-$ca.txt 2> $R/ps24-ahead-$ca.err; say "ps24 in 2^27's plan w1 16GiB gate 6GiB, copies ahead $ca: $?"
  grep -E "Maximum resident|Elapsed|rror|panic" $R/ps24-ahead-$ca.err | cut -c1-300 >> $OUT/summary.txt; grep -E "^circuit|^one partition|^wire|^ +(design|budget)" $R/ps24-ahead-$ca.txt >> $OUT/summary.txt
done
for f in $R/*.err; do grep -v "WRN\|INF\|verifier done\|streamed msm" $f | gzip > $f.gz; rm $f; done
gzip $R/tr-*/*.json $R/*.log 2>/dev/null; tar czf $OUT/r2.tgz -C $R .
cat $OUT/summary.txt
