# porep-sha 2^24 (SIZES, default 16M), one worker, budget, on the whole card in the plan the 2^26 run
# takes on an H100 (points resident on the device, whole partitions, no MSM tables,
# whole MSM calls): the run the H100's porep-sha profile is fitted on.
#   OUT=$OUT LIMIT=150 [SIZES=4M,8M] bash docs/runs/h100-2026-12-06c/cal.sh
. docs/runs/preamble.sh
R=$(mktemp -d /tmp/cal.XXXX); mkdir -p $R/tr
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader 2>/dev/null)"
timeout $(left ${LIMIT:-150}) /usr/bin/time -v $K --verbose bench prove --backend gpu --circuit porep-sha --sizes ${SIZES:-16M} --keys memory \
  --designs budget --workers 1 --vram-limits 0 --key-tier device --layout whole --msm-tables off \
  --gnark-runs 0 --partition-runs 0 --trace-dir $R/tr > $R/ps24.txt 2> $R/ps24.err
say "porep-sha ${SIZES:-16M} budget w1 card (2^26's plan): $?"
grep -v "verifier done" $R/ps24.txt | grep -v $'\x1b' >> $OUT/summary.txt
grep -E -A7 "device memory plan|host memory" $R/ps24.err | grep -v "level=" | cut -c1-300 >> $OUT/summary.txt
grep -E "Maximum resident|Elapsed" $R/ps24.err >> $OUT/summary.txt
grep -v "WRN\|INF\|verifier done\|streamed msm" $R/ps24.err | gzip > $R/ps24.err.gz; rm $R/ps24.err
gzip $R/tr/*.json 2>/dev/null; tar czf $OUT/cal.tgz -C $R .
