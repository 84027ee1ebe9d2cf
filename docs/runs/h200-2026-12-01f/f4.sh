set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/f4; mkdir -p $R/tr-ps4m-jobs16
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libmain.so cuda.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16)"
(cd cuda && CUZK_REQUIRE_GPU=1 timeout 100 $OLDPWD/$C/cuda.test -test.v -test.count=1 -test.run 'TestNTT' > $R/cuda-ntt-test.log 2>&1); say "cuda NTT tests: $? $(grep -c -- '--- PASS' $R/cuda-ntt-test.log) passed $(grep -c -- '--- FAIL' $R/cuda-ntt-test.log) failed"; grep -- '--- FAIL' $R/cuda-ntt-test.log | head >> $OUT/summary.txt
for g in 9 12; do
 CUZK_NTT_GROUP_BITS=$g timeout 25 $K bench ntt --backend gpu --log-sizes 22,24 --runs 9 --cpu-runs 0 > $R/ntt-g$g.txt 2>&1; say "ntt group bits $g: $? $(grep -E '2\^2[24]' $R/ntt-g$g.txt | tr -s ' ' | tr '\n' ';')"
done
CUZK_PROFILE=1 CUZK_NTT_GROUP_BITS=12 timeout 15 $K bench ntt --backend gpu --log-sizes 24 --runs 1 --cpu-runs 0 > $R/ntt-g12-profile.txt 2>&1
CUZK_PROFILE=1 timeout 15 $K bench ntt --backend gpu --log-sizes 24 --runs 1 --cpu-runs 0 > $R/ntt-g9-profile.txt 2>&1
$K setup --circuit porep-sha --constraints 4M --keys /tmp/kp --keygen gpu > $R/setup-ps4m.log 2>&1; say "setup porep-sha 4M: $? $(tail -1 $R/setup-ps4m.log)"
timeout $(left 250) $K bench prove --backend gpu --circuit porep-sha --sizes 4M --keys /tmp/kp --workers 3 --vram-limits 0 --designs budget,split --gnark-runs 0 --partition-runs 0 --jobs 16 --trace-dir $R/tr-ps4m-jobs16 > $R/bench-ps4m-jobs16.txt 2> $R/bench-ps4m-jobs16.err; say "bench porep-sha 4M jobs 16: $?"; grep -A3 "^  design" $R/bench-ps4m-jobs16.txt | head -3 >> $OUT/summary.txt
[ $(left 280) -gt 15 ] && { timeout $(left 285) $K bench prove --backend gpu --circuit porep-sha --sizes 4M --keys /tmp/kp --workers 3 --vram-limits 0 --designs split,budget --gnark-runs 0 --partition-runs 0 --jobs 1 > $R/bench-ps4m-jobs1.txt 2> $R/bench-ps4m-jobs1.err; say "bench porep-sha 4M jobs 1: $?"; grep -A3 "^  design" $R/bench-ps4m-jobs1.txt | head -3 >> $OUT/summary.txt; }
find $R -name "*.json" -exec gzip {} \; ; gzip $R/*.log 2>/dev/null; tar czf $OUT/f4.tgz -C $R .
cat $OUT/summary.txt
