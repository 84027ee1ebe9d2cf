# Fourth call: mimc and sha at this round's code (9285c65; their circuits did not change, but
# Stage's copies did since their last figures, 8115433), one 10-partition job, three workers,
# whole card.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r4; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1)"
for circ in mimc sha; do
  sizes=1M; designs=budget,split,single; [ $circ = mimc ] && { sizes=1M,4M; designs=budget,split; }
  timeout $(left 150) $K bench prove --backend gpu --circuit $circ --sizes $sizes --keys memory --designs $designs --workers 3 --jobs 1 --vram-limits 0 --gnark-runs 0 --partition-runs 0 > $R/$circ.txt 2> $R/$circ.err
  say "$circ $sizes w3 card: $?"; grep -E "^circuit|^ +(design|budget|split|single)" $R/$circ.txt >> $OUT/summary.txt
done
for f in $R/*.err; do grep -v "WRN\|INF\|verifier done\|streamed msm" $f | gzip > $f.gz; rm $f; done
tar czf $OUT/r4.tgz -C $R .
cat $OUT/summary.txt
