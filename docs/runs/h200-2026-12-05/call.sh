# One call of round h200-2026-12-05 (README.md): for each family of $FAMS,
# `cuzk bench contention calibrate --backend gpu --runs 1 --race 3` (the
# one-worker runs, whole card and 16 GiB, and split-devsync at 3 and 4
# workers three times each; BESIDE=N adds split and split-first at 2-4
# workers N times each, beside/), then the family's grids, draws $DRAWS of
# 16 GiB and the whole card, traced; a grid starts only if its usual length
# (NEED_<family>, s) fits before LIMIT (540 s into the call). Back in $OUT:
# summary.txt and run.tgz with cal-<family>/ and d<i>/.
# Run on the device machine from the repository root with the carried binary:
#   OUT=$OUT FAMS="f25" DRAWS="1 2" bash docs/runs/h200-2026-12-05/call.sh
. docs/runs/preamble.sh
. gpuprove/contention_families.sh
R=/tmp/round; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
NEED_f23=${NEED_f23:-90} NEED_f24=${NEED_f24:-110} NEED_f25=${NEED_f25:-135}
for fam in ${FAMS:-f25}; do
  family $fam
  if [ "${CAL:-1}" = 1 ]; then
    $K bench contention calibrate --backend gpu $COSTS $MEM --runs 1 --race ${RACE:-3} --beside ${BESIDE:-0} \
      --dir $R/cal-$fam --name h200-contention-$fam > $R/cal-$fam.txt 2>&1
    say "calibrated $fam: $?"
  fi
  for D in ${DRAWS:-1}; do for lim in ${LIMITS:-16GiB 140GiB}; do
    need=NEED_$fam
    if [ $(left ${LIMIT:-540}) -lt ${!need} ]; then say "not run: $D:$fam:$lim"; continue; fi
    CUZK=$K OUT=$R/d$D FAMILIES=$fam LIMITS=$lim TRACES=1 DESIGN_TIMEOUT=75 \
      gpuprove/contention_grid.sh >> $OUT/summary.txt 2>&1; say "ran $D:$fam:$lim: $?"
  done; done
done
gzip $R/*/*/*.json $R/*/*/*/*.json $R/*/*.err 2>/dev/null; tar czf $OUT/run.tgz -C $R .
cat $OUT/summary.txt
