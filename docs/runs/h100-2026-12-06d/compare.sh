# The H100's porep-sha 2^26 rows on the whole card in place against the profiles'
# predictions (16 seeds' mean; OOMs and fallbacks of seed 1). Configurations: j1 one job
# under 54 GiB (runs/h100-2026-12-06c c2, c4), j2 two jobs at once under 54 GiB (this
# round's c1), j2g72 two jobs under 72 GiB (c2, never run before it). Profiles:
#   f30dev — committed before c1 (predictions/h100-porepsha64m-card-jobs2-predicted.txt):
#            blind on c1's rows, post hoc on the one-job rows
#   alone  — f30dev with stages_alone: made after c1
#   w1cal  — c2's: calibrated on c2's one-worker run of j2 at 2^26, in the call, before its
#            rows (c2/pred.txt): blind on c2's rows, post hoc on c1's; blind on c3's
#            (predictions/h100-porepsha64m-w1cal-jobs3-predicted.txt, committed before c3) and
#            on c4's one job (predictions/h100-porepsha64m-w1cal-jobs1-predicted.txt, committed
#            before c4; the configuration of runs/h100-2026-12-06c c2 and c4, on another machine)
#   K=build/cuzk bash docs/runs/h100-2026-12-06d/compare.sh > docs/runs/h100-2026-12-06d/compare.txt
K=${K:-build/cuzk}; P=docs/predictions; C=docs/runs/h100-2026-12-06c; D=docs/runs/h100-2026-12-06d
PROFS=${PROFS:-"f30dev:j1=$P/h100-porepsha64m-card-f30dev-job.json,j2=$P/h100-porepsha64m-card-f30dev-jobs2-job.json
alone:j1=$P/h100-porepsha64m-card-alone-job.json,j2=$P/h100-porepsha64m-card-alone-jobs2-job.json
w1cal:j2=$P/h100-porepsha64m-w1cal-jobs2-job.json,j2g72=$P/h100-porepsha64m-w1cal-jobs2-g72-job.json,j3=$P/h100-porepsha64m-w1cal-jobs3-job.json,j1=$P/h100-porepsha64m-w1cal-jobs1-job.json"}
BLIND=${BLIND:-"f30dev:c1 w1cal:c2,c3,c4"}
RUNS=${RUNS:-"c2/06c=j1=$C/c2/summary.txt c4/06c=j1=$C/c4/summary.txt c1=j2=$D/c1/summary.txt c2=j2g72=$D/c2/summary.txt c3=j3=$D/c3/summary.txt c4=j1=$D/c4/summary.txt"}
T=$(mktemp -d)
for prof in $PROFS; do
  n=${prof%%:*}
  for cs in $(echo ${prof#*:} | tr , ' '); do
    cfg=${cs%%=*}; s=${cs#*=}
    for w in 2 3 4; do for d in single split-first split-devsync split budget; do
      m=$($K sim --scenario $s --design $d --workers $w --seeds 16 | sed -n 3p)
      o=$($K sim --scenario $s --design $d --workers $w | awk '/^OOM/ {print $2 "/" $NF}' | tr -d '(')
      echo "$n $cfg $d $w $m $o" >> $T/pred.txt
    done; done
  done
done
python3 - $T/pred.txt "$BLIND" $RUNS <<'PY'
import re, sys
pred, names = {}, []
for line in open(sys.argv[1]):
    f = line.split()
    n, cfg, d, w, part_s, busy, oom = f[0], f[1], f[2], int(f[3]), float(f[6]), float(f[9]), f[-1]
    pred[(n, cfg, d, w)] = (10 / part_s, busy, oom)  # s/job: a job's 10 partitions, as bench prove prints it
    if n not in names:
        names.append(n)
blind = {}
for b in sys.argv[2].split():
    n, runs = b.split(':')
    blind[n] = set(r for r in runs.split(',') if r)
rows = []
for spec in sys.argv[3:]:
    run, cfg, path = spec.split('=', 2)
    for line in open(path):
        m = re.match(r'\s+(single|split-first|split-devsync|split|budget)\s+(\d)\s+card\s+([\d.]+)\s+(\d+)%.*?\s(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/(\d+)\s', line)
        if m and m[8] == m[9] and m[2] != '1':  # every partition verified; not the calibration
            rows.append((run, cfg, m[1], int(m[2]), float(m[3]), int(m[4]), '%s/%s/%s' % (m[5], m[6], m[7])))
print('%-6s %-5s %-14s %2s %6s %5s %-8s | %s' % ('run', 'cfg', 'design', 'w', 's/job', 'busy', 'OOM/f/r', ' | '.join('%-6s s/job  err   busy oom/fb' % n for n in names)))
errs = {n: {} for n in names}
busy_off = {n: {} for n in names}
order = {'j1': 0, 'j2': 1, 'j2g72': 2, 'j3': 3}
for run, cfg, d, w, sj, busy, oom in sorted(rows, key=lambda r: (order.get(r[1], 9), r[3], r[2], r[0])):
    cells = []
    for n in names:
        if (n, cfg, d, w) not in pred:
            cells.append('%-28s' % ' -')
            continue
        ps, pb, po = pred[(n, cfg, d, w)]
        e = (ps / sj - 1) * 100
        b = run in blind.get(n, ())
        for k in (('blind', cfg) if b else (cfg,)):
            errs[n].setdefault(k, []).append(abs(e))
            busy_off[n].setdefault(k, []).append(abs(pb - busy))
        cells.append('%s%5.2f %+5.1f%% %4.1f %-5s' % ('*' if b else ' ', ps, e, pb, po))
    print('%-6s %-5s %-14s %2d %6.2f %4d%% %-8s | %s' % (run, cfg, d, w, sj, busy, oom, ' | '.join(cells)))
print('* blind: predicted before the row ran')
for n, e in errs.items():
    for k, v in e.items():
        v, b = sorted(v), sorted(busy_off[n][k])
        print('%-6s %-6s rows %2d: median |err| %.1f %%, max %.1f %%, within 10 %%: %d, within 5 %%: %d; busy within 3 points: %d, max %.1f' % (
            n, k, len(v), v[len(v) // 2], v[-1], sum(x <= 10 for x in v), sum(x <= 5 for x in v), sum(x <= 3 for x in b), b[-1]))
PY
rm -r $T
