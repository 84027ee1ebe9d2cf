set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/h1; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libmain.so cuda.test gpuprove.test engine.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader >> $OUT/summary.txt
# 1. the table tests first (new code), then the whole cuda suite
(cd cuda && CUZK_REQUIRE_GPU=1 timeout 100 $OLDPWD/$C/cuda.test -test.v -test.count=1 -test.run 'Table' > $R/cuda-table-test.log 2>&1); rc=$?
say "cuda table tests: exit $rc, $(grep -c -- '--- PASS' $R/cuda-table-test.log) passed $(grep -c -- '--- FAIL' $R/cuda-table-test.log) failed"; grep -- '--- FAIL\|panic\|_test.go' $R/cuda-table-test.log | head -20 >> $OUT/summary.txt
# 2. table sweep (G1), each result checked against the plain MSM (and gnark-crypto at 2^20)
for g in "20:1:0,0:18,0:19,0:20,0:21,2,4,8" "22:0:0,0:20,0:21,0:22,0:23,2,4" "24:0:0,0:21,0:22,0:23,2,3,6"; do [ $(left 330) -gt 10 ] || break
 sz=${g%%:*}; rest=${g#*:}; cr=${rest%%:*}; ts=${rest#*:}
 timeout $(left 335) $K bench msm --backend gpu --log-sizes $sz --tables $ts --runs 5 --cpu-runs $cr > $R/msm-t-$sz.txt 2>&1; say "tables 2^$sz: $?"; grep "^ *2^" $R/msm-t-$sz.txt >> $OUT/summary.txt
done
# 3. the whole suites with the final library
for p in cuda gpuprove engine; do [ $(left 520) -gt 40 ] || break
 (cd $p && CUZK_REQUIRE_GPU=1 timeout $(left 525) $OLDPWD/$C/$p.test -test.v -test.count=1 > $R/$p-test.log 2>&1); rc=$?
 say "$p tests: exit $rc, $(grep -c -- '--- PASS' $R/$p-test.log) passed $(grep -c -- '--- FAIL' $R/$p-test.log) failed $(grep -c -- '--- SKIP' $R/$p-test.log) skipped"; grep -- '--- FAIL' $R/$p-test.log | head >> $OUT/summary.txt
done
# 4. G2 windows at 2^20 (TestMSMG2Timing, each checked against gnark-crypto)
for w in 14 15 17 18; do W="16:$w,17:$w,18:$w,19:$w,20:$w"; [ $(left 575) -gt 15 ] || break
 (cd cuda && CUZK_MSM_WINDOWS=$W CUZK_REQUIRE_GPU=1 timeout $(left 578) $OLDPWD/$C/cuda.test -test.v -test.count=1 -test.run 'TestMSMG2Timing' > $R/g2-w$w.log 2>&1); say "G2 c=$w: $? $(grep 'G2_MUL=1' $R/g2-w$w.log | sed 's/^ *//')"
done
gzip $R/*.log 2>/dev/null; tar czf $OUT/h1.tgz -C $R .
cat $OUT/summary.txt
