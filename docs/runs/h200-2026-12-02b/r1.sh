# First call: the kernel library, the cuda tests that cover borrowed pinned memory,
# F9's one-worker calibration, 2^24 in 2^26's 16 GiB plan (one worker), the cores in
# the partitions' order (lanes) against even sharing at 2^20/2^22, and cuzk prove
# holding its keys once.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r1; mkdir -p $R/lib
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk cuda.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
make cuda BUILD=$R/lib > $R/nvcc.log 2>&1; say "make cuda: $? $(/usr/local/cuda/bin/nvcc --version | tail -1)"
export CUZK_GPU_LIB=$R/lib/libcuzkgpu.so; cp $CUZK_GPU_LIB $OUT/ 2>/dev/null
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16); nproc $(nproc); $(free -g | grep Mem); $(nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader)"
(cd cuda && CUZK_REQUIRE_GPU=1 timeout 90 $OLDPWD/$C/cuda.test -test.v -test.count=1 -test.run 'BorrowHost|DeviceBasics|Table' > $R/cuda-test.log 2>&1); say "cuda tests: $? $(grep -c -- '--- PASS' $R/cuda-test.log) passed $(grep -c -- '--- FAIL' $R/cuda-test.log) failed $(grep -c -- '--- SKIP' $R/cuda-test.log) skipped"; grep -E -- '--- (FAIL|SKIP)|BorrowHost' $R/cuda-test.log >> $OUT/summary.txt
# F9: a family no profile has seen; its one-worker runs only
CUZK=$K OUT=$R/calibration FAMILIES=f9 timeout 150 gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1; say "calibration f9: $?"; tail -n 4 $R/calibration/*.txt >> $OUT/summary.txt
# 2^24 in 2^26's plan under 16 GiB (points pinned and streamed in 4M chunks, compact partitions, NTTs in place), three partitions on the host as at 2^26
timeout 200 /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 16M --keys memory --designs budget,split --workers 1 --vram-limits 16GiB --key-tier pinned --chunk-points 4M --layout compact --ntt-in-place --host-mem-limit 14GiB --gnark-runs 0 --partition-runs 3 --trace-dir $R/tr-ps24-plan26 > $R/ps24-plan26.txt 2> $R/ps24-plan26.err; say "ps24 in 2^26's plan w1 16GiB: $?"
grep -v "verifier done\|WRN\|INF\|streamed msm" $R/ps24-plan26.err | grep -E -A8 "^bench: |layout|Maximum resident|Elapsed|rror|panic" | cut -c1-300 >> $OUT/summary.txt; grep -v "verifier done" $R/ps24-plan26.txt >> $OUT/summary.txt
# the cores in the partitions' order: lanes (default) and even sharing, one job and a stream of four
for lanes in on off; do for jobs in 1 4; do
  CUZK_CPU_LANES=$lanes timeout $(left 560) $K bench prove --backend gpu --circuit porep-sha --sizes 1M,4M --keys memory --designs budget,split-first,split --workers 3 --jobs $jobs --vram-limits 0 --gnark-runs 0 --partition-runs 1 --trace-dir $R/tr-lanes-$lanes-j$jobs > $R/lanes-$lanes-j$jobs.txt 2> $R/lanes-$lanes-j$jobs.err
  say "porep-sha 1M,4M w3 card, lanes $lanes, jobs $jobs: $?"; grep "^bench: [a-z]" $R/lanes-$lanes-j$jobs.err | grep -i "partition\|synth" | head -4 >> $OUT/summary.txt; grep -v "verifier done" $R/lanes-$lanes-j$jobs.txt >> $OUT/summary.txt
done; done
# cuzk prove holds its keys once (c652c67): setup to disk, then prove on the GPU with the points pinned
if [ $(left 560) -gt 60 ]; then
  timeout $(left 590) /usr/bin/time -v $K prove --circuit porep-sha --constraints 4M --partitions 10 --backend gpu --key-tier pinned --vram-limit 16GiB --keys $R/k4 --setup-if-missing --out $R/p4 --store $R/s4 > $R/prove4m.txt 2> $R/prove4m.err; say "cuzk prove porep-sha 4M gpu pinned: $?"
  tail -n 25 $R/prove4m.txt >> $OUT/summary.txt; grep -E "Maximum resident|Elapsed|rror|panic" $R/prove4m.err >> $OUT/summary.txt
fi
rm -rf $R/k4 $R/p4 $R/s4
gzip $R/tr-*/*.json $R/*.err $R/*.log $R/calibration/*.err $R/calibration/*/*.json 2>/dev/null; tar czf $OUT/r1.tgz -C $R --exclude lib .
cat $OUT/summary.txt
