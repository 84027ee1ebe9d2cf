# Step 3 (README.md): DRAWS draws of f28's grids on the emulated device, both
# limits, every design at 1-4 workers (gpuprove/contention_grid.sh, traced),
# then each grid's draws against the committed prediction (compare.py).
#   K=build/cuzk OUT=DIR DRAWS=3 bash docs/runs/emu-2026-12-05e/grid.sh
set -u
P=docs/runs/emu-2026-12-05e/pred
for D in $(seq 1 ${DRAWS:-3}); do
  CUZK=$K OUT=$OUT/d$D BACKEND=emu FAMILIES=f28 LIMITS="16GiB 140GiB" TRACES=1 DESIGN_TIMEOUT=120 \
    gpuprove/contention_grid.sh
done
for lim in 16GiB 140GiB; do
  echo "== f28 $lim"
  python3 docs/predictions/contention/draws/compare.py "$P/sim-f28-$lim.txt" "$OUT"/d*/emu-f28-$lim.txt
done
