set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/h6; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libmain.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16)"
CUZK=$K OUT=$R/grid BACKEND=gpu FAMILIES=f8 TRACES=1 timeout 280 gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "grid f8: $?"
for t in $R/grid/traces-*; do [ -d $t ] && gzip $t/*.json; done
tar czf $OUT/h6.tgz -C $R .
cat $OUT/summary.txt
