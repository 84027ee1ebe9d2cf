# The ties of runs/h200-2026-12-05 and -05b's card traces as three host
# latencies (gaps.py): by row, then from each family's calibration race runs.
#   bash docs/runs/h200-2026-12-05c/gaps.sh
set -eu
T=$(mktemp -d); trap 'rm -rf $T' EXIT
for c in c1 c2; do mkdir -p $T/a$c; tar xzf docs/runs/h200-2026-12-05/$c/run.tgz -C $T/a$c; done
mkdir -p $T/ac3; tar xzf docs/runs/h200-2026-12-05/c3/traces.tgz -C $T/ac3
for c in c1 c2 c3; do mkdir -p $T/b$c; tar xzf docs/runs/h200-2026-12-05b/$c/draws.tgz -C $T/b$c; done
mkdir -p $T/bc2run; tar xzf docs/runs/h200-2026-12-05b/c2/run.tgz -C $T/bc2run
G=docs/runs/h200-2026-12-05c/gaps.py
(cd $T && python3 $OLDPWD/$G ROWS $(find . -path "*/d*/traces-gpu-*" -name "trace-split-devsync-w[34]*.json*" | sort))
echo
(cd $T && python3 $OLDPWD/$G CAL ac2/cal-f24 ac2/cal-f25 bc2run/cal-f26)
