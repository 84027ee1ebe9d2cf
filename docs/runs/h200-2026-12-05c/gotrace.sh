# runs/h200-2026-12-05b's gotrace.sh, with f27 16 GiB w3 (runs/h200-2026-12-05c
# c1: it lost ties far more often than its whole-card race runs) in place of
# F24 16 GiB w4: where the launching goroutine waits in the rows that lose the most
# launch/device-sync ties and in those that lose the fewest, with Go's
# execution trace (`cuzk --go-trace`) beside the JSON trace (deferred writer).
# One process a row, split-devsync only, RUNS runs each, traced both ways;
# back in $OUT/gotrace.tgz. Read each with
#   go tool trace -d=parsed ROW.trace > ROW.parsed
#   python3 docs/runs/h200-2026-12-04d/gostall.py ROW.parsed
#   python3 docs/runs/h200-2026-12-05b/ties.py ROW/traces-gpu-<family>-<limit>/*.json.gz
#   OUT=$OUT bash docs/runs/h200-2026-12-05c/gotrace.sh
. docs/runs/preamble.sh
. gpuprove/contention_families.sh
R=$(mktemp -d /tmp/gotrace.XXXX)
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader)"
row() { # name family limit workers
  family $2
  if [ $(left ${LIMIT:-520}) -lt 60 ]; then say "not run: $1"; return; fi
  timeout -s QUIT -k 10 $(( $(left ${LIMIT:-520}) < 120 ? $(left ${LIMIT:-520}) : 120 )) \
    $K --go-trace $R/$1.trace bench contention --backend gpu $COSTS $MEM --vram-limit $3 \
    --designs split-devsync --workers $4 --runs ${RUNS:-8} --trace-dir $R/$1/traces-gpu-$2-$3 > $R/$1.txt 2> $R/$1.err
  say "$1: exit $?"
}
# most lost (runs/h200-2026-12-05b: 11.7 %, 7.0 %), then fewest (2.1 %), then f27
row f26-16-w4 f26 16GiB 4
row f24-16-w3 f24 16GiB 3
row f25-whole-w3 f25 140GiB 3
row f27-16-w3 f27 16GiB 3
gzip -f $R/*.trace $R/*/*/*.json 2>/dev/null; tar czf $OUT/gotrace.tgz -C $R .
