# Fifth call: split-devsync at 3 and 4 workers, drawn five times each for f19
# (both limits) and f18 (whole card): how far apart are the card's own runs of
# the rows that missed in r2 and r4?
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r5; mkdir -p $R/draws
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
. gpuprove/contention_families.sh
for i in 1 2 3 4 5; do
  for job in "f19 16GiB" "f19 140GiB" "f18 140GiB"; do
    set -- $job; [ $(left 400) -gt 20 ] || break 2
    family $1
    timeout $(left 420) $K bench contention --backend gpu --vram-limit $2 --workers 3,4 --designs split-devsync $COSTS $MEM \
      > $R/draws/$1-$2-d$i.txt 2> $R/draws/$1-$2-d$i.err; say "$1 $2 split-devsync draw $i: $?"
    tail -2 $R/draws/$1-$2-d$i.txt >> $OUT/summary.txt
  done
done
gzip $R/*/*.err 2>/dev/null; tar czf $OUT/r5.tgz -C $R .
cat $OUT/summary.txt
