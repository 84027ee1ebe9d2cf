# Call 3 of round h200-2026-12-05 (README.md): draws of the racing rows only
# (split-devsync at 3 and 4 workers, F24 and F25, 16 GiB and the whole card),
# one process per family, limit and draw, as the grids run them, traced; draw
# after draw until LIMIT (520 s into the call). Each draw's tables go to
# $OUT/d<i>/ (compare.py reads them as the grids'), its traces to traces.tgz.
#   OUT=$OUT bash docs/runs/h200-2026-12-05/racing.sh
. docs/runs/preamble.sh
. gpuprove/contention_families.sh
R=/tmp/racing; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
for D in $(seq 1 ${DRAWS:-30}); do
  if [ $(left ${LIMIT:-520}) -lt 40 ]; then say "stopped before draw $D"; break; fi
  mkdir -p $OUT/d$D
  for fam in f24 f25; do family $fam; for lim in 16GiB 140GiB; do
    $K bench contention --backend gpu $COSTS $MEM --vram-limit $lim --designs split-devsync --workers 3,4 \
      --trace-dir $R/d$D/traces-gpu-$fam-$lim > $OUT/d$D/gpu-$fam-$lim.txt 2> $R/d$D-$fam-$lim.err || say "d$D $fam $lim: exit $?"
  done; done
  say "draw $D"
done
gzip $R/*/*/*.json $R/*.err 2>/dev/null; tar czf $OUT/traces.tgz -C $R .
