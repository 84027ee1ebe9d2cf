# Fifth call: one 10-partition porep-sha job at 2^20 and 2^22 on the whole card, three
# workers (two draws), and a stream of four, with the lanes in the scheduler's start order and
# the solve's groups yielding to earlier lanes (the head before the first compute was
# 156-199 ms at fbd62ff: runs/h200-2026-12-02b r1, one job 71-76 % busy).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r5; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16); $(free -g | grep Mem)"
for run in j1a j1b j4; do
  jobs=1; [ $run = j4 ] && jobs=4
  timeout $(left 300) $K bench prove --backend gpu --circuit porep-sha --sizes 1M,4M --keys memory --designs budget,split-first,split --workers 3 --jobs $jobs --vram-limits 0 --gnark-runs 0 --partition-runs 1 --trace-dir $R/tr-$run > $R/$run.txt 2> $R/$run.err
  say "porep-sha 1M,4M w3 card, jobs $jobs ($run): $?"; grep -E "^circuit|^one partition|^ +(design|budget|split)" $R/$run.txt >> $OUT/summary.txt
done
for f in $R/*.err; do grep -v "WRN\|INF\|verifier done\|streamed msm" $f | gzip > $f.gz; rm $f; done
gzip $R/tr-*/*.json 2>/dev/null; tar czf $OUT/r5.tgz -C $R .
cat $OUT/summary.txt
