# Call 3, by the card that comes: on an H200, docs/runs/atsize/atsize.sh (porep-sha 2^26
# on the whole card calibrated at size in the call, then split-devsync's racing draws);
# on an H100, two porep-sha 2^26 jobs at once under 16 GiB and a GATE GiB host gate (36: two
# partitions on the host, the CPU side bounds), every design at 2-4 workers, against the
# predictions of call 1's profile committed before this call
# (predictions/h100-porepsha64m-16g-w1cal-jobs2-g${GATE:-36}-predicted.txt). As run
# (d089b72) the script did what docs/runs/atsize/rows.sh does now, its archive named c3.tgz.
#   OUT=$OUT [END=560] [GATE=36] bash docs/runs/h100-2026-12-06e/c3.sh
VRAM=16 JOBS=2 GATE=${GATE:-36} PRED=docs/predictions/h100-porepsha64m-16g-w1cal-jobs2-g${GATE:-36}-predicted.txt END=${END:-560} \
  exec bash docs/runs/atsize/rows.sh
