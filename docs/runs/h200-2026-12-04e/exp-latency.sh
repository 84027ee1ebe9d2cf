# The latency experiment (not in the simulator): run from a checkout with
# exp-latency.patch applied and cuzk built from it ($CUZK), with the card's
# grids of runs/h200-2026-12-04d r2, r4, r5 and this round's c1 unpacked
# under $CARD (CARD/<round>_<call>/d<i>/gpu-<family>-<limit>.txt).
#   LAT=1: device calls' completions reach the worker after the card's
#   late_us (lognormal around its medians: blocking calls 42 us, a device
#   sync 9 us (35 when it waited), a trim 20 us, cudaMemGetInfo 13 us, the
#   rest 1 us), mem_info_ms 0.001 in the profiles; HOP=us: each actor
#   wake-up a handler makes runs after an exponential latency of that mean.
# usage: [LAT=1] [HOP=us] bash exp-latency.sh TAG
set -u
T=/tmp/expout/$1; rm -rf $T; mkdir -p $T
R=docs/runs/h200-2026-12-04e
. $R/racing-read.sh
# The patched build reads these.
export CUZK_EXP_LAT=${LAT:-} CUZK_EXP_HOP=${HOP:-}
prepare() { # family, source, profile
  [ -n "${LAT:-}" ] && python3 docs/predictions/contention/setfield.py $3 $3 device.mem_info_ms 0.001 >/dev/null
  return 0
}
predict_racing $T "$CUZK" prepare
echo "== $1: LAT=${LAT:-} HOP=${HOP:-}"
read_racing $T "$CARD"
