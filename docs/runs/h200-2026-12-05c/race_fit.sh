# host.handoff.later_first fitted through the simulator (`bench contention
# calibrate --fit-only`, which fits it so since this round) from each family's
# calibration with its race runs (F24 and F25 from runs/h200-2026-12-05 c2,
# f26 from runs/h200-2026-12-05b c2); then, after the fact (the draws were
# made before this fit existed, but the fit reads none of them), the 16 GiB
# racing rows from each fitted profile (256 seeds) against every draw of
# those rows in the two rounds (each table once), and from the rounds'
# prediction profiles (the base's handoff) alike.
#   bash docs/runs/h200-2026-12-05c/race_fit.sh   (CUZK, default build/cuzk)
set -eu
CUZK=${CUZK:-build/cuzk}
. gpuprove/contention_families.sh
. docs/runs/h200-2026-12-05c/traces.sh
# tables FAMILY: the draws' 16 GiB tables of FAMILY, each once by its content.
tables() { (cd $T && find . -path "*/d*" -name "gpu-$1-16GiB.txt" | sort | xargs md5sum | sort -s -k1,1 -u | awk -v t=$T '{print t "/" $2}' | sort); }
for x in ac2:f24:docs/runs/h200-2026-12-05/pred ac2:f25:docs/runs/h200-2026-12-05/pred bc2run:f26:docs/runs/h200-2026-12-05b/pred; do
  IFS=: read -r run fam pred <<< "$x"
  d=$T/$run/cal-$fam; family $fam
  echo "== $fam"
  "$CUZK" bench contention calibrate --fit-only $COSTS $MEM --dir $d --out $T/fit-$fam.json 2>&1 | grep 'host.handoff'
  draws=$(tables $fam)
  for p in $T/fit-$fam.json $pred/h200-contention-$fam.json; do
    "$CUZK" bench contention --backend sim --profile $p --seeds 256 $MEM --vram-limit 16GiB \
      --designs split-devsync --workers 3,4 > $T/sim.txt 2> $T/sim.err
    echo "-- $(basename $(dirname $p))/$(basename $p), $(echo $draws | wc -w) draws:"
    python3 docs/predictions/contention/draws/compare.py $T/sim.txt $draws | grep -E '^split-devsync +[34] '
  done
done
