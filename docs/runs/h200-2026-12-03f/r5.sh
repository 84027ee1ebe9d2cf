# Fifth call (the session's last device seconds): more draws of the rows whose
# outcome is a regime or an OOM's timing. F20's split-devsync at 3 and 4
# workers on the whole card (with traces, for --race-trace), F21's split-first
# at 3 workers and F20's split-devsync at 2 and 3 workers under 16 GiB.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r5; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16)"
. gpuprove/contention_families.sh
draw() { # name limit designs workers family
  family $5; local i=$6
  timeout 40 $K bench contention --backend gpu --vram-limit $2 --designs $3 --workers $4 $COSTS $MEM \
    --trace-dir $R/$1-d$i > $R/$1-d$i.txt 2> $R/$1-d$i.err; say "$1 draw $i: $?"
  grep -E "^ +[a-z-]+ +[0-9]" $R/$1-d$i.txt >> $OUT/summary.txt
}
for i in 1 2 3 4 5 6 7; do
  [ $(( $(date +%s)-t0 )) -lt 75 ] && draw f20-140GiB-devsync 140GiB split-devsync 3,4 f20 $i
done
for i in 1 2 3; do
  [ $(( $(date +%s)-t0 )) -lt 105 ] && draw f21-16GiB-splitfirst 16GiB split-first 3 f21 $i
done
for i in 1 2 3; do
  [ $(( $(date +%s)-t0 )) -lt 125 ] && draw f20-16GiB-devsync 16GiB split-devsync 2,3 f20 $i
done
gzip $R/*/*.json $R/*.err 2>/dev/null; tar czf $OUT/r5.tgz -C $R .
say done
