# Post hoc: c3's split-first and split rows with c3's own CPU side. c2's profile refitted
# through the simulator on c3's budget trace at 2 workers (the rows' machine; budget never
# OOMs there), then every design at 3 and 4 workers of three jobs under 54 GiB.
#   K=build/cuzk bash docs/runs/h100-2026-12-06d/c3cpu.sh > docs/runs/h100-2026-12-06d/c3cpu.txt
K=${K:-build/cuzk}; P=docs/predictions; D=docs/runs/h100-2026-12-06d
T=$(mktemp -d)
tar xzf $D/c3/p26.tgz -C $T ./tr/trace-budget-w2-card-log26.json.gz
python3 - $T <<'PY'
import json, sys
t = sys.argv[1]
s = json.load(open('docs/predictions/h100-porepsha64m-w1cal-jobs3-job.json'))
s['name'], s['design'], s['workers_per_device'] = 'c3-budget-w2-fit', 'budget', 2
json.dump(s, open(t + '/fit.json', 'w'))
s['profile'] = t + '/c3.json'
json.dump(s, open(t + '/jobs3.json', 'w'))
PY
$K sim calibrate --profile $D/c2/profile.json --trace $T/tr/trace-budget-w2-card-log26.json.gz --constraints 67108404 \
  --fit-scenario $T/fit.json --out $T/c3.json 2>&1 | grep -E "^(compute|finalize|prep|synthesize) "
for w in 3 4; do for d in budget split-first split split-devsync single; do
  echo "$d w$w $($K sim --scenario $T/jobs3.json --design $d --workers $w --seeds 16 | sed -n 3p | awk '{printf "%.2f s/job, busy %s", 10/$3, $6}')"
done; done
rm -r $T
