# Sixth call: the gpuprove tests at the session's last code (the copies ahead the default,
# "compact" now the order of --copies-in-order), and make run's job on the GPU.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r6; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk gpuprove.test libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16)"
(cd gpuprove && CUZK_REQUIRE_GPU=1 timeout 150 $OLDPWD/$C/gpuprove.test -test.v -test.count=1 > $R/gpuprove-test.log 2>&1); say "gpuprove tests: $? $(grep -c -- '--- PASS' $R/gpuprove-test.log) passed $(grep -c -- '--- FAIL' $R/gpuprove-test.log) failed $(grep -c -- '--- SKIP' $R/gpuprove-test.log) skipped"
grep -E -- '--- (FAIL|SKIP)|^(FAIL|ok|panic)|compact' $R/gpuprove-test.log | grep -v "=== RUN" | head -20 >> $OUT/summary.txt
timeout 60 $K prove --circuit porep --partitions 4 --backend auto --keys $R/keys --setup-if-missing --out $R/proofs --store $R/store > $R/run.txt 2>&1; say "make run's job: $?"; tail -n 12 $R/run.txt >> $OUT/summary.txt
gzip $R/*.log; tar czf $OUT/r6.tgz -C $R gpuprove-test.log.gz run.txt
cat $OUT/summary.txt
