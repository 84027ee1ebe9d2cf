# Second and third calls (D=2, 3): draws 2 and 3 of f22's and f23's grids,
# both limits, against docs/predictions/contention/f22 and f23 (budget under
# 16 GiB against budget-scratch); each design its own bench stopped after
# 150 s, since a design hung draw 3 of runs/h200-2026-12-03g.
. docs/runs/preamble.sh
D=${D:-2}; R=/tmp/d$D; mkdir -p $R
say "draw $D: $($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
for fam in f22 f23; do for lim in 16GiB 140GiB; do
  CUZK=$K OUT=$R/grid FAMILIES=$fam LIMITS=$lim TRACES=1 DESIGN_TIMEOUT=150 timeout $(left 580) gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "grid $fam $lim: $?"
  cat $R/grid/gpu-$fam-$lim.txt >> $OUT/summary.txt
done; done
gzip $R/*/*.json $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/d$D.tgz -C $R .
cat $OUT/summary.txt
