# Sixth call: the pool-beside probe again with F12-F18's kernels and buffers,
# the cached blocks touched (--touch: each holds a partition, copied into and
# run over by the kernel, before the trim), as a design's buffer is before the
# next pre-stage trims it. Does that reproduce the grids' per-family slowdown?
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r6; mkdir -p $R/probe
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
. gpuprove/contention_families.sh
for fam in f15 f17 f12 f13 f14 f16 f18; do
  [ $(left 280) -gt 30 ] || break
  family $fam; fl=$(echo "$MEM $COSTS" | sed -E 's/--items [0-9]+//; s/--before [^ ]+//; s/--after [^ ]+//')
  timeout $(left 300) $K bench pool-beside --backend gpu --rounds 12 --delay 0s --touch $fl --trace $R/probe/$fam-touch.json >> $OUT/summary.txt 2>&1; say "probe $fam touched: $?"
done
gzip $R/*/*.json 2>/dev/null; tar czf $OUT/r6.tgz -C $R .
cat $OUT/summary.txt
