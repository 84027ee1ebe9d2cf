set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/g1; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libmain.so cuda.test gpuprove.test engine.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16); nproc $(nproc)"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,driver_version --format=csv > $R/nvidia-smi.csv 2>&1
for p in cuda gpuprove engine; do
 (cd $p && CUZK_REQUIRE_GPU=1 timeout 170 $OLDPWD/$C/$p.test -test.v -test.count=1 > $R/$p-test.log 2>&1); rc=$?
 say "$p tests: exit $rc, $(grep -c -- '--- PASS' $R/$p-test.log) passed $(grep -c -- '--- FAIL' $R/$p-test.log) failed $(grep -c -- '--- SKIP' $R/$p-test.log) skipped"; grep -- '--- FAIL' $R/$p-test.log | head >> $OUT/summary.txt
done
grep "G2MSM 2^20" $R/cuda-test.log | sed 's/^ *//' >> $OUT/summary.txt
g2=$(grep "G2MSM 2^20 CUZK_MSM_G2_MUL=" $R/cuda-test.log | sed -E 's/.*G2_MUL=([0-9]): gpu ([0-9.]+) ms.*/\2 \1/' | sort -n | head -1 | cut -d' ' -f2); say "G2 best: ${g2:-none}"
# NTT: the radix-8 kernel's look-ahead and group splits at 2^24
for a in 0 1 2 3; do for sp in "" "9,9,6" "6,9,9" "9,6,9" "7,8,9"; do [ $(left 330) -gt 5 ] || break
 f=$R/ntt-a$a-s${sp//,/}.txt; CUZK_NTT_AHEAD=$a CUZK_NTT_SPLIT=$sp timeout 20 $K bench ntt --backend gpu --log-sizes 24 --runs 15 --cpu-runs 0 > $f 2>&1
 echo "$(awk '/2\^24 +NTT forward/ {print $4}' $f) $(awk '/2\^24 +NTT inverse coset/ {print $5}' $f) a=$a s=$sp" >> $R/ntt-sweep.txt
done; done
sort -n $R/ntt-sweep.txt | head -6 >> $OUT/summary.txt; grep " a=0 s=$" $R/ntt-sweep.txt | sed 's/^/default: /' >> $OUT/summary.txt
best=$(sort -n $R/ntt-sweep.txt | head -1); na=$(echo "$best" | sed -E 's/.*a=([0-3]).*/\1/'); ns=$(echo "$best" | sed -E 's/.* s=(.*)$/\1/'); say "NTT best: $best"
for a in 0 $na; do CUZK_PROFILE=1 CUZK_NTT_AHEAD=$a CUZK_NTT_SPLIT=$ns timeout 15 $K bench ntt --backend gpu --log-sizes 24 --runs 3 --cpu-runs 0 > $R/ntt-profile-a$a.txt 2>&1; done
CUZK_NTT_AHEAD=$na CUZK_NTT_SPLIT=$ns timeout 20 $K bench ntt --backend gpu --log-sizes 20,22,24 --runs 9 --cpu-runs 0 > $R/ntt-best-sizes.txt 2>&1
export CUZK_MSM_G2_MUL=${g2:-0} CUZK_NTT_AHEAD=$na CUZK_NTT_SPLIT=$ns; say "from here: G2_MUL=$CUZK_MSM_G2_MUL NTT_AHEAD=$na NTT_SPLIT=$ns"
mkdir -p build && cp $C/libmain.so build/libcuzkgpu.so
[ -x /usr/local/cuda/bin/nvcc ] || export NVCC=$(command -v nvcc)
[ $(left 400) -gt 60 ] && { CUZK=$K PEER_WORK=/tmp/pw timeout $(left 420) peer/run.sh .peer $R/peer > $R/peer.log 2>&1; say "peer: $?"; tail -9 $R/peer.log >> $OUT/summary.txt; }
# issue 15: one-worker calibration at 2^24 under 16 GiB
if [ $(left 575) -gt 110 ]; then
 /usr/bin/time -v $K setup --circuit mimc --constraints 16M --keys /tmp/km --keygen gpu > $R/setup-m24.log 2>&1; say "setup mimc 16M: $? $(grep -h 'setup:' $R/setup-m24.log | tail -1); RSS $(grep 'Maximum resident' $R/setup-m24.log | awk '{print $6}') KB"
 $K prove --circuit mimc --constraints 16M --keys /tmp/km --backend gpu --vram-limit 16GiB --layout compact --plan > $R/plan-m24-16g.txt 2>&1
 timeout $(left 585) $K bench prove --backend gpu --circuit mimc --sizes 16M --keys /tmp/km --workers 1 --vram-limits 16GiB --layout compact --designs budget --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-m24-16g-w1 > $R/bench-m24-16g-w1.txt 2> $R/bench-m24-16g-w1.err; say "bench mimc 16M w1: $?"; grep -A1 "^  design" $R/bench-m24-16g-w1.txt >> $OUT/summary.txt
fi
find $R -name "*.json" -exec gzip {} \; ; gzip $R/*.log 2>/dev/null; tar czf $OUT/g1.tgz -C $R .
cat $OUT/summary.txt
