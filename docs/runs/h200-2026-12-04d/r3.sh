# Third call: the one-worker runs that host.handoff.newest_first is fitted
# from (split, split-first and split-devsync at one worker, each family's CPU
# stages, whole card, three runs each, traced with the deferred writer), for
# f10, f22, f24 and f25. Only newest_first is taken from them
# (docs/predictions/contention/deferred-trace, second part).
. docs/runs/preamble.sh
R=/tmp/cal; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16)"
. gpuprove/contention_families.sh
for fam in f10 f22 f24 f25; do
  family $fam
  timeout -s QUIT -k 10 $(( $(left 400) < 100 ? $(left 400) : 100 )) $K bench contention --backend gpu $COSTS $MEM \
    --designs split,split-first,split-devsync --workers 1 --runs 3 --trace-dir $R/traces-$fam > $R/$fam.txt 2> $R/$fam.err
  say "$fam: exit $?"; cat $R/$fam.txt >> $OUT/summary.txt
done
gzip $R/*/*.json 2>/dev/null; tar czf $OUT/cal.tgz -C $R .
cat $OUT/summary.txt
