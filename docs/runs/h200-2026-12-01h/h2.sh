set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/h2; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libmain.so cuda.test gpuprove.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16)"
# 1. the tests: tables in the prover (auto by default), and the table kernels' tests as fixed
for p in gpuprove cuda; do
 run=''; [ $p = cuda ] && run='-test.run Table'
 (cd $p && CUZK_REQUIRE_GPU=1 timeout 150 $OLDPWD/$C/$p.test -test.v -test.count=1 $run > $R/$p-test.log 2>&1); rc=$?
 say "$p tests: exit $rc, $(grep -c -- '--- PASS' $R/$p-test.log) passed $(grep -c -- '--- FAIL' $R/$p-test.log) failed $(grep -c -- '--- SKIP' $R/$p-test.log) skipped"; grep -- '--- FAIL\|_test.go:.*differ\|panic' $R/$p-test.log | head >> $OUT/summary.txt
done
grep "device 0 holds" $R/gpuprove-test.log | head -3 | sed 's/^ *//' >> $OUT/summary.txt
# 2. proving on the whole card with and without tables
for sz in 4M 16M; do [ $(left 420) -gt 60 ] || break
 timeout $(left 430) $K setup --circuit mimc --constraints $sz --keys /tmp/k$sz --keygen gpu > $R/setup-$sz.txt 2>&1; say "setup $sz: $?"
 w=1,3; pr=5; [ $sz = 16M ] && { w=3; pr=3; }
 for t in auto off; do [ $(left 430) -gt 40 ] || break
  timeout $(left 435) $K bench prove --backend gpu --circuit mimc --sizes $sz --keys /tmp/k$sz --workers $w --vram-limits 0 --designs budget --gnark-runs 0 --partition-runs $pr --msm-tables $t > $R/prove-$sz-$t.txt 2> $R/prove-$sz-$t.err; say "prove $sz tables $t: $?"
  grep "one partition on the GPU" $R/prove-$sz-$t.txt >> $OUT/summary.txt; grep "^ *budget" $R/prove-$sz-$t.txt >> $OUT/summary.txt; grep "MSM tables" $R/prove-$sz-$t.err | head -2 >> $OUT/summary.txt
 done
 rm -rf /tmp/k$sz
done
# 3. the peer, with table rows
mkdir -p build && cp $C/libmain.so build/libcuzkgpu.so; [ -x /usr/local/cuda/bin/nvcc ] || export NVCC=$(command -v nvcc)
[ $(left 585) -gt 75 ] && { PEER_ARGS=--g1-tables CUZK=$K PEER_WORK=/tmp/pw timeout $(left 588) peer/run.sh .peer $R/peer > $R/peer.log 2>&1; say "peer: $?"; tail -12 $R/peer.log >> $OUT/summary.txt; }
gzip $R/*.log $R/*.err 2>/dev/null; tar czf $OUT/h2.tgz -C $R .
cat $OUT/summary.txt
