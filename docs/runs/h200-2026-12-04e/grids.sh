# Each call of this round: F23, F24 and F25's whole grids (every design, 1-4
# workers, traced with the deferred writer), against the predictions committed
# before (docs/predictions/contention/deferred-trace/next, primary later-0.01).
# JOBS lists the grids still to run, "draw:family:limit", in order; a grid
# starts only if its usual length (NEED_<family>, seconds) fits before LIMIT
# (560 s into the call), so that no grid is cut. Each grid's rows go to
# $OUT/summary.txt, its table, stderr and traces to $OUT/grids.tgz.
. docs/runs/preamble.sh
R=/tmp/grids; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
NEED_f23=${NEED_f23:-100} NEED_f24=${NEED_f24:-125} NEED_f25=${NEED_f25:-150}
for job in $JOBS; do
  IFS=: read -r D fam lim <<< "$job"
  need=NEED_$fam
  if [ $(left ${LIMIT:-560}) -lt ${!need} ]; then say "not run: $job"; continue; fi
  CUZK=$K OUT=$R/d$D FAMILIES=$fam LIMITS=$lim TRACES=1 DESIGN_TIMEOUT=75 \
    gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "ran $job: $?"
done
gzip $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/grids.tgz -C $R .
cat $OUT/summary.txt
