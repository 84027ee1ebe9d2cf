# Second to fourth calls (D=1, 2, 3): one draw of f22's and f23's grids, both
# limits, against the predictions committed with
# docs/predictions/contention/f22 and f23.
. docs/runs/preamble.sh
D=${D:-1}; R=/tmp/d$D; mkdir -p $R
say "draw $D: $($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
for fam in f22 f23; do for lim in 16GiB 140GiB; do
  CUZK=$K OUT=$R/grid FAMILIES=$fam LIMITS=$lim TRACES=1 timeout $(left 570) gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "grid $fam $lim: $?"
  cat $R/grid/gpu-$fam-$lim.txt >> $OUT/summary.txt
done; done
gzip $R/*/*.json $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/d$D.tgz -C $R .
cat $OUT/summary.txt
