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
R=docs/runs/h200-2026-12-04e
CUZK=${CUZK:-build/cuzk}
LT=$(for f in "$R3"/traces-*/trace-*-w1*.json*; do printf -- '--latency-trace %s ' "$f"; done)
. $R/racing-read.sh
prepare() { # family, source, profile
  [ "${LAT:-}" = 1 ] && "$CUZK" sim calibrate --profile $2 $LT --out $3 2>/dev/null
  [ -n "${WAITED:-}" ] && python3 docs/predictions/contention/setfield.py $3 $3 \
    host.completion_latency.waited_device_sync.p50_us "$WAITED" >/dev/null
  return 0
}
predict_racing $T "$CUZK" prepare
echo "== $1: LAT=${LAT:-} WAITED=${WAITED:-}"
read_racing $T "$CARD"
