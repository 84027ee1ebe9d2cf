# Step 2 (README.md): f28's grids predicted from step 1's one-worker runs
# alone, runs/h200-2026-12-05b's predict.sh (fit-only on designs/, probe/,
# ballast/, probe-ballast/; newest_first and later_first the base's), 64 seeds,
# committed before step 3 runs.
#   K=build/cuzk RUN=DIR bash docs/runs/emu-2026-12-05e/predict.sh
set -eu
P=docs/runs/emu-2026-12-05e/pred
FAMS=f28 CUZK=$K bash docs/runs/h200-2026-12-05b/predict.sh "$RUN" "$P"
rm -rf "$P/cal-f28"
for lim in 16GiB 140GiB; do echo "== $lim"; cat "$P/sim-f28-$lim.txt"; done
