# Sourced by gaps.sh, oomtie.sh and race_fit.sh: unpacks the card traces and
# draw tables of runs/h200-2026-12-05 (a<call>/) and -05b (b<call>/) into a
# fresh $T (removed on exit) and defines
#   once GLOB   the split-devsync traces at 3-4 workers whose directory matches
#               traces-gpu-GLOB, each once by its content (runs/h200-2026-12-05's
#               c2 archive holds c1's F25 draws again: the warm machine's /tmp),
#               as paths under $T.
T=$(mktemp -d); trap 'rm -rf $T' EXIT
for c in c1 c2; do mkdir -p $T/a$c; tar xzf docs/runs/h200-2026-12-05/$c/run.tgz -C $T/a$c; done
mkdir -p $T/ac3; tar xzf docs/runs/h200-2026-12-05/c3/traces.tgz -C $T/ac3; cp -r docs/runs/h200-2026-12-05/c3/tables/d* $T/ac3/
for c in c1 c2 c3; do mkdir -p $T/b$c; tar xzf docs/runs/h200-2026-12-05b/$c/draws.tgz -C $T/b$c; done
mkdir -p $T/bc2run; tar xzf docs/runs/h200-2026-12-05b/c2/run.tgz -C $T/bc2run
once() { (cd $T && find . -path "*/d*/traces-gpu-$1" -name "trace-split-devsync-w[34]*.json*" | sort | xargs md5sum | sort -s -k1,1 -u | awk '{print $2}' | sort); }
