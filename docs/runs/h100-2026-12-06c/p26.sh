# porep-sha 2^26, 3 workers (WORKERS), every design, on the whole card in place (three
# partitions on the host), against the H100 profile's predictions committed before
# (docs/predictions/h100-porepsha64m-card-w3-predicted.txt); then racing draws
# (card.sh without its grid) until END seconds into the call.
#   OUT=$OUT [END=420] [WORKERS=2,3,4] [JOBS=2] [PLIMIT=330] bash docs/runs/h100-2026-12-06c/p26.sh
t00=$(date +%s)
. docs/runs/preamble.sh
export GOMEMLIMIT=72GiB
R=$(mktemp -d /tmp/p26.XXXX); mkdir -p $R/tr
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader 2>/dev/null)"
say "prediction: $(sha256sum docs/predictions/h100-porepsha64m-card-w3-predicted.txt docs/predictions/h100-porepsha64m-card-sizes-predicted.txt docs/predictions/h100-porepsha64m-card-jobs2-predicted.txt | cut -c1-16)"
timeout $(left ${PLIMIT:-330}) /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 64M --keys memory \
  --designs budget,split-first,split,split-devsync,single --workers ${WORKERS:-3} --jobs ${JOBS:-1} --vram-limits 0 --host-mem-limit 54GiB \
  --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr > $R/ps26.txt 2> $R/ps26.err
say "porep-sha 64M every design w${WORKERS:-3} jobs ${JOBS:-1} card in place: $?"
grep -v "verifier done" $R/ps26.txt | grep -v $'\x1b' >> $OUT/summary.txt
grep -E "^bench: " $R/ps26.err | cut -c1-400 >> $OUT/summary.txt
grep -E "Maximum resident|Elapsed" $R/ps26.err >> $OUT/summary.txt
grep -v "WRN\|INF\|verifier done\|streamed msm" $R/ps26.err | gzip > $R/ps26.err.gz; rm $R/ps26.err
gzip $R/tr/*.json 2>/dev/null; tar czf $OUT/p26.tgz -C $R .
E=$(( ${END:-420} - ($(date +%s) - t00) ))
[ $E -gt 40 ] && GRID=0 LIMIT=$E bash docs/runs/h200-2026-12-05d/card.sh
cat $OUT/summary.txt
