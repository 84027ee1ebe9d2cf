# Second call: porep-sha at 2^26 under 16 GiB, every design, against the predictions of
# 8784d1e; the F9 contention grid against those of 07b20a9; cuzk prove holding its keys
# once; more pairs of the 2^22 stream, lanes and even sharing.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r2; mkdir -p $R/tr-ps26
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk cuda.test libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16); $(free -g | grep Mem)"
( while sleep 5; do echo "$(( $(date +%s)-t0 )) $(free -m | awk '/Mem/{print $3}') $(ps -o rss= -C cuzk | head -1)" >> $R/mem.txt; done ) & M=$!
GOMEMLIMIT=72GiB timeout 330 /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 64M --keys memory --designs budget,split-first,split,split-devsync,single --workers 3 --vram-limits 16GiB --host-mem-limit 54GiB --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-ps26 > $R/bench-ps26.txt 2> $R/bench-ps26.err; say "bench porep-sha 64M w3 16GiB gate 54: $?"; kill $M
grep -v "verifier done\|WRN\|INF\|streamed msm" $R/bench-ps26.err | grep -E -A8 "^bench: |stamped|keygen stage=g2|Maximum resident|Elapsed|rror|panic" | cut -c1-300 >> $OUT/summary.txt; grep -v "verifier done" $R/bench-ps26.txt >> $OUT/summary.txt
echo "mem samples (s, used MiB, cuzk RSS KiB): max used $(sort -k2 -n $R/mem.txt | tail -1)" >> $OUT/summary.txt
grep -v "WRN\|INF\|verifier done\|streamed msm" $R/bench-ps26.err | gzip > $R/bench-ps26.err.gz; rm $R/bench-ps26.err
# F9, the unseen family: all designs, 1-4 workers, whole card and 16 GiB
CUZK=$K OUT=$R/grid FAMILIES=f9 TRACES=1 timeout $(left 540) gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "grid f9: $?"; cat $R/grid/gpu-f9-*.txt >> $OUT/summary.txt
# cuzk prove holds its keys once (c652c67): setup to disk, then prove on the GPU with the points pinned
if [ $(left 540) -gt 50 ]; then
  timeout $(left 580) /usr/bin/time -v $K prove --circuit porep-sha --constraints 4M --partitions 10 --backend gpu --key-tier pinned --vram-limit 16GiB --keys $R/k4 --setup-if-missing --out $R/p4 --store $R/s4 > $R/prove4m.txt 2> $R/prove4m.err; say "cuzk prove porep-sha 4M gpu pinned: $?"
  tail -n 25 $R/prove4m.txt >> $OUT/summary.txt; grep -E "Maximum resident|Elapsed|rror|panic" $R/prove4m.err >> $OUT/summary.txt; gzip $R/prove4m.err
fi
rm -rf $R/k4 $R/p4 $R/s4
# more pairs of the 2^22 stream (four jobs), lanes then even sharing
for rep in 2 3; do for lanes in on off; do
  [ $(left 560) -gt 45 ] || break 2
  CUZK_CPU_LANES=$lanes timeout $(left 585) $K bench prove --backend gpu --circuit porep-sha --sizes 4M --keys memory --designs budget,split-first,split --workers 3 --jobs 4 --vram-limits 0 --gnark-runs 0 --partition-runs 0 > $R/lanes-$lanes-j4-r$rep.txt 2> $R/lanes-$lanes-j4-r$rep.err; say "porep-sha 4M w3 card jobs 4 lanes $lanes rep $rep: $?"; grep "^bench: [a-z]" $R/lanes-$lanes-j4-r$rep.err | grep "workers" >> $OUT/summary.txt; gzip $R/lanes-$lanes-j4-r$rep.err
done; done
gzip $R/tr-*/*.json $R/grid/*/*.json $R/grid/*.err 2>/dev/null; tar czf $OUT/r2.tgz -C $R .
cat $OUT/summary.txt
