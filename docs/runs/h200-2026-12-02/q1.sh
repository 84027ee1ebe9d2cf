set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/q1; mkdir -p $R/tr-ps24 $R/tr-ps-busy
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libmain.so cuda.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16); nproc $(nproc); $(free -g | grep Mem); $(nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader)"
(cd cuda && CUZK_REQUIRE_GPU=1 timeout 90 $OLDPWD/$C/cuda.test -test.v -test.count=1 -test.run 'Table' > $R/cuda-table.log 2>&1); say "cuda Table tests: $? $(grep -c -- '--- PASS' $R/cuda-table.log) passed $(grep -c -- '--- FAIL' $R/cuda-table.log) failed $(grep -c -- '--- SKIP' $R/cuda-table.log) skipped"; grep -E -- '--- (PASS|FAIL|SKIP)' $R/cuda-table.log >> $OUT/summary.txt
# calibration at 2^24: one worker, budget and split, whole card and 16 GiB (keys made in this process)
timeout 200 /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 16M --keys memory --designs budget,split --workers 1 --vram-limits 0,16GiB --gnark-runs 0 --partition-runs 3 --trace-dir $R/tr-ps24 > $R/bench-ps24-w1.txt 2> $R/bench-ps24-w1.err; say "bench porep-sha 16M w1: $?"
grep -E "stamped|msg=compiled|keygen stage|layout" $R/bench-ps24-w1.err | cut -c1-300 >> $OUT/summary.txt; grep "^bench: " $R/bench-ps24-w1.err >> $OUT/summary.txt; cat $R/bench-ps24-w1.txt >> $OUT/summary.txt
grep -E "Maximum resident|Elapsed" $R/bench-ps24-w1.err >> $OUT/summary.txt
# issue 14's first goal: porep-sha 10-partition jobs at 2^20 and 2^22, GPU busy with the solver's parts, and without them at 2^22
timeout $(left 430) $K bench prove --backend gpu --circuit porep-sha --sizes 1M,4M --keys memory --designs budget,split-first,split --workers 3 --vram-limits 0 --gnark-runs 0 --partition-runs 3 --trace-dir $R/tr-ps-busy > $R/bench-ps-busy.txt 2> $R/bench-ps-busy.err; say "bench porep-sha 1M,4M w3 card: $?"; grep "^bench: " $R/bench-ps-busy.err >> $OUT/summary.txt; cat $R/bench-ps-busy.txt >> $OUT/summary.txt
CUZK_SOLVE_PARTS=off timeout $(left 520) $K bench prove --backend gpu --circuit porep-sha --sizes 4M --keys memory --designs budget,split --workers 3 --vram-limits 0 --gnark-runs 0 --partition-runs 3 > $R/bench-ps-busy-noparts.txt 2> $R/bench-ps-busy-noparts.err; say "bench porep-sha 4M w3 card, parts off: $?"; grep "^bench: " $R/bench-ps-busy-noparts.err >> $OUT/summary.txt; cat $R/bench-ps-busy-noparts.txt >> $OUT/summary.txt
gzip $R/tr-*/*.json $R/*.err $R/*.log 2>/dev/null; tar czf $OUT/q1.tgz -C $R .
cat $OUT/summary.txt
