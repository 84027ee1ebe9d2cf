# Call 2 of the round: porep-sha 2^26 on the whole H100 in place, calibrated and predicted
# in the call, before the rows it predicts, on the same machine:
#  1. the calibration: two jobs at once (--jobs 2), budget, one worker, under 54 GiB, traced;
#  2. predict.sh on its trace (the profile and pred.txt, printed by sha before step 3);
#  3. the blind rows: two jobs at once under 72 GiB (4 partitions on the host), every design
#     at 2-4 workers, a configuration never run.
# Run on the committed trace, predict.sh must give the same pred.txt byte for byte.
#   OUT=$OUT [END=585] bash docs/runs/h100-2026-12-06d/c2.sh
. docs/runs/preamble.sh
export GOMEMLIMIT=100GiB
D=docs/runs/h100-2026-12-06d
R=$(mktemp -d /tmp/c2.XXXX); mkdir -p $R/cal $R/rows
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader 2>/dev/null)"
prove() { # trace-dir out-prefix limit args...
  local dir=$1 pre=$2 lim=$3; shift 3
  timeout $(left $lim) /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 64M --keys memory \
    --jobs 2 --vram-limits 0 --gnark-runs 0 --partition-runs 0 --trace-dir $dir "$@" > $pre.txt 2> $pre.err
  local rc=$?
  grep -v "verifier done" $pre.txt | grep -v $'\x1b' >> $OUT/summary.txt
  grep -E "^bench: " $pre.err | cut -c1-400 >> $OUT/summary.txt
  grep -E "Maximum resident|Elapsed" $pre.err >> $OUT/summary.txt
  grep -v "WRN\|INF\|verifier done\|streamed msm" $pre.err | gzip > $pre.err.gz; rm $pre.err
  return $rc
}
prove $R/cal $R/cal 200 --designs budget --workers 1 --host-mem-limit 54GiB
say "calibration run (budget w1, 2 jobs, 54 GiB): $?"
tr=$(ls $R/cal/*.json | head -1)
K=$K bash $D/predict.sh $tr $R/pred
say "predict.sh: $? profile $(sha256sum $D/c2/profile.json | cut -c1-16) pred $(sha256sum $R/pred/pred.txt | cut -c1-16)"
cp $D/c2/profile.json $R/pred/pred.txt $R/pred/calibrate.txt $OUT/
cat $R/pred/pred.txt >> $OUT/summary.txt
prove $R/rows $R/rows ${END:-585} --designs budget,split-first,split,split-devsync,single --workers 2,3,4 --host-mem-limit 72GiB
say "rows (every design w2-4, 2 jobs, 72 GiB): $?"
gzip $R/cal/*.json $R/rows/*.json 2>/dev/null; tar czf $OUT/c2.tgz -C $R cal rows cal.txt rows.txt cal.err.gz rows.err.gz pred
cat $OUT/summary.txt
