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
P=docs/predictions/contention/deferred-trace
R=docs/runs/h200-2026-12-04e
. gpuprove/contention_families.sh
for f in f10 f22 f24 f25; do
  family $f
  src=$P/next/later-0.01/h200-contention-$f.json
  [ -f $src ] || src=$P/v3/h200-contention-$f.json
  cp $src $T/p-$f.json
  [ -n "${LAT:-}" ] && python3 docs/predictions/contention/setfield.py $T/p-$f.json $T/p-$f.json device.mem_info_ms 0.001 >/dev/null
  for l in 140GiB 16GiB; do
    CUZK_EXP_LAT=${LAT:-} CUZK_EXP_HOP=${HOP:-} "$CUZK" bench contention --backend sim --profile $T/p-$f.json $MEM --vram-limit $l \
      --designs split-devsync --workers 3,4 --seeds 16 --trace-dir $T/traces-sim-$f-$l > $T/sim-$f-$l.txt 2>/dev/null
  done
done
echo "== $1: LAT=${LAT:-} HOP=${HOP:-}"
. $R/racing-read.sh
read_racing $T "$CARD"
