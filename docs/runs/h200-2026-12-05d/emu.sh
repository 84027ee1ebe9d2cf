# Draws of the 16 GiB racing rows (split-devsync, 3 and 4 workers) of $FAM
# (default f27) on
# the emulated device of the build host, traced, with the binary $K: each
# draw once with free mutexes taken in place (the default) and once with
# --lock-hops (every lease through its lock actor, the runtime before),
# alternately, so that both meet the same host. Then, for each, OOM against
# lost ties (oomtie.py) and the draws' share of lost ties (gaps.py). Run it
# with nothing else on the host: the race is microseconds of scheduling.
#   K=build/cuzk DRAWS=30 OUT=DIR [FAM=f24] bash docs/runs/h200-2026-12-05d/emu.sh
# (MODES="inplace" for the default alone, as with a binary from before
# --lock-hops.)
set -eu
H=docs/runs/h200-2026-12-05c
. gpuprove/contention_families.sh
F=${FAM:-f27}
family $F
mkdir -p $OUT
echo "$($K version | head -1); $(nproc) cores; $(date -u +%FT%TZ)" > $OUT/summary.txt
for D in $(seq 1 ${DRAWS:-30}); do
  for m in ${MODES:-inplace hops}; do
    flag=""; [ $m = hops ] && flag=--lock-hops
    d=$OUT/$m/d$D; mkdir -p $d
    $K bench contention --backend emu $COSTS $MEM --free-copy-work 2450us --vram-limit 16GiB --designs split-devsync --workers 3,4 $flag \
      --trace-dir $d/traces-gpu-$F-16GiB > $d/gpu-$F-16GiB.txt 2> $d/gpu-$F-16GiB.err || echo "$m d$D: exit $?" >> $OUT/summary.txt
    echo "$m draw $D: OOM pre-stage+fallback $(awk '$1 == "split-devsync" && $2 ~ /^[0-9]+$/ {printf "w%s %s+%s %s/s ", $2, $8, $9, $3}' $d/gpu-$F-16GiB.txt)" >> $OUT/summary.txt
  done
done
gzip -f $OUT/*/d*/*/*.json
for m in ${MODES:-inplace hops}; do
  echo "== $m" | tee -a $OUT/summary.txt
  python3 $H/oomtie.py $OUT/$m/d*/traces-gpu-$F-16GiB/*.json.gz | tee -a $OUT/summary.txt
  (cd $OUT/$m && python3 $OLDPWD/$H/gaps.py ROWS d*/traces-gpu-$F-16GiB/*.json.gz | sed -n '/lost %/,$p') | tee -a $OUT/summary.txt
done
