# Draws of the racing rows (split-devsync at 3 and 4 workers) of round
# h200-2026-12-05b (README.md): for each draw, each family of $FAMS (default
# "f24 f25") and each limit of $LIMITS (default "16GiB 140GiB"), one
# `bench contention` process, as the grids run them, traced; draw after draw
# until LIMIT (520 s into the call). Everything (each draw's tables d<i>/,
# its traces and stderr) comes back in one archive, $OUT/draws.tgz: a call
# brings back a limited number of files.
#   OUT=$OUT bash docs/runs/h200-2026-12-05b/racing.sh
. docs/runs/preamble.sh
. gpuprove/contention_families.sh
R=$(mktemp -d /tmp/racing.XXXX)  # a warm machine keeps /tmp from call to call
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
for D in $(seq 1 ${DRAWS:-40}); do
  if [ $(left ${LIMIT:-520}) -lt ${NEED:-45} ]; then say "stopped before draw $D"; break; fi
  mkdir -p $R/d$D
  for fam in ${FAMS:-f24 f25}; do family $fam; for lim in ${LIMITS:-16GiB 140GiB}; do
    $K bench contention --backend gpu $COSTS $MEM --vram-limit $lim --designs split-devsync --workers 3,4 \
      --trace-dir $R/d$D/traces-gpu-$fam-$lim > $R/d$D/gpu-$fam-$lim.txt 2> $R/d$D/gpu-$fam-$lim.err || say "d$D $fam $lim: exit $?"
  done; done
  say "draw $D"
done
gzip -f $R/*/*/*.json 2>/dev/null; tar czf $OUT/draws.tgz -C $R .
