# The model's racing rows against host.handoff.later_first: for each family's
# profile (F24, F25: runs/h200-2026-12-05's pred/; f26: runs/h200-2026-12-05b's
# pred/) and each later_first in LFS, split-devsync at 3 and 4 workers, 16 GiB
# and the whole card, SEEDS seeds traced: the ties lost (ties.py, as the card's
# are counted), the 16 GiB rows' seeds with an OOM, the whole card's items/s.
#   bash docs/runs/h200-2026-12-05c/sweep.sh   (LFS, SEEDS, CUZK)
set -eu
CUZK=${CUZK:-build/cuzk}
. gpuprove/contention_families.sh
printf '%-4s %6s | %-27s | %-13s | %-11s\n' fam lf 'ties lost: 16GiB w3 w4, whole w3 w4' '16GiB OOM w3/w4' 'whole items/s w3/w4'
for spec in "f24 docs/runs/h200-2026-12-05/pred/h200-contention-f24.json" \
            "f25 docs/runs/h200-2026-12-05/pred/h200-contention-f25.json" \
            "f26 docs/runs/h200-2026-12-05b/pred/h200-contention-f26.json"; do
  set -- $spec; family $1
  for lf in ${LFS:-0 0.005 0.01 0.02 0.03 0.06}; do
    T=$(mktemp -d)
    python3 docs/predictions/contention/setfield.py $2 $T/p.json host.handoff.later_first $lf > /dev/null
    for lim in 16GiB 140GiB; do
      "$CUZK" bench contention --backend sim --profile $T/p.json --seeds ${SEEDS:-256} $COSTS $MEM --vram-limit $lim \
        --designs split-devsync --workers 3,4 --constraints 1048576 --trace-dir $T/traces-sim-$1-$lim > $T/$lim.txt 2>&1
    done
    lost=$(python3 docs/runs/h200-2026-12-05b/ties.py $T/traces-sim-*/trace-split-devsync-w*.json | sed -n '2,5p' | awk '{printf "%.1f ", 100*$5/$4}')
    oom=$(grep -o 'an OOM in [0-9]* of them' $T/16GiB.txt | awk '{printf "%s/", $4}')
    ips=$(awk '$1=="split-devsync" && $2 ~ /^[0-9]+$/ {printf "%s/", $3}' $T/140GiB.txt)
    printf '%-4s %6s | %-27s | %-13s | %-11s\n' $1 $lf "$lost" "${oom%/} of ${SEEDS:-256}" "${ips%/}"
    rm -rf $T
  done
done
