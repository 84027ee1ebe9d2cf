# Fifth call: the gpuprove suite at the traces' copied bytes (gpuprove/device.go changed), then
# porep-sha 2^22 with one worker (every partition staged alone) and with three, traces kept, for
# sim calibrate to read the copies' real bytes.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r5; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libcuzkgpu.so gpuprove.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1)"
(cd gpuprove && CUZK_REQUIRE_GPU=1 timeout 200 ../$C/gpuprove.test -test.v > $R/gpuprove-test.txt 2>&1)
say "gpuprove.test: $? ($(grep -c -- '--- PASS' $R/gpuprove-test.txt) passed, $(grep -c -- '--- FAIL' $R/gpuprove-test.txt) failed)"
grep -E -- "--- FAIL|^(FAIL|ok|PASS)" $R/gpuprove-test.txt | head -20 >> $OUT/summary.txt
timeout 150 $K bench prove --backend gpu --circuit porep-sha --sizes 4M --keys memory --designs budget --workers 1,3 --jobs 1 --vram-limits 0 --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr > $R/bench.txt 2> $R/bench.err
say "porep-sha 4M budget w1,3 card: $?"; grep -E "^circuit|^ +(design|budget)" $R/bench.txt >> $OUT/summary.txt
for f in $R/tr/*.json; do echo "$(basename $f): copy_in events $(grep -o '"copy_in"' $f | wc -l), with copied $(grep -o '"copied":[0-9]*' $f | sort | uniq -c | tr '\n' ' ')" >> $OUT/summary.txt; done
grep -v "WRN\|INF\|verifier done\|streamed msm" $R/bench.err | gzip > $R/bench.err.gz; rm $R/bench.err
gzip $R/tr/*.json $R/gpuprove-test.txt 2>/dev/null; tar czf $OUT/r5.tgz -C $R .
cat $OUT/summary.txt
