set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/h3; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libmain.so cuda.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16)"
(cd cuda && CUZK_REQUIRE_GPU=1 timeout 100 $OLDPWD/$C/cuda.test -test.v -test.count=1 -test.run 'Table' > $R/cuda-table-test.log 2>&1); rc=$?
say "cuda table tests: exit $rc, $(grep -c -- '--- PASS' $R/cuda-table-test.log) passed $(grep -c -- '--- FAIL' $R/cuda-table-test.log) failed"
# the calibration of the fresh family f7, and F6's ballast run (for F6's grid of round f, in sample)
CUZK=$K OUT=$R/calibration FAMILIES=f7 timeout 300 gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1; say "calibration f7: $?"
. gpuprove/contention_families.sh; family f6
timeout 120 $K bench contention --backend gpu --vram-limit 16GiB --workers 1 --trace-dir $R/calibration/traces-f6-ballast $COSTS $MEM --designs split > $R/calibration/traces-f6-ballast.txt 2> $R/calibration/traces-f6-ballast.err; say "f6 ballast: $?"
tail -3 $R/calibration/*.txt >> $OUT/summary.txt
gzip $R/*.log 2>/dev/null; tar czf $OUT/h3.tgz -C $R .
cat $OUT/summary.txt
