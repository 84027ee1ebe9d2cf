# Calls A and B in one, for a session with time for one call: f30's calibration and
# its first draw of both grids, porep-sha 2^26 in place (porep.sh MODES=inplace), then
# f30's second draw of the grids that still fit before END (575 s).
#   OUT=$OUT [END=575] bash docs/runs/h200-2026-12-06/callC.sh
t00=$(date +%s)
since() { echo $(( $(date +%s) - t00 )); }
OUT=$OUT FAMS=f30 DRAWS=1 NEED_f30=${NEED_f30:-100} LIMIT=300 bash docs/runs/h200-2026-12-05/call.sh > /dev/null
E=${END:-575}; keep=$(( E >= 560 ? 135 : 0 ))  # room kept for the second draw's first grid
MODES=inplace LIMIT=$(( E - keep - $(since) )) bash docs/runs/h200-2026-12-06/porep.sh
OUT=$OUT FAMS=f30 CAL=0 DRAWS=2 NEED_f30=${NEED_f30:-100} LIMIT=$(( E - $(since) )) bash docs/runs/h200-2026-12-05/call.sh > /dev/null
cat $OUT/summary.txt
