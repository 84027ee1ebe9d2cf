# porep-sha 2^26, split-devsync at 3 workers on the whole card, three partitions on
# the host (g54's settings, runs/h200-2026-12-02 q5): once with free mutexes taken in
# place (the runtime now), once with --lock-hops (the runtime of q5). The model's
# figures were committed before (docs/predictions/inplace-vs-hops.txt: 10.79 s a job
# in place, 9.23 s with lock hops; the card in q5, lock hops: 10.04 s).
#   OUT=$OUT LIMIT=300 bash docs/runs/h200-2026-12-06/porep.sh
. docs/runs/preamble.sh
export GOMEMLIMIT=72GiB
R=$(mktemp -d /tmp/porep.XXXX)
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader 2>/dev/null)"
for m in ${MODES:-inplace hops}; do
  flag=""; [ $m = hops ] && flag=--lock-hops
  mkdir -p $R/tr-$m
  if [ $(left ${LIMIT:-300}) -lt 130 ]; then say "not run: $m"; continue; fi
  timeout $(left ${LIMIT:-300}) /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes 64M \
    --keys memory --designs split-devsync --workers 3 --vram-limits 0 --host-mem-limit 54GiB \
    --gnark-runs 0 --partition-runs 0 $flag --trace-dir $R/tr-$m > $R/ps26-$m.txt 2> $R/ps26-$m.err
  say "porep-sha 64M split-devsync w3 card $m: $?"
  grep -v "verifier done" $R/ps26-$m.txt | grep -v $'\x1b' >> $OUT/summary.txt  # gnark's compile log goes to stdout
  grep -E "Maximum resident|Elapsed" $R/ps26-$m.err >> $OUT/summary.txt
  grep -v "WRN\|INF\|verifier done\|streamed msm" $R/ps26-$m.err | gzip > $R/ps26-$m.err.gz; rm $R/ps26-$m.err
done
gzip $R/tr-*/*.json 2>/dev/null; tar czf $OUT/porep.tgz -C $R .
