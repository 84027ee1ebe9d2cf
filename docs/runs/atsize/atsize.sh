# One call: porep-sha 2^26 calibrated on the card at its own size and predicted before the
# rows it predicts, on the same machine (the procedure of runs/h100-2026-12-06d c2.sh,
# with the scenarios written from the plan the card prints):
#  1. the calibration: CALJOBS jobs at once, budget, one worker, under VRAM (GiB; 0: the
#     whole card) and host gate CALGATE, traced; with COPYLOAD=also the same row again
#     beside endless copies (bench prove --copy-load), for device.stream_stall;
#  2. predict.sh on its trace and plan (the profile and pred.txt printed by sha before 3);
#  3. the rows: ROWJOBS jobs at once under ROWGATE, every design at 2-4 workers (ROWWORKERS:
#     fewer, e.g. 2,4, where two jobs' rows would not fit the call);
#  4. on an H200, split-devsync's racing draws (runs/h200-2026-12-05d card.sh, in place)
#     until END.
# By the card that comes: an H200 takes the whole card, two jobs (calibration under
# 54 GiB, rows under 72 GiB), its device figures from sim/profiles/h200-contention-base.json;
# an H100 takes 16 GiB, one job under 54 GiB, its device figures from f30's calibration
# on an H100 (runs/h100-2026-12-06b). Any variable set before overrides.
#   OUT=$OUT [END=585] bash docs/runs/atsize/atsize.sh
. docs/runs/preamble.sh
export GOMEMLIMIT=100GiB GOTRACEBACK=all  # a run past its time is stopped with SIGQUIT: every goroutine's stack in its log
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$gpu" in
*H200*) : ${VRAM:=0} ${CALJOBS:=2} ${ROWJOBS:=2} ${CALGATE:=54} ${ROWGATE:=72} ${DEVFROM:=sim/profiles/h200-contention-base.json} ;;
*)      : ${VRAM:=16} ${CALJOBS:=2} ${ROWJOBS:=1} ${CALGATE:=54} ${ROWGATE:=54} ${DEVFROM:=docs/runs/h100-2026-12-06b/pred/h200-contention-f30.json} ;;
esac
lim=0; [ "$VRAM" != 0 ] && lim=${VRAM}GiB
R=$(mktemp -d /tmp/atsize.XXXX); mkdir -p $R/cal $R/rows
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $gpu; $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader 2>/dev/null); VRAM=$VRAM CALJOBS=$CALJOBS ROWJOBS=$ROWJOBS CALGATE=$CALGATE ROWGATE=$ROWGATE DEVFROM=$DEVFROM"
prove() { # trace-dir out-prefix limit jobs args...
  local dir=$1 pre=$2 tl=$3 jobs=$4; shift 4
  timeout -s QUIT $(left $tl) /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 64M --keys memory \
    --jobs $jobs --vram-limits $lim --gnark-runs 0 --partition-runs 0 --trace-dir $dir "$@" > $pre.txt 2> $pre.err
  local rc=$?
  grep -v "verifier done" $pre.txt | grep -v $'\x1b' >> $OUT/summary.txt
  grep -E "^bench: |^  [a-z]" $pre.err | cut -c1-400 >> $OUT/summary.txt
  grep -E "Maximum resident|Elapsed" $pre.err >> $OUT/summary.txt
  grep -v "WRN\|INF\|verifier done\|streamed msm" $pre.err > $pre.log; rm $pre.err
  return $rc
}
prove $R/cal $R/cal ${CALEND:-260} $CALJOBS --designs budget --workers 1 --host-mem-limit ${CALGATE}GiB --copy-load ${COPYLOAD:-off}
say "calibration run (budget w1, $CALJOBS jobs, VRAM $VRAM, gate $CALGATE GiB, copy load ${COPYLOAD:-off}): $?"
tr=$(ls $R/cal/trace-*.json | grep -v -- -copies | head -1)  # bench writes scenario-*.json beside it
predict() { # COPIES: the copies row's trace, or none
  COPIES=$1 K=$K BASE=${BASE:-docs/predictions/h100-porepsha-lanes-base.json} DEVFROM=$DEVFROM VRAM=$VRAM CALJOBS=$CALJOBS \
    CALGATE=$CALGATE ROWJOBS=$ROWJOBS GATES="$ROWGATE" bash docs/runs/atsize/predict.sh $tr $R/cal.log $R/pred
}
copies=$(ls $R/cal/trace-*-copies.json 2>/dev/null | head -1)
predict "$copies"; rc=$?
if [ $rc != 0 ] && [ -n "$copies" ]; then
  say "predict.sh with the copies row: $rc; again without it"
  predict ""; rc=$?
fi
say "predict.sh: $rc profile $(sha256sum $R/pred/profile.json | cut -c1-16) pred $(sha256sum $R/pred/pred.txt | cut -c1-16)"
cp $R/pred/profile.json $R/pred/pred.txt $R/pred/calibrate.txt $OUT/
cat $R/pred/pred.txt >> $OUT/summary.txt
prove $R/rows $R/rows ${ROWEND:-${END:-585}} $ROWJOBS --designs budget,split-first,split,split-devsync,single --workers ${ROWWORKERS:-2,3,4} --host-mem-limit ${ROWGATE}GiB
say "rows (every design w${ROWWORKERS:-2-4}, $ROWJOBS jobs, VRAM $VRAM, gate $ROWGATE GiB): $?"
gzip $R/cal/*.json $R/rows/*.json $R/*.log 2>/dev/null; tar czf $OUT/atsize.tgz -C $R .
case "$gpu" in
*H200*) E=$(left ${END:-585}); [ $E -gt 60 ] && GRID=0 LIMIT=$E bash docs/runs/h200-2026-12-05d/card.sh > /dev/null ;;
esac
cat $OUT/summary.txt
