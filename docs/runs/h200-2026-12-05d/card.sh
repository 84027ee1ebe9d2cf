# Call 1 of the round (README.md "Before the call"): f27's 16 GiB grid (every
# design, 1-4 workers) once in each runtime (GRID=0 leaves it out), then draws of split-devsync at
# 3 and 4 workers under 16 GiB, free mutexes taken in place (the default), of
# f27, f24 and f26 in turn, and of f27 with --lock-hops (the runtime before),
# each one `bench contention` process, traced; round after round until LIMIT.
# The predictions (pred/, committed before the call) are printed by sha
# first. Everything comes back in $OUT/draws.tgz (d<i>/<mode>-<family>.*).
#   OUT=$OUT LIMIT=540 bash docs/runs/h200-2026-12-05d/card.sh
. docs/runs/preamble.sh
. gpuprove/contention_families.sh
R=$(mktemp -d /tmp/card.XXXX)  # a warm machine keeps /tmp from call to call
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader 2>/dev/null)"
say "predictions: $(cd docs/runs/h200-2026-12-05d/pred && sha256sum *.txt | cut -c1-16 | tr '\n' ' ')"
if [ "${GRID:-1}" = 1 ]; then
  family f27
  for m in inplace hops; do
    flag=""; [ $m = hops ] && flag=--lock-hops; mkdir -p $R/grid-$m
    $K bench contention --backend ${BACKEND:-gpu} $COSTS $MEM $(backend_flags ${BACKEND:-gpu}) --vram-limit 16GiB --workers 1,2,3,4 $flag \
      --trace-dir $R/grid-$m/traces-$m-f27-16GiB > $R/grid-$m/gpu-f27-16GiB.txt 2> $R/grid-$m/gpu-f27-16GiB.err || say "grid $m: exit $?"
    say "grid $m: $(awk '$2 ~ /^[0-9]+$/ {printf "%s/%s %s ", $1, $2, $3}' $R/grid-$m/gpu-f27-16GiB.txt)"
  done
fi
for D in $(seq 1 ${DRAWS:-60}); do
  mkdir -p $R/d$D
  for run in ${RUNS:-inplace-f27 inplace-f24 inplace-f26 hops-f27}; do
    if [ $(left ${LIMIT:-540}) -lt ${NEED:-20} ]; then say "stopped before d$D $run"; break 2; fi
    m=${run%%-*}; fam=${run#*-}; family $fam
    flag=""; [ $m = hops ] && flag=--lock-hops
    $K bench contention --backend ${BACKEND:-gpu} $COSTS $MEM $(backend_flags ${BACKEND:-gpu}) --vram-limit 16GiB --designs split-devsync --workers 3,4 $flag \
      --trace-dir $R/d$D/traces-$run-16GiB > $R/d$D/$run.txt 2> $R/d$D/$run.err || say "d$D $run: exit $?"
  done
  say "draw $D: OOM pre-stage+fallback $(for f in $R/d$D/*.txt; do awk -v r=$(basename $f .txt) '$1 == "split-devsync" && $2 ~ /^[0-9]+$/ {printf "%s w%s %s+%s ", r, $2, $8, $9}' $f; done)"
done
gzip -f $R/*/*/*.json 2>/dev/null; tar czf $OUT/draws.tgz -C $R .
