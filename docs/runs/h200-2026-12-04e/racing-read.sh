# The racing rows as exp-latency.sh and latency-eval.sh predict and read them.
# predict_racing writes a directory of simulated split-devsync grids at 3-4
# workers (sim-<g>.txt and traces-sim-<g>/, g = f10|f22|f24|f25 - 16GiB|140GiB);
# read_racing reads one: the ties by outcome, the lost ties' outcomes, the fast
# and slow orders, and the racing rows against every card draw under $2.
# usage: . racing-read.sh; predict_racing SIM_DIR CUZK PREPARE; read_racing SIM_DIR CARD_DIR

# predict_racing SIM_DIR CUZK PREPARE: each family's prediction profile
# (deferred-trace's next/later-0.01, else v3) copied to SIM_DIR/p-<family>.json
# and handed to the shell function PREPARE (family, the profile's source, the
# copy) to change, then split-devsync at 3-4 workers on both limits, 16 seeds,
# with a trace of every seed.
predict_racing() {
  local T=$1 CUZK=$2 prepare=$3 P=docs/predictions/contention/deferred-trace f l src
  . gpuprove/contention_families.sh
  for f in f10 f22 f24 f25; do
    family $f
    src=$P/next/later-0.01/h200-contention-$f.json
    [ -f $src ] || src=$P/v3/h200-contention-$f.json
    cp $src $T/p-$f.json
    $prepare $f $src $T/p-$f.json
    for l in 140GiB 16GiB; do
      "$CUZK" bench contention --backend sim --profile $T/p-$f.json $MEM --vram-limit $l \
        --designs split-devsync --workers 3,4 --seeds 16 --trace-dir $T/traces-sim-$f-$l > $T/sim-$f-$l.txt 2>/dev/null
    done
  done
}

read_racing() {
  local T=$1 CARD=$2 R=docs/runs/h200-2026-12-04e g
  python3 docs/runs/h200-2026-12-04b/ties.py $T/traces-*/*.json 2>/dev/null | grep 'all:'
  python3 $R/scratch.py $T/traces-sim-f2[245]-16GiB/*.json | grep "^all\|shares"
  python3 $R/orders.py $T/traces-*-140GiB/*.json | grep "f10\|f24"
  for g in f10-16GiB f10-140GiB f22-16GiB f22-140GiB f24-16GiB f24-140GiB f25-16GiB f25-140GiB; do
    python3 docs/predictions/contention/draws/compare.py $T/sim-$g.txt $(ls "$CARD"/*/d*/gpu-$g.txt 2>/dev/null) 2>/dev/null |
      grep "^split-devsync   [34]" | awk -v g=$g '{for(i=1;i<=NF;i++) if ($i ~ /%$/) {print g, $2, $i, $(i+1); break}}'
  done | awk '{e=$3; gsub("%","",e); e=e+0; if(e<0)e=-e; s+=e; n++; if(e>m)m=e; b=$4+0; if(b<0)b=-b; if(b>mb)mb=b; printf "%s ", $0}
    END {printf "\nracing rows: mean |err| %.1f %%, max %.1f %%, busy max %.1f\n", s/n, m, mb}'
}
