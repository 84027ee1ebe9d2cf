# Calibrate at the target's size and predict, from one one-worker trace and the plan its
# run printed: the scenarios (the calibration run's, to fit through, and the rows') are
# written from the plan (vram: the limit, or the card's free memory; resident: what the
# plan holds beside the partitions; the key points it streams, the profile's stream_gib), the profile is fitted on the trace (the CPU model of
# BASE, the device figures of DEVFROM, the stage costs through the simulator), then every
# design at 2-4 workers under each row gate, 16 seeds' mean and seed 1's OOMs, into
# OUTDIR/pred.txt. atsize.sh runs it on the card before the rows; run anywhere on the
# same trace and plan it prints the same file. REPEATS: traces of the same calibration
# run made in other processes (sim calibrate --fit-repeat), pooled with TRACE's spans.
# COPIES: the calibration row run again beside endless copies (bench prove --copy-load
# also), for device.stream_stall where the plan streams key points (sim calibrate
# --copies-trace; left out where it streams none).
#   K=build/cuzk BASE=P DEVFROM=P VRAM=0|16 CALJOBS=2 CALGATE=54 ROWJOBS=2 GATES="72 54" [REPEATS="T2 ..."] [COPIES=T] \
#     bash docs/runs/atsize/predict.sh TRACE PLANLOG OUTDIR
set -eu
K=${K:-build/cuzk}
trace=$1; plan=$2; out=$3; mkdir -p $out
: ${BASE:=docs/predictions/h100-porepsha-lanes-base.json} ${DEVFROM:?} ${VRAM:=0}
: ${CALJOBS:=2} ${CALGATE:=54} ${ROWJOBS:=2} ${GATES:=72 54}
: ${CONSTRAINTS:=67108404} ${HOSTGIB:=17.881} ${PARTS:=10} ${SLOTS:=8}
free=$(grep -m1 "device memory plan" $plan | sed -E 's/.*plan \(([0-9.]+) GiB free\).*/\1/')
left=$(grep -m1 "left for partitions" $plan | awk '{print $4}')
resident=$(awk -v f=$free -v l=$left 'BEGIN {printf "%.2f", f - l}')
vram=$free; [ "$VRAM" != 0 ] && vram=$VRAM
# The key points the plan streams a partition (from the host or from disk): the kernels'
# own copies, which another copy on the engine stalls (partition.stream_gib).
stream=$(grep "^  key points .*streamed" $plan | awk '{s += $3} END {printf "%.2f", s}')
scenario() { # file name profile jobs workers gate description
  cat > $1 <<JSON
{
  "name": "$2",
  "description": "$7",
  "profile": "$3",
  "seed": 1,
  "devices": 1,
  "design": "budget",
  "workers_per_device": $5,
  "jobs": [
    {
      "id": "porep-sha",
      "count": $4,
      "partitions": $PARTS,
      "priority": "NORMAL",
      "size": $CONSTRAINTS,
      "host_gib": $HOSTGIB
    }
  ],
  "vram_gib": $vram,
  "resident_gib": $resident,
  "headroom_gib": 0,
  "host_mem_limit_gib": $6,
  "synth_workers": $SLOTS
}
JSON
}
what="porep-sha $CONSTRAINTS constraints a partition, $PARTS partitions a job, device memory $vram GiB (limit $VRAM; 0: the card), $resident GiB of it held beside the partitions as the plan printed ($free GiB free, $left left for partitions)"
scenario $out/fit.json fit $BASE $CALJOBS 1 $CALGATE "The calibration run: $CALJOBS jobs at once, budget, one worker, host gate $CALGATE GiB; $what."
repeat=""; for r in ${REPEATS:-}; do repeat="$repeat --fit-repeat $r"; done
[ -n "${COPIES:-}" ] && [ "$stream" != 0.00 ] && repeat="$repeat --copies-trace $COPIES"
$K sim calibrate --profile $BASE --device-from $DEVFROM --trace "$trace" $repeat --constraints $CONSTRAINTS \
  --stream-gib $stream --fit-scenario $out/fit.json --out $out/profile.json > $out/calibrate.txt 2>&1
for g in $GATES; do
  scenario $out/rows-g$g.json rows-g$g $out/profile.json $ROWJOBS 2 $g "The rows: $ROWJOBS jobs at once, host gate $g GiB; $what."
  for w in 2 3 4; do for d in budget split-first split split-devsync single; do
    m=$($K sim --scenario $out/rows-g$g.json --design $d --workers $w --seeds 16 | sed -n 3p)
    o=$($K sim --scenario $out/rows-g$g.json --design $d --workers $w | awk '/^OOM/ {print $2 "/" $NF}' | tr -d '(')
    echo "g$g $m $o"
  done; done
done > $out/pred.txt
