# Third and fourth calls: porep-sha at 2^27 under 16 GiB, two partitions on the host
# (--host-mem-limit 66GiB), with the copies ahead (AHEAD=on: every design) and in order
# (AHEAD=off: DESIGNS), against docs/predictions/h200-porepsha128m-16g-plan27-g66-ahead-*-predicted.txt.
set -u; C=.gpuprove-carry; t0=$(date +%s); AHEAD=${AHEAD:-on}; DESIGNS=${DESIGNS:-budget,split-first,split,single,split-devsync}
R=/tmp/r27-$AHEAD; mkdir -p $R/tr-ps27
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16); $(free -g | grep Mem); copies ahead $AHEAD, designs $DESIGNS"
fl=""; [ $AHEAD = on ] && fl="--copies-ahead"
( while sleep 2; do echo "$(( $(date +%s)-t0 )) $(free -m | awk '/Mem/{print $3}') $(ps -o rss= -C cuzk | head -1)" >> $R/mem.txt; done ) & M=$!
timeout $(( 590 - ($(date +%s)-t0) )) /usr/bin/time -v $K --verbose bench prove $fl --backend gpu --circuit porep-sha --sizes 128M --keys memory --designs $DESIGNS --workers 3 --vram-limits 16GiB --host-mem-limit 66GiB --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-ps27 > $R/bench-ps27.txt 2> $R/bench-ps27.err; say "bench porep-sha 128M w3 16GiB gate 66, copies ahead $AHEAD: $?"; kill $M
grep -v "verifier done\|WRN\|INF\|streamed msm" $R/bench-ps27.err | grep -E -A8 "^bench: |^setup|stamped|keygen stage=|Maximum resident|Elapsed|rror|panic|signal|Killed" | cut -c1-300 >> $OUT/summary.txt; grep -E "^circuit|^one partition|^wire|^ +(design|budget|split|single)" $R/bench-ps27.txt >> $OUT/summary.txt
echo "mem samples (s, used MiB, cuzk RSS KiB): max used $(sort -k2 -n $R/mem.txt | tail -1)" >> $OUT/summary.txt; dmesg 2>/dev/null | grep -i "out of memory\|killed process" | tail -3 >> $OUT/summary.txt
grep -v "WRN\|INF\|verifier done\|streamed msm" $R/bench-ps27.err | gzip > $R/bench-ps27.err.gz; rm $R/bench-ps27.err
gzip $R/tr-*/*.json 2>/dev/null; tar czf $OUT/r27-$AHEAD.tgz -C $R .
cat $OUT/summary.txt
