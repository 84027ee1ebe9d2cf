# Call 2 of round h200-2026-12-05b (README.md): a family not run before
# (f26), calibrated and drawn in one call: `bench contention calibrate
# --runs 1 --race 3` and one draw of its grids, 16 GiB and the whole card
# (runs/h200-2026-12-05's call.sh, into $OUT/run.tgz), then draws of its
# racing rows (racing.sh, into $OUT/draws.tgz) until 540 s into the call.
#   OUT=$OUT bash docs/runs/h200-2026-12-05b/family.sh
start=$(date +%s)
OUT=$OUT FAMS=${FAM:-f26} DRAWS=1 NEED_f26=${NEED_f26:-110} LIMIT=${GRID_LIMIT:-400} bash docs/runs/h200-2026-12-05/call.sh
OUT=$OUT FAMS=${FAM:-f26} LIMIT=$(( ${LIMIT:-540} - ($(date +%s) - start) )) NEED=${NEED:-25} bash docs/runs/h200-2026-12-05b/racing.sh
