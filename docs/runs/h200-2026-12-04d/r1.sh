# First call: where the launching worker's goroutine waits before its call.
# split-devsync under 16 GiB, f25 at 3 and 4 workers and f22 at 3, each a
# batch of runs in one process with Go's execution trace (--go-trace); f25 at
# 3 workers once more without the JSON trace (its writer's lock out of the
# handlers' way; the collector's stays). README.md says what each outcome
# would mean (before the call).
. docs/runs/preamble.sh
R=/tmp/stall1; mkdir -p $R
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); lib $(sha256sum $CUZK_GPU_LIB | cut -c1-16)"
. gpuprove/contention_families.sh
row() { # name family workers runs [trace]
  family $2
  local tr=""; [ "${5:-}" = trace ] && tr="--trace-dir $R/$1/traces-gpu-$2-16GiB"
  timeout -s QUIT -k 10 $(( $(left 480) < 100 ? $(left 480) : 100 )) $K --go-trace $R/$1.trace bench contention --backend gpu \
    $COSTS $MEM --vram-limit 16GiB --designs split-devsync --workers $3 --runs $4 $tr > $R/$1.txt 2> $R/$1.err
  say "$1: exit $?"; grep "split-devsync  " $R/$1.txt >> $OUT/summary.txt; grep "runs, items/s" $R/$1.err >> $OUT/summary.txt
}
row f25-w3 f25 3 8 trace
row f25-w3-bare f25 3 8
row f22-w3 f22 3 8 trace
row f25-w4 f25 4 6 trace
gzip $R/*.trace $R/*/*/*.json 2>/dev/null; tar czf $OUT/stall.tgz -C $R .
ls -la $OUT; cat $OUT/summary.txt
