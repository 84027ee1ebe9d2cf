set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/h5; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libmain.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libmain.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $C/libmain.so | cut -c1-16)"
# the calibration of the fresh family f8: one-worker runs only
CUZK=$K OUT=$R/calibration FAMILIES=f8 timeout 300 gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1; say "calibration f8: $?"
for t in $R/calibration/*.txt; do tail -n +3 $t >> $OUT/summary.txt; done
tar czf $OUT/h5.tgz -C $R .
cat $OUT/summary.txt
