# First call: the kernel library; the 2^26 and 2^27 plans under 16 GiB with the library's
# sizes; 2^24 in 2^27's plan (one worker, one partition on the host) to calibrate the 2^27
# prediction; 2^26 under 16 GiB with the keys held for the device (d529434: no domain
# tables, the system released during keygen, Z held once, the solve into pinned staging)
# against 116.5 GiB of peak RSS before; a one-worker 2^22 run on the card for the CPU model.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r1; mkdir -p $R/lib
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk gpuprove.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
make cuda BUILD=$R/lib > $R/nvcc.log 2>&1; say "make cuda: $? $(/usr/local/cuda/bin/nvcc --version | tail -1)"
export CUZK_GPU_LIB=$R/lib/libcuzkgpu.so; gzip -c $CUZK_GPU_LIB > $OUT/libcuzkgpu.so.gz
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16); nproc $(nproc); $(free -g | grep Mem); $(nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader)"
(cd gpuprove && CUZK_REQUIRE_GPU=1 timeout 60 $OLDPWD/$C/gpuprove.test -test.v -test.count=1 -test.run 'PoRepSHAPlans' > $R/plans.log 2>&1); say "plan tests: $?"; grep -v "^=== RUN" $R/plans.log | head -40 >> $OUT/summary.txt
CH=$(awk '/^ *plan_porep_test.go.*2\^27/{f=1} f && /streamed in chunks of/{for(i=1;i<=NF;i++) if($i=="of"&&$(i+1)~/^[0-9]+$/){print $(i+1); exit}}' $R/plans.log); CH=${CH:-2097152}; say "2^27 plan's chunk: $CH points"
# 2^24 in 2^27's plan under 16 GiB: points pinned and streamed in the 2^27 plan's chunks, compact, NTTs in place, one partition on the host (4.47 GiB each)
timeout 150 /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 16M --keys memory --designs budget --workers 1 --vram-limits 16GiB --key-tier pinned --chunk-points $CH --layout compact --ntt-in-place --host-mem-limit 6GiB --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-ps24-plan27 > $R/ps24-plan27.txt 2> $R/ps24-plan27.err; say "ps24 in 2^27's plan w1 16GiB gate 6GiB: $?"
grep -v "verifier done\|WRN\|INF\|streamed msm" $R/ps24-plan27.err | grep -E -A8 "^bench: |layout|Maximum resident|Elapsed|rror|panic" | cut -c1-300 >> $OUT/summary.txt; grep -v "verifier done" $R/ps24-plan27.txt >> $OUT/summary.txt
# 2^26 under 16 GiB, three partitions on the host as in runs/h200-2026-12-02b r2 (peak RSS 116.5 GiB then)
( while sleep 5; do echo "$(( $(date +%s)-t0 )) $(free -m | awk '/Mem/{print $3}') $(ps -o rss= -C cuzk | head -1)" >> $R/mem.txt; done ) & M=$!
GOMEMLIMIT=72GiB timeout $(left 520) /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 64M --keys memory --designs budget,split-first --workers 3 --vram-limits 16GiB --host-mem-limit 54GiB --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-ps26 > $R/bench-ps26.txt 2> $R/bench-ps26.err; say "bench porep-sha 64M w3 16GiB gate 54: $?"; kill $M
grep -v "verifier done\|WRN\|INF\|streamed msm" $R/bench-ps26.err | grep -E -A8 "^bench: |stamped|keygen stage=|Maximum resident|Elapsed|rror|panic" | cut -c1-300 >> $OUT/summary.txt; grep -v "verifier done" $R/bench-ps26.txt >> $OUT/summary.txt
echo "mem samples (s, used MiB, cuzk RSS KiB): max used $(sort -k2 -n $R/mem.txt | tail -1)" >> $OUT/summary.txt
# one worker at 2^22 on the whole card, one job: the CPU model's calibration at 2^22
if [ $(left 560) -gt 40 ]; then
  timeout $(left 590) $K bench prove --backend gpu --circuit porep-sha --sizes 4M --keys memory --designs budget --workers 1 --jobs 1 --vram-limits 0 --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-ps22-w1 > $R/ps22-w1.txt 2> $R/ps22-w1.err; say "porep-sha 4M w1 card: $?"; grep -v "verifier done" $R/ps22-w1.txt >> $OUT/summary.txt
fi
for f in $R/*.err; do grep -v "WRN\|INF\|verifier done\|streamed msm" $f | gzip > $f.gz; rm $f; done
gzip $R/tr-*/*.json $R/*.log 2>/dev/null; tar czf $OUT/r1.tgz -C $R --exclude lib .
cat $OUT/summary.txt
