# One call, by the card that comes: on an H200, atsize.sh (porep-sha 2^26 on the whole
# card calibrated at size in the call, then split-devsync's racing draws); on an H100,
# JOBS porep-sha 2^26 jobs at once under VRAM GiB and a GATE GiB host gate, every design
# at 2-4 workers, against the predictions PRED committed before the call (their sha is
# printed first).
#   OUT=$OUT VRAM=24 JOBS=2 GATE=72 PRED=docs/predictions/F-predicted.txt [END=580] [WORKERS=2,4] [DESIGNS=split,single] bash docs/runs/atsize/rows.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$gpu" in
*H200*) END=${END:-580} bash docs/runs/atsize/atsize.sh > /dev/null; cat $OUT/summary.txt; exit ;;
esac
. docs/runs/preamble.sh
export GOMEMLIMIT=100GiB
: ${VRAM:?} ${JOBS:?} ${GATE:?} ${PRED:?}
R=$(mktemp -d /tmp/rows.XXXX); mkdir -p $R/rows
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $gpu; VRAM=$VRAM JOBS=$JOBS GATE=$GATE"
say "prediction: $PRED $(sha256sum $PRED | cut -c1-16)"
timeout $(left ${END:-580}) /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 64M --keys memory \
  --designs ${DESIGNS:-budget,split-first,split,split-devsync,single} --workers ${WORKERS:-2,3,4} --jobs $JOBS --vram-limits ${VRAM}GiB --host-mem-limit ${GATE}GiB \
  --gnark-runs 0 --partition-runs 0 --trace-dir $R/rows > $R/rows.txt 2> $R/rows.err
say "rows (${DESIGNS:-every design} w${WORKERS:-2,3,4}, $JOBS jobs, $VRAM GiB, gate $GATE GiB): $?"
grep -v "verifier done" $R/rows.txt | grep -v $'\x1b' >> $OUT/summary.txt
grep -E "^bench: |^  [a-z]" $R/rows.err | cut -c1-480 >> $OUT/summary.txt
grep -E "Maximum resident|Elapsed" $R/rows.err >> $OUT/summary.txt
grep -v "WRN\|INF\|verifier done\|streamed msm" $R/rows.err | gzip > $R/rows.log.gz; rm $R/rows.err
gzip $R/rows/*.json 2>/dev/null; tar czf $OUT/rows.tgz -C $R .
cat $OUT/summary.txt
