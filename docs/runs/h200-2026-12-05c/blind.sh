# One call (README.md "Before the call with f27"): f27, a family not run
# before, calibrated on the card with `bench contention calibrate --runs 1
# --race 6` (later_first fitted through the simulator from its race runs),
# then, before any draw, the model's 16 GiB racing rows (split-devsync at 3
# and 4 workers, 256 seeds) from that profile and from the same profile with
# the base's handoff (newest_first 0.973, later_first 0.01), their sha256
# printed; then draws of the 16 GiB racing rows, traced, until LIMIT. Back in
# $OUT: summary.txt, pred/ and blind.tgz (cal-f27/, d<i>/).
#   OUT=$OUT bash docs/runs/h200-2026-12-05c/blind.sh
. docs/runs/preamble.sh
. gpuprove/contention_families.sh
R=$(mktemp -d /tmp/blind.XXXX)
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
family f27
$K bench contention calibrate --backend ${BACKEND:-gpu} $COSTS $MEM $(backend_flags ${BACKEND:-gpu}) --runs 1 --race ${RACE:-6} --dir $R/cal-f27 --name h200-contention-f27 \
  --out $R/cal-f27/profile.json > $R/cal-f27.txt 2>&1
say "calibrated f27: $?; $(grep 'handoff' $R/cal-f27.txt | tr '\n' ' ')"
mkdir -p $OUT/pred
cp $R/cal-f27/profile.json $OUT/pred/h200-contention-f27.json
python3 docs/predictions/contention/setfield.py $OUT/pred/h200-contention-f27.json $OUT/pred/base-handoff-f27.json \
  host.handoff.later_first 0.01 > /dev/null
python3 docs/predictions/contention/setfield.py $OUT/pred/base-handoff-f27.json $OUT/pred/base-handoff-f27.json \
  host.handoff.newest_first 0.973 > /dev/null
for p in h200-contention-f27 base-handoff-f27; do
  $K bench contention --backend sim --profile $OUT/pred/$p.json --seeds 256 $MEM --vram-limit 16GiB \
    --designs split-devsync --workers 3,4 > $OUT/pred/sim-$p-16GiB.txt 2> $OUT/pred/sim-$p-16GiB.err
  say "predicted $p: $? $(grep -o 'an OOM in [0-9]* of them' $OUT/pred/sim-$p-16GiB.err $OUT/pred/sim-$p-16GiB.txt | awk '{print $4}' | tr '\n' ' ')"
done
say "predictions: $(cd $OUT/pred && sha256sum * | cut -c1-16 | tr '\n' ' ')"
for D in $(seq 1 60); do
  if [ $(left ${LIMIT:-540}) -lt ${NEED:-25} ]; then say "stopped before draw $D"; break; fi
  mkdir -p $R/d$D
  $K bench contention --backend ${BACKEND:-gpu} $COSTS $MEM $(backend_flags ${BACKEND:-gpu}) --vram-limit 16GiB --designs split-devsync --workers 3,4 \
    --trace-dir $R/d$D/traces-gpu-f27-16GiB > $R/d$D/gpu-f27-16GiB.txt 2> $R/d$D/gpu-f27-16GiB.err || say "d$D: exit $?"
  say "draw $D: OOM pre-stage+fallback $(awk '$1 == "split-devsync" && $2 ~ /^[0-9]+$/ {printf "w%s %s+%s ", $2, $8, $9}' $R/d$D/gpu-f27-16GiB.txt)"
done
gzip -f $R/*/*/*.json $R/cal-f27/*/*.json 2>/dev/null; tar czf $OUT/blind.tgz -C $R .
