# Step 1 of the round (README.md): f28's one-command calibration on the build
# host's emulated device, as the card's calls run it (runs/h200-2026-12-05's
# call.sh) with the emulated device's free work (backend_flags emu):
# `bench contention calibrate --runs 1`, no race runs (the racing rows'
# prediction does not depend on later_first in place, runs/h200-2026-12-05d).
#   K=build/cuzk OUT=DIR bash docs/runs/emu-2026-12-05e/cal.sh
set -eu
. gpuprove/contention_families.sh
family f28
mkdir -p "$OUT"
"$K" version | head -1 > "$OUT/binary.txt"
"$K" bench contention calibrate --backend emu $COSTS $MEM $(backend_flags emu) --runs 1 \
  --dir "$OUT/cal-f28" --name emu-contention-f28 > "$OUT/cal-f28.txt" 2>&1
tail -5 "$OUT/cal-f28.txt"
