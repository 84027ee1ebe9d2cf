# The same one-worker porep-sha run N times over, each its own process, on one machine:
# whether a synthesis's time moves from process to process with nothing set differently
# (runs/h100-2026-12-06f, "Syntheses"). Traces come back in $OUT/syn.tgz; read their
# synthesize spans' medians with that README's snippet.
#   OUT=$OUT [SIZE=16M] [N=4] [LIMIT=200] bash docs/runs/atsize/synspread.sh
. docs/runs/preamble.sh
export GOMEMLIMIT=100GiB
R=$(mktemp -d /tmp/syn.XXXX)
say "$($K version | head -1) $(sha256sum $K | cut -c1-16); $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
for i in $(seq 1 ${N:-4}); do
  [ $(left ${LIMIT:-200}) -lt ${NEED:-45} ] && { say "stopped before p$i"; break; }
  timeout $(left ${LIMIT:-200}) $K bench prove --backend gpu --circuit porep-sha --sizes ${SIZE:-16M} --keys memory --designs budget \
    --workers 1 --jobs 2 --host-mem-limit 24GiB --gnark-runs 0 --partition-runs 0 --trace-dir $R/p$i > $R/p$i.txt 2> $R/p$i.err
  say "p$i: $? $(grep '^bench: budget' $R/p$i.err | cut -c1-420)"
done
gzip $R/*/*.json $R/*.err 2>/dev/null; tar czf $OUT/syn.tgz -C $R .
