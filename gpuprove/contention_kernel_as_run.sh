#!/usr/bin/env bash
# In-sample diagnosis of a measured contention grid: each row predicted again
# with the profile's kernel set to the median kernel that row's run measured
# (its trace), so that what is left is the model's error, not the run-to-run
# length of the synthetic kernel. Environment: D, G, CUZK, FAMILIES (below).
set -u
# D: the refitted profiles and where the tables go; G: the measured grid (tables and TRACES=1 traces).
D=${D:-docs/predictions/contention/insample-f56}; G=${G:-docs/runs/h200-2026-12-01f/f3/grid}
CUZK=${CUZK:-build/cuzk}
. gpuprove/contention_families.sh
for fam in ${FAMILIES:-f5 f6}; do family $fam; for lim in 140GiB 16GiB; do
  out=$D/kernel-as-run-$fam-$lim.txt; first=1
  for des in ${DESIGNS//,/ }; do for w in 1 2 3 4; do
    t=$G/traces-gpu-$fam-$lim/trace-$des-w$w.json.gz
    k=$(zcat $t | python3 -c "
import json,sys
d=json.load(sys.stdin)['traceEvents']
c=sorted(e['dur'] for e in d if e.get('name')=='compute' and e.get('ph')=='X'); print(c[len(c)//2]/1e3)")
    python3 -c "
import json,sys
p=json.load(open('$D/h200-contention-$fam.json')); p['stages']['compute']['per_constraint_ns']=$k*1e6/1048576
json.dump(p,open('/tmp/kp.json','w'))"
    "$CUZK" bench contention --backend sim --profile /tmp/kp.json --seeds 16 $MEM --vram-limit $lim --designs $des --workers $w > /tmp/kp.txt 2>/dev/null
    if [ $first = 1 ]; then head -2 /tmp/kp.txt > $out; first=0; fi
    tail -1 /tmp/kp.txt >> $out
  done; done
  gpuprove/contention_errors.sh $out $G/gpu-$fam-$lim.txt > $D/errors-kernel-as-run-$fam-$lim.txt
  echo "$fam $lim: $(tail -1 $D/errors-kernel-as-run-$fam-$lim.txt)"
done; done
