# The ties of runs/h200-2026-12-05 and -05b's card traces as three host
# latencies (gaps.py): by row, then from each family's calibration race runs;
# what made each tie (kinds.py); the share by call (bycall.py).
#   bash docs/runs/h200-2026-12-05c/gaps.sh
set -eu
T=$(mktemp -d); trap 'rm -rf $T' EXIT
for c in c1 c2; do mkdir -p $T/a$c; tar xzf docs/runs/h200-2026-12-05/$c/run.tgz -C $T/a$c; done
mkdir -p $T/ac3; tar xzf docs/runs/h200-2026-12-05/c3/traces.tgz -C $T/ac3
for c in c1 c2 c3; do mkdir -p $T/b$c; tar xzf docs/runs/h200-2026-12-05b/$c/draws.tgz -C $T/b$c; done
mkdir -p $T/bc2run; tar xzf docs/runs/h200-2026-12-05b/c2/run.tgz -C $T/bc2run
G=docs/runs/h200-2026-12-05c/gaps.py
# runs/h200-2026-12-05's c2 archive holds c1's F25 draws again (the warm
# machine's /tmp): each trace once, by its content.
once() { (cd $T && find . -path "*/d*/traces-gpu-*" -name "trace-split-devsync-w[34]*.json*" | sort | xargs md5sum | sort -s -k1,1 -u | awk '{print $2}' | sort); }
(cd $T && python3 $OLDPWD/$G ROWS $(once))
echo
(cd $T && python3 $OLDPWD/$G CAL ac2/cal-f24 ac2/cal-f25 bc2run/cal-f26)
echo
(cd $T && python3 $OLDPWD/docs/runs/h200-2026-12-05c/kinds.py $(once))
echo
(cd $T && python3 $OLDPWD/docs/runs/h200-2026-12-05c/bycall.py $(once) | grep ' \* ')
