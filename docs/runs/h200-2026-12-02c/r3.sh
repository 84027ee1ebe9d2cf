# Third call: porep-sha at 2^27 under 16 GiB, every design, two partitions on the host
# (--host-mem-limit 66GiB; the A and B wires one vector, the wires solved into the pinned staging),
# against the predictions of docs/predictions/h200-porepsha128m-16g-plan27-g66-predicted.txt.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r3; mkdir -p $R/tr-ps27
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16); $(free -g | grep Mem)"
# first the new layouts on smaller sizes: 2^22 on the whole card (whole layout, each vector copied), 2^24 under 16 GiB (compact); no 2^27 unless both verify
ok=1
for spec in "4M 0" "16M 16GiB"; do set -- $spec
  timeout 120 $K bench prove --backend gpu --circuit porep-sha --sizes $1 --keys memory --designs budget --workers 3 --vram-limits $2 --gnark-runs 0 --partition-runs 0 > $R/check-$1.txt 2> $R/check-$1.err; rc=$?
  say "check porep-sha $1 limit $2: $rc"; grep -v "verifier done" $R/check-$1.txt >> $OUT/summary.txt
  { [ $rc = 0 ] && grep -q "10/10" $R/check-$1.txt; } || { ok=0; grep -E "rror|panic" $R/check-$1.err | head -5 >> $OUT/summary.txt; }
done
[ $ok = 1 ] || { say "a check failed: no 2^27 run"; tar czf $OUT/r3.tgz -C $R .; cat $OUT/summary.txt; exit 1; }
( while sleep 2; do echo "$(( $(date +%s)-t0 )) $(free -m | awk '/Mem/{print $3}') $(ps -o rss= -C cuzk | head -1)" >> $R/mem.txt; done ) & M=$!
timeout $(( 585 - ($(date +%s)-t0) )) /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 128M --keys memory --designs budget,split-first,split,single,split-devsync --workers 3 --vram-limits 16GiB --host-mem-limit 66GiB --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr-ps27 > $R/bench-ps27.txt 2> $R/bench-ps27.err; say "bench porep-sha 128M w3 16GiB gate 66: $?"; kill $M
grep -v "verifier done\|WRN\|INF\|streamed msm" $R/bench-ps27.err | grep -E -A8 "^bench: |^setup|stamped|keygen stage=|Maximum resident|Elapsed|rror|panic|signal|Killed" | cut -c1-300 >> $OUT/summary.txt; grep -v "verifier done" $R/bench-ps27.txt >> $OUT/summary.txt
echo "mem samples (s, used MiB, cuzk RSS KiB): max used $(sort -k2 -n $R/mem.txt | tail -1)" >> $OUT/summary.txt; dmesg 2>/dev/null | grep -i "out of memory\|killed process" | tail -3 >> $OUT/summary.txt
grep -v "WRN\|INF\|verifier done\|streamed msm" $R/bench-ps27.err | gzip > $R/bench-ps27.err.gz; rm $R/bench-ps27.err
gzip $R/tr-*/*.json 2>/dev/null; tar czf $OUT/r3.tgz -C $R .
cat $OUT/summary.txt
