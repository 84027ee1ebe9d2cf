# Third call: the same two rows (f25 and f22 at 3 workers, 16 GiB) the way
# the grids drew them: one bench of split-devsync at 1, 2, 3 and 4 workers
# in one process, five times for f25 and four for f22, each its own trace
# directory. README.md says what each outcome would mean (before the call).
. docs/runs/preamble.sh
R=/tmp/rows3; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16)"
. gpuprove/contention_families.sh
for d in 1 2 3 4 5; do for fam in f25 f22; do
  [ $fam = f22 ] && [ $d = 5 ] && continue
  family $fam
  timeout -s QUIT -k 10 $(( $(left 560) < 90 ? $(left 560) : 90 )) $K bench contention --backend gpu $COSTS $MEM --vram-limit 16GiB \
    --designs split-devsync --workers 1,2,3,4 --trace-dir $R/d$d/traces-gpu-$fam-16GiB \
    > $R/$fam-d$d.txt 2> $R/$fam-d$d.err
  say "$fam d$d: exit $?"; grep "split-devsync  " $R/$fam-d$d.txt >> $OUT/summary.txt
done; done
gzip $R/*/*/*.json 2>/dev/null; tar czf $OUT/rows.tgz -C $R .
cat $OUT/summary.txt
