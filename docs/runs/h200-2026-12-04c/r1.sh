# First call: split-devsync rows drawn ten times each, with traces, to ask
# whether the card loses launch/devsync ties at one share or row by row
# (README.md says what each answer predicts, written before the call):
# the two 3-4-worker rows that lost the most ties in earlier draws (f21 at
# 4 workers, f25 at 3, both under 16 GiB), two that lost the fewest (f20 and
# f22 at 3, 16 GiB), and two 2-worker rows under 16 GiB (f22, f25), where a
# run has one tie. The binary writes late_us, so a trace places each call.
. docs/runs/preamble.sh
R=/tmp/rows; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
. gpuprove/contention_families.sh
for row in f21/4 f25/3 f20/3 f22/3 f25/2 f22/2; do IFS=/ read -r fam w <<< "$row"
  family $fam
  timeout -s QUIT -k 10 $(left 560) $K bench contention --backend gpu $COSTS $MEM --vram-limit 16GiB \
    --designs split-devsync --workers $w --runs ${RUNS:-10} --trace-dir $R/traces-gpu-$fam-16GiB \
    > $R/$fam-w$w.txt 2> $R/$fam-w$w.err
  say "$fam w$w: exit $?"; cat $R/$fam-w$w.txt >> $OUT/summary.txt
done
gzip $R/*/*.json 2>/dev/null; tar czf $OUT/rows.tgz -C $R .
cat $OUT/summary.txt
