set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/f1; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libmain.so cuda.test gpuprove.test engine.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16); nproc $(nproc)"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,driver_version --format=csv > $R/nvidia-smi.csv 2>&1
for p in cuda gpuprove engine; do
 (cd $p && CUZK_REQUIRE_GPU=1 timeout 150 $OLDPWD/$C/$p.test -test.v -test.count=1 > $R/$p-test.log 2>&1); rc=$?
 say "$p tests: exit $rc, $(grep -c -- '--- PASS' $R/$p-test.log) passed $(grep -c -- '--- FAIL' $R/$p-test.log) failed $(grep -c -- '--- SKIP' $R/$p-test.log) skipped"; grep -- '--- FAIL' $R/$p-test.log | head >> $OUT/summary.txt
done
# contention F5/F6 calibration (~65 s)
[ $(left 540) -gt 70 ] && { CUZK=$K OUT=$R/calib FAMILIES="f5 f6" timeout $(left 540) bash gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1; say "calibration: $?"; }
# MSM knobs
for m in 0 3 1 2; do for r in 3 2; do [ $(left 470) -gt 12 ] || break
 CUZK_MSM_MUL=$m CUZK_MSM_REDUCE_BLOCKS=$r timeout 30 $K bench msm --backend gpu --log-sizes 20,22,24 --runs 5 --cpu-runs 0 > $R/msm-m$m-r$r.txt 2>&1; say "msm mul $m reduce $r: $? $(grep -E '2\^2[024]' $R/msm-m$m-r$r.txt | tr -s ' ' | tr '\n' ';')"
done; done
best=$(for f in $R/msm-m*-r*.txt; do awk -v f=$(basename $f .txt) '/2\^24 +G1 MSM/ {print $4, f}' $f; done | sort -n | head -1); say "best at 2^24: $best"
bm=$(echo "$best" | sed -E 's/.*msm-m([0-9])-r([0-9]).*/\1/'); br=$(echo "$best" | sed -E 's/.*msm-m([0-9])-r([0-9]).*/\2/'); case "$bm$br" in [0-3][23]) export CUZK_MSM_MUL=$bm CUZK_MSM_REDUCE_BLOCKS=$br;; esac; say "peer with CUZK_MSM_MUL=${CUZK_MSM_MUL:-} REDUCE=${CUZK_MSM_REDUCE_BLOCKS:-}"
mkdir -p build && cp $C/libmain.so build/libcuzkgpu.so
[ -x /usr/local/cuda/bin/nvcc ] || export NVCC=$(command -v nvcc)
[ $(left 570) -gt 70 ] && { CUZK=$K PEER_WORK=/tmp/pw timeout $(left 575) peer/run.sh .peer $R/peer > $R/peer.log 2>&1; say "peer: $?"; tail -15 $R/peer.log >> $OUT/summary.txt; }
find $R -name "*.json" -exec gzip {} \; ; gzip $R/*.log; tar czf $OUT/f1.tgz -C $R .
cat $OUT/summary.txt
