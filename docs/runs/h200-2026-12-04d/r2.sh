# Second call: split-devsync at 2-4 workers on f10, f22, f24 and f25, whole
# card and 16 GiB, with the deferred trace writer (b2a4880), three draws of
# each family x limit (each its own bench of 2,3,4 workers, traced), against
# docs/predictions/contention/deferred-trace (committed before). README.md
# says what each outcome would mean. The draws stop LIMIT s (560) into the call.
. docs/runs/preamble.sh
R=/tmp/grids; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
for D in 1 2 3; do for fam in ${FAMS:-f25 f22 f24 f10}; do for lim in 16GiB 140GiB; do
  [ $(left ${LIMIT:-560}) -lt 40 ] && break 3
  CUZK=$K OUT=$R/d$D FAMILIES=$fam LIMITS=$lim DESIGNS=split-devsync WORKERS=2,3,4 TRACES=1 DESIGN_TIMEOUT=$(( $(left ${LIMIT:-560}) < 90 ? $(left ${LIMIT:-560}) : 90 )) \
    gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "draw $D $fam $lim: $?"
  grep "split-devsync  " $R/d$D/gpu-$fam-$lim.txt >> $OUT/summary.txt
done; done; done
gzip $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/grids.tgz -C $R .
cat $OUT/summary.txt
