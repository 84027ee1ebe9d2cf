# where streamed compute goes: porep-sha 2^24 under 16 GiB with the points streamed from pinned memory, one worker, Debug log of each streamed MSM
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/q4; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libmain.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1); $(lscpu | grep -E 'NUMA node|Socket|Model name' | tr -s ' ' | tr '\n' ';')"; nvidia-smi topo -m >> $OUT/summary.txt 2>&1
for v in "beside:" "serial:--b-g2 gpu-serial"; do n=${v%%:*}; a=${v#*:}
timeout 150 $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 16M --keys memory --designs budget --workers 1 --vram-limits 16GiB --key-tier pinned $a --gnark-runs 0 --partition-runs 3 > $R/ps24-pinned-$n.txt 2> $R/ps24-pinned-$n.err; say "ps24 pinned $n: $?"
grep -v "verifier done\|WRN\|INF" $R/ps24-pinned-$n.err | grep -E -A8 "^bench: " | cut -c1-300 >> $OUT/summary.txt; cat $R/ps24-pinned-$n.txt >> $OUT/summary.txt
grep "streamed msm" $R/ps24-pinned-$n.err | sed 's/^time=[^ ]* level=DEBUG //' | tail -12 >> $OUT/summary.txt
gzip $R/ps24-pinned-$n.err; done
tar czf $OUT/q4.tgz -C $R .
cat $OUT/summary.txt
