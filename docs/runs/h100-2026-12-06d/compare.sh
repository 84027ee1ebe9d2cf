# The H100's porep-sha 2^26 rows in place: one job (runs/h100-2026-12-06c c2, c4) and two
# jobs at once (this round's c1), against the profiles' predictions (16 seeds' mean; OOMs
# and fallbacks of seed 1):
#   f30dev — committed before c1 (docs/predictions/h100-porepsha64m-card-jobs2-predicted.txt):
#            blind on c1's rows, post hoc on c2 and c4's
#   alone  — f30dev with stages_alone (a stage copies a alone only while no kernel runs,
#            the whole partition beside one): made after every row here
#   K=build/cuzk bash docs/runs/h100-2026-12-06d/compare.sh > docs/runs/h100-2026-12-06d/compare.txt
# PROFS="name:one-job-scenario:two-job-scenario ..." and BLIND="name:run,run" choose others;
# RUNS="run=jobs=summary ..." other rows.
K=${K:-build/cuzk}; P=docs/predictions; C=docs/runs/h100-2026-12-06c; D=docs/runs/h100-2026-12-06d
PROFS=${PROFS:-"f30dev:$P/h100-porepsha64m-card-f30dev-job.json:$P/h100-porepsha64m-card-f30dev-jobs2-job.json alone:$P/h100-porepsha64m-card-alone-job.json:$P/h100-porepsha64m-card-alone-jobs2-job.json"}
BLIND=${BLIND:-"f30dev:j2c1 alone:"}
RUNS=${RUNS:-"c2=1=$C/c2/summary.txt c4=1=$C/c4/summary.txt j2c1=2=$D/c1/summary.txt"}
T=$(mktemp -d)
for prof in $PROFS; do
  IFS=: read -r n s1 s2 <<< "$prof"
  for j in 1 2; do s=$s1; [ $j = 2 ] && s=$s2
    for w in 2 3 4; do for d in single split-first split-devsync split budget; do
      m=$($K sim --scenario $s --design $d --workers $w --seeds 16 | sed -n 3p)
      o=$($K sim --scenario $s --design $d --workers $w | awk '/^OOM/ {print $2 "/" $NF}' | tr -d '(')
      echo "$n $j $d $w $m $o" >> $T/pred.txt
    done; done
  done
done
python3 - $T/pred.txt "$BLIND" $RUNS <<'PY'
import re, sys
pred, names = {}, []
for line in open(sys.argv[1]):
    f = line.split()
    n, j, d, w, part_s, busy, oom = f[0], int(f[1]), f[2], int(f[3]), float(f[6]), float(f[9]), f[-1]
    pred[(n, j, d, w)] = (10 / part_s, busy, oom)  # s/job: a job's 10 partitions, as bench prove prints it
    if n not in names:
        names.append(n)
blind = {}
for b in sys.argv[2].split():
    n, runs = b.split(':')
    blind[n] = set(r for r in runs.split(',') if r)
rows = []
for spec in sys.argv[3:]:
    run, jobs, path = spec.split('=', 2)
    for line in open(path):
        m = re.match(r'\s+(single|split-first|split-devsync|split|budget)\s+(\d)\s+card\s+([\d.]+)\s+(\d+)%.*?\s(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/(\d+)\s', line)
        if m and m[8] == m[9]:  # every partition verified
            rows.append((run, int(jobs), m[1], int(m[2]), float(m[3]), int(m[4]), '%s/%s/%s' % (m[5], m[6], m[7])))
print('%-4s %-14s %2s %6s %5s %-8s | %s' % ('run', 'design', 'w', 's/job', 'busy', 'OOM/f/r', ' | '.join('%-6s s/job  err   busy oom/fb' % n for n in names)))
errs = {n: {} for n in names}
busy_off = {n: [] for n in names}
for run, j, d, w, sj, busy, oom in sorted(rows, key=lambda r: (r[1], r[3], r[2], r[0])):
    cells = []
    for n in names:
        ps, pb, po = pred[(n, j, d, w)]
        e = (ps / sj - 1) * 100
        b = run in blind[n]
        for k in (('blind', 'all') if b else ('all',)):
            errs[n].setdefault(k, []).append(abs(e))
        errs[n].setdefault('jobs %d' % j, []).append(abs(e))
        busy_off[n].append(abs(pb - busy))
        cells.append('%s%5.2f %+5.1f%% %4.1f %-5s' % ('*' if b else ' ', ps, e, pb, po))
    print('%-4s %-14s %2d %6.2f %4d%% %-8s | %s' % (run, d, w, sj, busy, oom, ' | '.join(cells)))
print('* blind: committed before the row ran')
for n, e in errs.items():
    for k, v in e.items():
        v = sorted(v)
        print('%-6s %-6s rows %2d: median |err| %.1f %%, max %.1f %%, within 10 %%: %d, within 5 %%: %d' % (n, k, len(v), v[len(v) // 2], v[-1], sum(x <= 10 for x in v), sum(x <= 5 for x in v)))
    b = sorted(busy_off[n])
    print('%-6s busy   rows %2d: within 3 points %d, median %.1f, max %.1f' % (n, len(b), sum(x <= 3 for x in b), b[len(b) // 2], b[-1]))
PY
rm -r $T
