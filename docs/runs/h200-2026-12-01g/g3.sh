set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/g3; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libmain.so cuda.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16)"
env | grep CUZK_ | sort >> $OUT/summary.txt
(cd cuda && CUZK_REQUIRE_GPU=1 timeout 150 $OLDPWD/$C/cuda.test -test.v -test.count=1 -test.run 'NTT|G2|Scratch|Model' > $R/cuda-ntt-g2-test.log 2>&1); say "cuda NTT/G2 tests: $? $(grep -c -- '--- PASS' $R/cuda-ntt-g2-test.log) passed $(grep -c -- '--- FAIL' $R/cuda-ntt-g2-test.log) failed $(grep -c -- '--- SKIP' $R/cuda-ntt-g2-test.log) skipped"; grep -- '--- FAIL' $R/cuda-ntt-g2-test.log | head >> $OUT/summary.txt; grep "G2MSM 2^20" $R/cuda-ntt-g2-test.log | sed 's/^ *//' >> $OUT/summary.txt
timeout 20 $K bench ntt --backend gpu --log-sizes 20,22,24,25 --runs 9 --cpu-runs 0 > $R/ntt-defaults.txt 2>&1; grep "NTT" $R/ntt-defaults.txt >> $OUT/summary.txt
mkdir -p build && cp $C/libmain.so build/libcuzkgpu.so; [ -x /usr/local/cuda/bin/nvcc ] || export NVCC=$(command -v nvcc)
CUZK=$K PEER_WORK=/tmp/pw timeout 120 peer/run.sh .peer $R/peer > $R/peer.log 2>&1; say "peer (defaults): $?"; tail -9 $R/peer.log >> $OUT/summary.txt
# issue 15: mimc 2^25 under 16 GiB, 3 workers, every design (predictions committed: docs/predictions/h200-mimc32m-16g-g-predicted.txt)
/usr/bin/time -v $K setup --circuit mimc --constraints 32M --keys /tmp/km --keygen gpu > $R/setup-m25.log 2>&1; say "setup mimc 32M: $? $(grep -h 'setup:' $R/setup-m25.log | tail -1); RSS $(grep 'Maximum resident' $R/setup-m25.log | awk '{print $6}') KB"
mkdir -p $R/tr-m25-16g-w3
timeout $(left 585) $K bench prove --backend gpu --circuit mimc --sizes 32M --keys /tmp/km --workers 3 --vram-limits 16GiB --layout compact --designs single,split-first,split-devsync,split,budget --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-m25-16g-w3 > $R/bench-m25-16g-w3.txt 2> $R/bench-m25-16g-w3.err; say "bench mimc 32M 16 GiB w3: $?"; grep "^bench:" $R/bench-m25-16g-w3.err >> $OUT/summary.txt
find $R -name "*.json" -exec gzip {} \; ; gzip $R/*.log 2>/dev/null; tar czf $OUT/g3.tgz -C $R .
cat $OUT/summary.txt
