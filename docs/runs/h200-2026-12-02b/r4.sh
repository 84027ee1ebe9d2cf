# Fourth call: the unseen family F10's grid against the predictions of ee994bf (the
# designs' ledger now what the ballast left), then F9 under 16 GiB again with this binary.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r4; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
CUZK=$K OUT=$R/grid FAMILIES=f10 TRACES=1 timeout 250 gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "grid f10: $?"; cat $R/grid/gpu-f10-*.txt >> $OUT/summary.txt
CUZK=$K OUT=$R/grid-f9 FAMILIES=f9 LIMITS=16GiB TRACES=1 timeout $(left 330) gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "grid f9 16GiB: $?"; cat $R/grid-f9/gpu-f9-*.txt >> $OUT/summary.txt
gzip $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/r4.tgz -C $R .
cat $OUT/summary.txt
