# Sixth call: the gpuprove suite at the last change to gpuprove (copyVectors).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r6; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in libcuzkgpu.so gpuprove.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "gpuprove.test of $(git log -1 --format=%h 2>/dev/null || echo the carried build)"
(cd gpuprove && CUZK_REQUIRE_GPU=1 timeout 150 ../$C/gpuprove.test -test.v > $R/gpuprove-test.txt 2>&1)
say "gpuprove.test: $? ($(grep -c -- '--- PASS' $R/gpuprove-test.txt) passed, $(grep -c -- '--- FAIL' $R/gpuprove-test.txt) failed)"
grep -E -- "--- FAIL|^(FAIL|ok|PASS)" $R/gpuprove-test.txt | head -20 >> $OUT/summary.txt
gzip $R/gpuprove-test.txt; cp $R/gpuprove-test.txt.gz $OUT/
cat $OUT/summary.txt
