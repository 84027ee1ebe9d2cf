# oomtie.py on the card's 16 GiB racing traces of runs/h200-2026-12-05 and -05b
# (each trace once), then on the model's (F24, F25, f26 profiles of those
# rounds' predictions, 64 seeds traced).
#   bash docs/runs/h200-2026-12-05c/oomtie.sh   (CUZK, default build/cuzk)
set -eu
CUZK=${CUZK:-build/cuzk}
T=$(mktemp -d); trap 'rm -rf $T' EXIT
for c in c1 c2; do mkdir -p $T/a$c; tar xzf docs/runs/h200-2026-12-05/$c/run.tgz -C $T/a$c; done
mkdir -p $T/ac3; tar xzf docs/runs/h200-2026-12-05/c3/traces.tgz -C $T/ac3
for c in c1 c2 c3; do mkdir -p $T/b$c; tar xzf docs/runs/h200-2026-12-05b/$c/draws.tgz -C $T/b$c; done
mkdir -p $T/bc2run; tar xzf docs/runs/h200-2026-12-05b/c2/run.tgz -C $T/bc2run
O=docs/runs/h200-2026-12-05c/oomtie.py
echo "card:"
(cd $T && python3 $OLDPWD/$O $(find . -path "*/d*/traces-gpu-*16GiB*" -name "trace-split-devsync-w[34]*.json*" | sort | xargs md5sum | sort -s -k1,1 -u | awk '{print $2}'))
. gpuprove/contention_families.sh
for spec in "f24 docs/runs/h200-2026-12-05/pred/h200-contention-f24.json" \
            "f25 docs/runs/h200-2026-12-05/pred/h200-contention-f25.json" \
            "f26 docs/runs/h200-2026-12-05b/pred/h200-contention-f26.json"; do
  set -- $spec; family $1
  "$CUZK" bench contention --backend sim --profile $2 --seeds 64 $COSTS $MEM --vram-limit 16GiB \
    --designs split-devsync --workers 3,4 --constraints 1048576 --trace-dir $T/sim/traces-sim-$1-16GiB > /dev/null 2>&1
done
echo "model, 64 seeds:"
python3 $O $T/sim/traces-sim-*/*.json
