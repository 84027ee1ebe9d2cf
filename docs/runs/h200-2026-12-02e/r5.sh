# Fifth call: the hold lets the two earliest lanes run (r4 let one: 2^22 gained, 2^20 lost ten points).
# One 10-partition porep-sha job at 2^20 and 2^22 (three workers, whole card), hold on twice and
# off once, and a stream of four with the hold. The kernel library is r1s, carried.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r5; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1)"
for run in on-j1a off-j1 on-j1b on-j4; do
  jobs=1; case $run in *j4) jobs=4;; esac
  CUZK_CPU_HOLD=${run%%-*} timeout $(left 560) $K bench prove --backend gpu --circuit porep-sha --sizes 1M,4M --keys memory --designs budget,split-first,split --workers 3 --jobs $jobs --vram-limits 0 --gnark-runs 0 --partition-runs 1 --trace-dir $R/tr-$run > $R/$run.txt 2> $R/$run.err
  say "porep-sha 1M,4M w3 card, hold ${run%%-*}, jobs $jobs ($run): $?"; grep -E "^circuit|^one partition|^ +(design|budget|split)" $R/$run.txt >> $OUT/summary.txt
done
for f in $R/*.err; do grep -v "WRN\|INF\|verifier done\|streamed msm" $f | gzip > $f.gz; rm $f; done
gzip $R/tr-*/*.json 2>/dev/null; tar czf $OUT/r5.tgz -C $R .
cat $OUT/summary.txt
