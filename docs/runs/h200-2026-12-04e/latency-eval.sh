# host.completion_latency against the card's racing rows (after the round):
# the prediction profiles of split-devsync at 3-4 workers (F10, F22: v3;
# F24, F25: next/later-0.01), each with the completion latencies that
# `cuzk sim calibrate --latency-trace` fits from the one-worker traces of
# runs/h200-2026-12-04d r3 (unpacked under $R3), optionally with a waited
# device sync's median set by hand (WAITED, µs), then the same reading as
# exp-latency.sh: ties, lost-tie outcomes, fast/slow orders, and the racing
# rows against every deferred-writer draw ($CARD/<round>/d<i>/gpu-<g>.txt:
# -04d r2, r4, r5 and -04e c1 unpacked).
# usage: [LAT=1] [WAITED=us] R3=DIR CARD=DIR bash latency-eval.sh TAG   (CUZK, default build/cuzk)
set -u
T=${OUTDIR:-/tmp/latency-eval}/$1; rm -rf $T; mkdir -p $T
P=docs/predictions/contention/deferred-trace
R=docs/runs/h200-2026-12-04e
CUZK=${CUZK:-build/cuzk}
LT=$(for f in "$R3"/traces-*/trace-*-w1*.json*; do printf -- '--latency-trace %s ' "$f"; done)
. gpuprove/contention_families.sh
for f in f10 f22 f24 f25; do
  family $f
  src=$P/next/later-0.01/h200-contention-$f.json
  [ -f $src ] || src=$P/v3/h200-contention-$f.json
  cp $src $T/p-$f.json
  [ "${LAT:-}" = 1 ] && "$CUZK" sim calibrate --profile $src $LT --out $T/p-$f.json 2>/dev/null
  [ -n "${WAITED:-}" ] && python3 docs/predictions/contention/setfield.py $T/p-$f.json $T/p-$f.json \
    host.completion_latency.waited_device_sync.p50_us "$WAITED" >/dev/null
  for l in 140GiB 16GiB; do
    "$CUZK" bench contention --backend sim --profile $T/p-$f.json $MEM --vram-limit $l \
      --designs split-devsync --workers 3,4 --seeds 16 --trace-dir $T/traces-sim-$f-$l > $T/sim-$f-$l.txt 2>/dev/null
  done
done
echo "== $1: LAT=${LAT:-} WAITED=${WAITED:-}"
. $R/racing-read.sh
read_racing $T "$CARD"
