# Draws of the 16 GiB racing rows (split-devsync, 3 and 4 workers) of f27 on
# the emulated device of the build host, traced, with the binary $K; then
# OOM against lost ties (oomtie.py) and the draws' share of lost ties
# (gaps.py). Run it with nothing else on the host: the race is µs of host
# scheduling.
#   K=build/cuzk DRAWS=20 OUT=DIR bash docs/runs/h200-2026-12-05d/emu.sh
set -eu
H=docs/runs/h200-2026-12-05c
. gpuprove/contention_families.sh
family f27
mkdir -p $OUT
echo "$($K version | head -1); $(nproc) cores" > $OUT/summary.txt
for D in $(seq 1 ${DRAWS:-20}); do
  mkdir -p $OUT/d$D
  $K bench contention --backend emu $COSTS $MEM --free-copy-work 2450us --vram-limit 16GiB --designs split-devsync --workers 3,4 \
    --trace-dir $OUT/d$D/traces-gpu-f27-16GiB > $OUT/d$D/gpu-f27-16GiB.txt 2> $OUT/d$D/gpu-f27-16GiB.err || echo "d$D: exit $?" >> $OUT/summary.txt
  echo "draw $D: OOM pre-stage+fallback $(awk '$1 == "split-devsync" && $2 ~ /^[0-9]+$/ {printf "w%s %s+%s ", $2, $8, $9}' $OUT/d$D/gpu-f27-16GiB.txt)" >> $OUT/summary.txt
done
gzip -f $OUT/d*/*/*.json
python3 $H/oomtie.py $OUT/d*/traces-gpu-f27-16GiB/*.json.gz | tee -a $OUT/summary.txt
(cd $OUT && python3 $OLDPWD/$H/gaps.py ROWS d*/traces-gpu-f27-16GiB/*.json.gz | sed -n '/lost %/,$p') | tee -a $OUT/summary.txt
