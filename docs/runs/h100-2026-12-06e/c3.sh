# Call 3, by the card that comes: on an H200, docs/runs/atsize/atsize.sh (porep-sha 2^26
# on the whole card calibrated at size in the call, then split-devsync's racing draws);
# on an H100, two porep-sha 2^26 jobs at once under 16 GiB and a GATE GiB host gate (36: two
# partitions on the host, the CPU side bounds), every design at 2-4 workers, against the predictions of call
# 1's profile committed before this call
# (predictions/h100-porepsha64m-16g-w1cal-jobs2-g${GATE:-36}-predicted.txt).
#   OUT=$OUT [END=560] [GATE=36] bash docs/runs/h100-2026-12-06e/c3.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$gpu" in
*H200*) END=${END:-580} bash docs/runs/atsize/atsize.sh > /dev/null; cat $OUT/summary.txt; exit ;;
esac
. docs/runs/preamble.sh
export GOMEMLIMIT=100GiB
R=$(mktemp -d /tmp/c3.XXXX); mkdir -p $R/rows
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $gpu"
say "prediction: $(sha256sum docs/predictions/h100-porepsha64m-16g-w1cal-jobs2-g${GATE:-36}-predicted.txt | cut -c1-16)"
timeout $(left ${END:-580}) /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 64M --keys memory \
  --designs budget,split-first,split,split-devsync,single --workers 2,3,4 --jobs 2 --vram-limits 16GiB --host-mem-limit ${GATE:-36}GiB \
  --gnark-runs 0 --partition-runs 0 --trace-dir $R/rows > $R/rows.txt 2> $R/rows.err
say "rows (every design w2-4, 2 jobs, 16 GiB, gate ${GATE:-36} GiB): $?"
grep -v "verifier done" $R/rows.txt | grep -v $'\x1b' >> $OUT/summary.txt
grep -E "^bench: |^  [a-z]" $R/rows.err | cut -c1-400 >> $OUT/summary.txt
grep -E "Maximum resident|Elapsed" $R/rows.err >> $OUT/summary.txt
grep -v "WRN\|INF\|verifier done\|streamed msm" $R/rows.err | gzip > $R/rows.log.gz; rm $R/rows.err
gzip $R/rows/*.json 2>/dev/null; tar czf $OUT/c3.tgz -C $R .
cat $OUT/summary.txt
