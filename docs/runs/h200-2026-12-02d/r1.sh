# First call: the kernel library; the GPU tests of what last round changed without a card
# (cuda.NewDomain without host FFT tables; gpuprove's compact compute with the A and B wires
# copied once and the copies ahead, porep-sha among the circuits); then the 2^24 calibration
# run in 2^27's plan (one worker, one partition on the host) with the copies in order and ahead.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r1; mkdir -p $R/lib
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk cuda.test gpuprove.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
make cuda BUILD=$R/lib > $R/nvcc.log 2>&1; say "make cuda: $? $(/usr/local/cuda/bin/nvcc --version | tail -1)"
export CUZK_GPU_LIB=$R/lib/libcuzkgpu.so; gzip -c $CUZK_GPU_LIB > $OUT/libcuzkgpu.so.gz
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16); nproc $(nproc); $(free -g | grep Mem); $(nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader)"
(cd cuda && CUZK_REQUIRE_GPU=1 timeout 120 $OLDPWD/$C/cuda.test -test.v -test.count=1 -test.run 'Domain|NTT|Groth|Quotient|DeviceBasics|BorrowHost' > $R/cuda-test.log 2>&1); say "cuda tests: $? $(grep -c -- '--- PASS' $R/cuda-test.log) passed $(grep -c -- '--- FAIL' $R/cuda-test.log) failed $(grep -c -- '--- SKIP' $R/cuda-test.log) skipped"; grep -E -- '--- (FAIL|SKIP)|^(FAIL|ok|panic)' $R/cuda-test.log | head -20 >> $OUT/summary.txt
(cd gpuprove && CUZK_REQUIRE_GPU=1 timeout 200 $OLDPWD/$C/gpuprove.test -test.v -test.count=1 > $R/gpuprove-test.log 2>&1); say "gpuprove tests: $? $(grep -c -- '--- PASS' $R/gpuprove-test.log) passed $(grep -c -- '--- FAIL' $R/gpuprove-test.log) failed $(grep -c -- '--- SKIP' $R/gpuprove-test.log) skipped"
grep -E -- '--- (FAIL|SKIP)|^(FAIL|ok|panic)|compact-ahead|porep-sha' $R/gpuprove-test.log | head -40 >> $OUT/summary.txt
# 2^24 in 2^27's plan under 16 GiB (as runs/h200-2026-12-02c r1), copies in order and ahead
for ca in off on; do
  fl=""; [ $ca = on ] && fl="--copies-ahead"
  timeout $(left 570) /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 16M --keys memory --designs budget --workers 1 --vram-limits 16GiB --key-tier pinned --chunk-points 2097152 --layout compact --ntt-in-place --host-mem-limit 6GiB --gnark-runs 0 --partition-runs 3 $fl --trace-dir $R/tr-ps24-ahead-$ca > $R/ps24-ahead-$ca.txt 2> $R/ps24-ahead-$ca.err; say "ps24 in 2^27's plan w1 16GiB gate 6GiB, copies ahead $ca: $?"
  grep -v "verifier done\|WRN\|INF\|streamed msm" $R/ps24-ahead-$ca.err | grep -E "Maximum resident|Elapsed|rror|panic" | cut -c1-300 >> $OUT/summary.txt; grep -v "verifier done" $R/ps24-ahead-$ca.txt >> $OUT/summary.txt
done
for f in $R/*.err; do grep -v "WRN\|INF\|verifier done\|streamed msm" $f | gzip > $f.gz; rm $f; done
gzip $R/tr-*/*.json $R/*.log 2>/dev/null; tar czf $OUT/r1.tgz -C $R --exclude lib .
cat $OUT/summary.txt
