# The 2^26 rows on the H100 (c2: 3 workers; c4: 2, 4 and 3 again) against each
# H100 porep-sha profile's prediction (16 seeds' mean; OOMs of seed 1):
#   card  — committed before c2 (h100-porepsha64m-card-w3-predicted.txt): blind at w3
#   sizes — committed before c4 (h100-porepsha64m-card-sizes-predicted.txt): blind at w2, w4
#   f30dev — post hoc: sizes with the H100's device figures from f30's contention calibration
#   K=build/cuzk bash docs/runs/h100-2026-12-06c/compare.sh > docs/runs/h100-2026-12-06c/compare.txt
# Two jobs at once (the next call's rows, "The next call" in README.md), against
# the jobs-2 predictions of sizes and f30dev, both committed before that call:
#   JOBS=2 K=build/cuzk bash docs/runs/h100-2026-12-06c/compare.sh CALL/summary.txt
K=${K:-build/cuzk}; D=docs/runs/h100-2026-12-06c; P=docs/predictions
T=$(mktemp -d)
if [ "${JOBS:-1}" = 2 ]; then
  PROFS="sizes:$P/h100-porepsha64m-card-sizes-jobs2-job.json f30dev:$P/h100-porepsha64m-card-f30dev-jobs2-job.json"
  BLIND="sizes:2,3,4 f30dev:2,3,4"; SUMMARIES="$*"
else
  PROFS="card:$P/h100-porepsha64m-card-w3-job.json sizes:$P/h100-porepsha64m-card-sizes-job.json f30dev:$P/h100-porepsha64m-card-f30dev-job.json"
  BLIND="card:3 sizes:2,4 f30dev:"; SUMMARIES="$D/c2/summary.txt $D/c4/summary.txt"
fi
for prof in $PROFS; do
  n=${prof%%:*}; s=${prof#*:}
  for w in 2 3 4; do for d in single split-first split-devsync split budget; do
    m=$($K sim --scenario $s --design $d --workers $w --seeds 16 | sed -n 3p)
    o=$($K sim --scenario $s --design $d --workers $w | awk '/^OOM/ {print $2 "/" $NF}' | tr -d '(')
    echo "$n $d $w $m $o" >> $T/pred.txt
  done; done
done
python3 - $T/pred.txt "$BLIND" $SUMMARIES <<'PY'
import os, re, sys
pred, names = {}, []
for line in open(sys.argv[1]):
    f = line.split()
    n, d, w, part_s, busy, oom = f[0], f[1], int(f[2]), float(f[5]), float(f[8]), f[-1]
    pred[(n, d, w)] = (10 / part_s, busy, oom)  # s/job: a job's 10 partitions, as bench prove prints it
    if n not in names:
        names.append(n)
blind = {}
for b in sys.argv[2].split():
    n, ws = b.split(':')
    blind[n] = {int(w) for w in ws.split(',') if w}
rows = []
for path in sys.argv[3:]:
    run = os.path.basename(os.path.dirname(path))
    for line in open(path):
        m = re.match(r'\s+(single|split-first|split-devsync|split|budget)\s+(\d)\s+card\s+([\d.]+)\s+(\d+)%.*?\s(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/(\d+)\s', line)
        if m and m[8] == m[9]:  # every partition verified
            rows.append((run, m[1], int(m[2]), float(m[3]), int(m[4]), '%s/%s/%s' % (m[5], m[6], m[7])))
print('%-4s %-14s %2s %6s %5s %-7s | %s' % ('run', 'design', 'w', 's/job', 'busy', 'OOM/f/r', ' | '.join('%-6s s/job  err   busy oom/fb' % n for n in names)))
errs = {n: {'blind': [], 'all': []} for n in names}
for run, d, w, sj, busy, oom in sorted(rows, key=lambda r: (r[2], r[1], r[0])):
    cells = []
    for n in names:
        ps, pb, po = pred[(n, d, w)]
        e = (ps / sj - 1) * 100
        b = w in blind[n] and not (n == 'card' and d == 'split-devsync')
        errs[n]['all'].append(abs(e))
        if b:
            errs[n]['blind'].append(abs(e))
        cells.append('%s%5.2f %+5.1f%% %4.1f %-5s' % ('*' if b else ' ', ps, e, pb, po))
    print('%-4s %-14s %2d %6.2f %4d%% %-7s | %s' % (run, d, w, sj, busy, oom, ' | '.join(cells)))
print('* blind: committed before the row ran (split-devsync w3 had run once before the card profile: not blind)')
for n, e in errs.items():
    for k in ('blind', 'all'):
        v = sorted(e[k])
        if v:
            print('%-6s %-5s rows %2d: median |err| %.1f %%, max %.1f %%, within 10 %%: %d' % (n, k, len(v), v[len(v) // 2], v[-1], sum(x <= 10 for x in v)))
PY
rm -r $T
