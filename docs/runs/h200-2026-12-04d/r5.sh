# Fifth call: F22's split-devsync at 2-4 workers, both limits, three fresh
# draws (r2.sh with FAMS=f22), against
# docs/predictions/contention/deferred-trace/v2-f22-after-trim (committed before).
FAMS=f22 LIMIT=${LIMIT:-200} bash docs/runs/h200-2026-12-04d/r2.sh
