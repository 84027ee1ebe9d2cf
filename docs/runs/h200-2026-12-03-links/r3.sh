# Third call: porep-sha's linked layout at 2^22, 3 workers, one job (two draws) and four
# jobs at once, against the prediction committed before it from r2's one-worker trace
# (predictions/h200-porepsha4m-w1c-predicted.txt: one job 90.5 %, 0.56 s; four jobs 97.4 %,
# 0.52 s a job).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r3; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1)"
for run in j1a j1b j4; do
  [ $(left 280) -lt 40 ] && { say "skipped $run: time"; continue; }
  jobs=1; [ $run = j4 ] && jobs=4
  timeout $(left 275) $K bench prove --backend gpu --circuit porep-sha --sizes 4M --keys memory --designs budget,split-first,split --workers 3 --jobs $jobs --vram-limits 0 --gnark-runs 0 --partition-runs 0 > $R/$run.txt 2> $R/$run.err
  say "porep-sha 4M w3 card, $run: $?"; grep -E "^circuit|^ +(design|budget|split)" $R/$run.txt >> $OUT/summary.txt
done
for f in $R/*.err; do grep -v "WRN\|INF\|verifier done\|streamed msm" $f | gzip > $f.gz; rm $f; done
tar czf $OUT/r3.tgz -C $R .
cat $OUT/summary.txt
