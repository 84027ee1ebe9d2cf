# The next round's call (written before it, runs/h200-2026-12-04e "For the
# next round"): for each family of $FAMS, the one-worker calibration runs
# (RUNS=1 gpuprove/contention_calibrate.sh: whole card and 16 GiB) and then
# the family's grids, $DRAWS draws of 16 GiB and the whole card each, traced;
# a grid starts only if its usual length (NEED_<family>, s) fits before LIMIT
# (560 s into the call). Back in $OUT: summary.txt and run.tgz with cal/ and
# d<i>/. predict-same-call.sh then predicts the grids from cal/ alone.
# Run on the device machine from the repository root with the carried binary:
#   OUT=$OUT FAMS="f25" DRAWS="1 2" bash docs/runs/h200-2026-12-04e/same-call.sh
. docs/runs/preamble.sh
R=/tmp/samecall; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
NEED_f23=${NEED_f23:-90} NEED_f24=${NEED_f24:-110} NEED_f25=${NEED_f25:-135}
for fam in ${FAMS:-f25}; do
  CUZK=$K OUT=$R/cal BACKEND=gpu RUNS=1 FAMILIES=$fam gpuprove/contention_calibrate.sh >> $OUT/summary.txt 2>&1
  say "calibrated $fam: $?"
  for D in ${DRAWS:-1}; do for lim in 16GiB 140GiB; do
    need=NEED_$fam
    if [ $(left ${LIMIT:-560}) -lt ${!need} ]; then say "not run: $D:$fam:$lim"; continue; fi
    CUZK=$K OUT=$R/d$D FAMILIES=$fam LIMITS=$lim TRACES=1 DESIGN_TIMEOUT=75 \
      gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "ran $D:$fam:$lim: $?"
  done; done
done
gzip $R/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/run.tgz -C $R .
cat $OUT/summary.txt
