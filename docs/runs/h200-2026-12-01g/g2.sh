set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/g2; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libmain.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16)"
# NTT at 2^24: tile bits x group split
for tb in 11 10 9; do for sp in "" "9,9,6" "9,6,9"; do
 f=$R/ntt-t$tb-s${sp//,/}.txt; CUZK_NTT_TILE_BITS=$tb CUZK_NTT_SPLIT=$sp timeout 20 $K bench ntt --backend gpu --log-sizes 24 --runs 15 --cpu-runs 0 > $f 2>&1
 echo "$(awk '/2\^24 +NTT forward/ {print $4}' $f) $(awk '/2\^24 +NTT inverse coset/ {print $5}' $f) t=$tb s=$sp" >> $R/ntt-tiles.txt
done; done
sort -n $R/ntt-tiles.txt >> $OUT/summary.txt
# the split rule at other sizes: balanced (default), groups of 9 first, the rest first
for L in 20 21 22 23 25 26; do r=$((L-18)); for sp in "" "9,9,$r" "$r,9,9"; do
 f=$R/ntt-L$L-s${sp//,/}.txt; CUZK_NTT_SPLIT=$sp timeout 20 $K bench ntt --backend gpu --log-sizes $L --runs 15 --cpu-runs 0 > $f 2>&1
 echo "2^$L $(awk '/NTT forward/ {print $4}' $f) $(awk '/NTT inverse coset/ {print $5}' $f) s=$sp" >> $R/ntt-sizes.txt
done; done
cat $R/ntt-sizes.txt >> $OUT/summary.txt
best=$(sort -n $R/ntt-tiles.txt | head -1); bt=$(echo "$best" | sed -E 's/.*t=([0-9]+).*/\1/'); bs=$(echo "$best" | sed -E 's/.* s=(.*)$/\1/'); say "NTT best at 2^24: $best"
if awk -v v="${best%% *}" 'BEGIN{exit !(v < 4.0)}' && [ "$bt" != 11 ]; then
 mkdir -p build && cp $C/libmain.so build/libcuzkgpu.so; [ -x /usr/local/cuda/bin/nvcc ] || export NVCC=$(command -v nvcc)
 CUZK_MSM_G2_MUL=1 CUZK_NTT_TILE_BITS=$bt CUZK_NTT_SPLIT=$bs CUZK=$K PEER_WORK=/tmp/pw timeout 120 peer/run.sh .peer $R/peer > $R/peer.log 2>&1; say "peer (tile bits $bt split $bs): $?"; tail -9 $R/peer.log >> $OUT/summary.txt
fi
# issue 15: mimc 2^24 under 16 GiB, 3 workers, every design (predictions committed: docs/predictions/h200-mimc16m-16g-g-predicted.txt)
export CUZK_MSM_G2_MUL=1 CUZK_NTT_SPLIT=9,9,6
/usr/bin/time -v $K setup --circuit mimc --constraints 16M --keys /tmp/km --keygen gpu > $R/setup-m24.log 2>&1; say "setup mimc 16M: $? $(grep -h 'setup:' $R/setup-m24.log | tail -1)"
mkdir -p $R/tr-m24-16g-w3
timeout $(left 540) $K bench prove --backend gpu --circuit mimc --sizes 16M --keys /tmp/km --workers 3 --vram-limits 16GiB --layout compact --designs single,split-first,split-devsync,split,budget --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-m24-16g-w3 > $R/bench-m24-16g-w3.txt 2> $R/bench-m24-16g-w3.err; say "bench mimc 16M 16 GiB w3: $?"; grep -A6 "^  design" $R/bench-m24-16g-w3.txt >> $OUT/summary.txt; grep "^bench:" $R/bench-m24-16g-w3.err >> $OUT/summary.txt
if [ $(left 560) -gt 100 ]; then mkdir -p $R/tr-m24-card-w3
 timeout $(left 575) $K bench prove --backend gpu --circuit mimc --sizes 16M --keys /tmp/km --workers 3 --vram-limits 0 --designs single,split-first,split-devsync,split,budget --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-m24-card-w3 > $R/bench-m24-card-w3.txt 2> $R/bench-m24-card-w3.err; say "bench mimc 16M card w3: $?"; grep "^bench:" $R/bench-m24-card-w3.err >> $OUT/summary.txt
fi
find $R -name "*.json" -exec gzip {} \; ; gzip $R/*.log 2>/dev/null; tar czf $OUT/g2.tgz -C $R .
cat $OUT/summary.txt
