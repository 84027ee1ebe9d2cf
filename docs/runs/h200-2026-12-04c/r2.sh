# Second call: r1's rows that did not run. r1 stopped in F25's eighth run at
# 3 workers: the device actor's ledger check panicked when another worker's
# allocation came before a failed attempt's worker saw its free complete, and
# the restart lost the partitions its workers held, so the run never ended
# (fixed in the binary this call carries). Each row its own limit of 120 s.
. docs/runs/preamble.sh
R=/tmp/rows2; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
. gpuprove/contention_families.sh
for row in ${ROWS:-f25/3 f20/3 f22/3 f25/2 f22/2}; do IFS=/ read -r fam w <<< "$row"
  family $fam
  timeout -s QUIT -k 10 $(( $(left 560) < 120 ? $(left 560) : 120 )) $K bench contention --backend gpu $COSTS $MEM --vram-limit 16GiB \
    --designs split-devsync --workers $w --runs ${RUNS:-10} --trace-dir $R/traces-gpu-$fam-16GiB \
    > $R/$fam-w$w.txt 2> $R/$fam-w$w.err
  say "$fam w$w: exit $?"; cat $R/$fam-w$w.txt >> $OUT/summary.txt
done
gzip $R/*/*.json 2>/dev/null; tar czf $OUT/rows.tgz -C $R .
cat $OUT/summary.txt
