# Call 2, by the card that comes: on an H200, docs/runs/atsize/atsize.sh (porep-sha 2^26
# on the whole card calibrated at size in the call, then split-devsync's racing draws);
# on an H100, two porep-sha 2^26 jobs at once under 16 GiB and a 72 GiB host gate (four
# partitions on the host), every design at 2-4 workers, against the predictions of call
# 1's profile committed before this call
# (predictions/h100-porepsha64m-16g-w1cal-jobs2-predicted.txt). As run (0ebf035) the
# script did what docs/runs/atsize/rows.sh does now, its archive named c2.tgz.
#   OUT=$OUT [END=580] bash docs/runs/h100-2026-12-06e/c2.sh
VRAM=16 JOBS=2 GATE=72 PRED=docs/predictions/h100-porepsha64m-16g-w1cal-jobs2-predicted.txt END=${END:-580} \
  exec bash docs/runs/atsize/rows.sh
