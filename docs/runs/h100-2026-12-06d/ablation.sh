# c2's profile with and without stages_alone (every other figure the same) against the
# two-job rows (c1: 54 GiB, c2: 72 GiB):
#   K=build/cuzk bash docs/runs/h100-2026-12-06d/ablation.sh > docs/runs/h100-2026-12-06d/ablation-stages-alone.txt
K=${K:-build/cuzk}; P=docs/predictions; D=docs/runs/h100-2026-12-06d
T=$(mktemp -d)
python3 - $T <<'PY'
import json, sys
t = sys.argv[1]
p = json.load(open('docs/runs/h100-2026-12-06d/c2/profile.json'))
p['partition']['stages_alone'] = False
json.dump(p, open(t + '/noalone.json', 'w'))
for n in ['h100-porepsha64m-w1cal-jobs2-g72-job.json', 'h100-porepsha64m-w1cal-jobs2-job.json']:
    s = json.load(open('docs/predictions/' + n))
    s['profile'] = t + '/noalone.json'
    json.dump(s, open(t + '/' + n, 'w'))
PY
PROFS="w1cal:j2=$P/h100-porepsha64m-w1cal-jobs2-job.json,j2g72=$P/h100-porepsha64m-w1cal-jobs2-g72-job.json
noalone:j2=$T/h100-porepsha64m-w1cal-jobs2-job.json,j2g72=$T/h100-porepsha64m-w1cal-jobs2-g72-job.json" \
BLIND="w1cal:c2" RUNS="c1=j2=$D/c1/summary.txt c2=j2g72=$D/c2/summary.txt" K=$K bash $D/compare.sh
rm -r $T
