# Fourth call: split-devsync alone, the racing rows (its 3-4 worker rows, where
# which worker's sync catches which kernel decides the throughput), five more
# draws of f22's and f23's grids at both limits, so that with r1-r2's three
# those rows have eight draws.
. docs/runs/preamble.sh
R=/tmp/r3; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16)"
for D in 4 5 6 7 8; do
  [ $(left 540) -gt 110 ] || { say "draw $D: not started, $(left 540) s left"; break; }
  CUZK=$K OUT=$R/d$D FAMILIES="f22 f23" DESIGNS=split-devsync DESIGN_TIMEOUT=60 timeout $(left 540) gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "draw $D: $?"
  cat $R/d$D/gpu-*.txt >> $OUT/summary.txt
done
gzip $R/*/*.err 2>/dev/null; tar czf $OUT/r3.tgz -C $R .
cat $OUT/summary.txt
