# The ties of runs/h200-2026-12-05 and -05b's card traces as three host
# latencies (gaps.py): by row, then from each family's calibration race runs;
# what made each tie (kinds.py); the share by call (bycall.py).
#   bash docs/runs/h200-2026-12-05c/gaps.sh
set -eu
. docs/runs/h200-2026-12-05c/traces.sh
G=docs/runs/h200-2026-12-05c/gaps.py
(cd $T && python3 $OLDPWD/$G ROWS $(once "*"))
echo
(cd $T && python3 $OLDPWD/$G CAL ac2/cal-f24 ac2/cal-f25 bc2run/cal-f26)
echo
(cd $T && python3 $OLDPWD/docs/runs/h200-2026-12-05c/kinds.py $(once "*"))
echo
(cd $T && python3 $OLDPWD/docs/runs/h200-2026-12-05c/bycall.py $(once "*") | grep ' \* ')
