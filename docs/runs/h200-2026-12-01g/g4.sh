set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/g4; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libmain.so cuda.test; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16)"
# G1 window sweep: the model's window at each size and its neighbours
for g in "12,14:8,9,10,11,12,13" "16,18:11,12,13,14,15,16" "20,21:14,15,16,17,18" "22,23:16,17,18,19,20" "24,25:18,19,20,21,22"; do [ $(left 120) -gt 5 ] || break
 sz=${g%%:*}; ws=${g##*:}; f=$R/msm-w-${sz//,/-}.txt
 timeout $(left 125) $K bench msm --backend gpu --log-sizes $sz --windows $ws --runs 5 --cpu-runs 0 > $f 2>&1; say "sweep $sz: $?"
done
cat $R/msm-w-*.txt | awk '$1 ~ /^2\^/ && $0 ~ /c=/ {L=substr($1,3); for(i=1;i<=NF;i++) if ($i ~ /^c=/) {c=substr($i,3); m=$(i+1)}; print L, c, m}' | sort -k1,1n -k3,3n > $R/sweep.txt
cat $R/msm-w-*.txt | awk '$1 ~ /^2\^/ && $0 !~ /c=/ && $0 ~ /G1 MSM/ {print "chosen", $1, $4}' >> $OUT/summary.txt
T=$(awk '!($1 in b) {b[$1]=$2; m[$1]=$3} END {for (L in b) printf "%s:%s,", L, b[L]}' $R/sweep.txt | sed 's/,$//'); say "best windows: $T"
awk '!($1 in b) {b[$1]=$2; print "best", $0}' $R/sweep.txt >> $OUT/summary.txt
export CUZK_MSM_WINDOWS=$T
mkdir -p build && cp $C/libmain.so build/libcuzkgpu.so; [ -x /usr/local/cuda/bin/nvcc ] || export NVCC=$(command -v nvcc)
[ $(left 200) -gt 55 ] && { CUZK=$K PEER_WORK=/tmp/pw timeout $(left 205) peer/run.sh .peer $R/peer > $R/peer.log 2>&1; say "peer (CUZK_MSM_WINDOWS=$T): $?"; tail -9 $R/peer.log >> $OUT/summary.txt; }
[ $(left 270) -gt 20 ] && { (cd cuda && CUZK_REQUIRE_GPU=1 timeout $(left 272) $OLDPWD/$C/cuda.test -test.v -test.count=1 -test.run 'TestMSM' > $R/cuda-msm-test.log 2>&1); say "cuda MSM tests (CUZK_MSM_WINDOWS=$T): $? $(grep -c -- '--- PASS' $R/cuda-msm-test.log) passed $(grep -c -- '--- FAIL' $R/cuda-msm-test.log) failed"; grep -- '--- FAIL' $R/cuda-msm-test.log | head >> $OUT/summary.txt; }
gzip $R/*.log 2>/dev/null; tar czf $OUT/g4.tgz -C $R .
cat $OUT/summary.txt
