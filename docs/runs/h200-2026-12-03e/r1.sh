# First call: f18's one-worker calibration runs (a family no profile has seen);
# the pool-beside probe (cuzk bench pool-beside, one worker) with each family's
# kernel and buffer, f12-f18, trims at the kernel's launch (and f15's and f17's
# half-way through it); four more draws of f16's split-first at 3 and 4 workers
# under 16 GiB (does the card stay in the OOM cycle every time?).
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r1; mkdir -p $R/probe $R/draws
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
. gpuprove/contention_families.sh
CUZK=$K OUT=$R/cal FAMILIES=f18 timeout 300 gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1; say "calibration f18: $?"
for f in $R/cal/*.txt; do echo "== $f"; cat $f; done >> $OUT/summary.txt
probe(){ # family, delay
  family $1; local fl; fl=$(echo "$MEM $COSTS" | sed -E 's/--items [0-9]+//; s/--before [^ ]+//; s/--after [^ ]+//')
  timeout 60 $K bench pool-beside --backend gpu --rounds 16 --delay $2 $fl --trace $R/probe/$1-d$2.json >> $OUT/summary.txt 2>&1; say "probe $1 delay $2: $?"
}
for fam in f12 f13 f14 f15 f16 f17 f18; do probe $fam 0s; done
probe f15 30ms; probe f17 150ms
family f16
for i in 1 2 3 4; do
  timeout 60 $K bench contention --backend gpu --vram-limit 16GiB --workers 3,4 --designs split-first $COSTS $MEM \
    --trace-dir $R/draws/d$i > $R/draws/d$i.txt 2> $R/draws/d$i.err; say "f16 16GiB split-first draw $i: $?"
  tail -2 $R/draws/d$i.txt >> $OUT/summary.txt
done
gzip $R/*/*.json $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/r1.tgz -C $R .
cat $OUT/summary.txt
