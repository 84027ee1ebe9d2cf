# From the one-worker trace of two porep-sha 2^26 jobs under 54 GiB (c2.sh's first run):
# the H100 profile (the lanes base, the H100's own device figures from f30's contention
# calibration, stage costs fitted through the simulator on the trace) at
# docs/runs/h100-2026-12-06d/c2/profile.json, then every design at 2-4 workers of two
# jobs at once under 72 GiB (the blind rows) and 54 GiB (c1's rows, post hoc), 16 seeds'
# mean and seed 1's OOMs, into OUTDIR/pred.txt. c2.sh runs it on the card before the
# rows; run here on the committed trace it must print the same file.
#   K=build/cuzk bash docs/runs/h100-2026-12-06d/predict.sh TRACE OUTDIR
set -eu
K=${K:-build/cuzk}; P=docs/predictions; D=docs/runs/h100-2026-12-06d
trace=$1; out=$2; mkdir -p $D/c2 $out
$K sim calibrate --profile $P/h100-porepsha-lanes-base.json \
  --device-from docs/runs/h100-2026-12-06b/pred/h200-contention-f30.json \
  --trace "$trace" --constraints 67108404 \
  --fit-scenario $P/h100-porepsha64m-card-w1-fit-job.json --out $D/c2/profile.json > $out/calibrate.txt 2>&1
for lim in g72 g54; do
  s=$P/h100-porepsha64m-w1cal-jobs2-$lim-job.json; [ $lim = g54 ] && s=$P/h100-porepsha64m-w1cal-jobs2-job.json
  for w in 2 3 4; do for d in budget split-first split split-devsync single; do
    m=$($K sim --scenario $s --design $d --workers $w --seeds 16 | sed -n 3p)
    o=$($K sim --scenario $s --design $d --workers $w | awk '/^OOM/ {print $2 "/" $NF}' | tr -d '(')
    echo "$lim $m $o"
  done; done
done > $out/pred.txt
