# First call: the kernel library (make cuda, none carried), then the budget
# design keeping room for a kernel's scratch, on the rows whose prediction it
# changes: f18, f19 and f22 under 16 GiB, budget at 1-4 workers, three draws,
# against docs/predictions/contention/budget-scratch (committed before).
. docs/runs/preamble.sh
R=/tmp/r1; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
for D in 1 2 3; do
  CUZK=$K OUT=$R/d$D FAMILIES="f18 f19 f22" LIMITS=16GiB DESIGNS=budget TRACES=1 DESIGN_TIMEOUT=100 timeout $(left 570) gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "draw $D: $?"
  cat $R/d$D/gpu-*.txt >> $OUT/summary.txt
done
gzip $R/*/*.json $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/r1.tgz -C $R .
cat $OUT/summary.txt
