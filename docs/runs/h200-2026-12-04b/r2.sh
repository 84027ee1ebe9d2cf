# Second and third calls: the grids of f24 and f25 against
# docs/predictions/contention/f24 and f25 (committed before). PLAN lists the
# grids of this call as draw/limit (both families) or draw/limit/family, e.g.
#   PLAN="1/140GiB 1/16GiB 2/16GiB" bash docs/runs/h200-2026-12-04b/r2.sh
# Each design its own bench stopped after 150 s (DESIGN_TIMEOUT); the grids
# stop LIMIT s (585) into the call.
. docs/runs/preamble.sh
R=/tmp/grids; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
for g in $PLAN; do IFS=/ read -r D lim fams <<< "$g"
  for fam in ${fams:-f24 f25}; do
    CUZK=$K OUT=$R/d$D FAMILIES=$fam LIMITS=$lim TRACES=1 DESIGN_TIMEOUT=150 timeout $(left ${LIMIT:-585}) gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "draw $D $fam $lim: $?"
    cat $R/d$D/gpu-$fam-$lim.txt >> $OUT/summary.txt
  done
done
gzip $R/*/*.json $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/grids.tgz -C $R .
cat $OUT/summary.txt
