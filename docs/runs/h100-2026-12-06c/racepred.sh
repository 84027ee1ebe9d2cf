# The racing rows of c1/c2 (split-devsync at 3 and 4 workers under 16 GiB) against
# the model from the H100's own one-worker calibrations of f27 and f24 (c5:
# `bench contention calibrate --runs 1 --race 0`, made after the draws; no draw
# went into them), 256 seeds, in place and (f27) with --lock-hops.
#   CUZK=build/cuzk bash docs/runs/h100-2026-12-06c/racepred.sh > docs/runs/h100-2026-12-06c/racepred.txt
set -eu
CUZK=${CUZK:-build/cuzk}
D=docs/runs/h100-2026-12-06c
. gpuprove/contention_families.sh
T=$(mktemp -d); trap 'rm -rf $T' EXIT
for c in c1 c2; do mkdir $T/$c; tar xzf $D/$c/draws.tgz -C $T/$c; done
for run in inplace-f27 inplace-f24 hops-f27; do
  m=${run%%-*}; fam=${run#*-}; family $fam
  flag=""; [ $m = hops ] && flag=--lock-hops
  "$CUZK" bench contention --backend sim --profile $D/c5/pred/h100-contention-$fam.json --seeds 256 $COSTS $MEM --vram-limit 16GiB \
    --designs split-devsync --workers 3,4 $flag > $T/sim-$run.txt 2> $T/sim-$run.err
  echo "== $run: $(ls $T/c*/d*/$run.txt | wc -l) runs; the model: $(grep -o 'items/s [0-9.]* to [0-9.]*.*an OOM in [0-9]* of them' $T/sim-$run.err | sed 's/(sd [0-9.]*), //' | tr '\n' ';')"
  python3 docs/predictions/contention/draws/compare.py $T/sim-$run.txt $T/c*/d*/$run.txt | grep -E '^design|^split-devsync +[34] '
done
