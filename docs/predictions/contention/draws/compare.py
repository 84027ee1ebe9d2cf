"""Compare predicted rows with the mean of several card runs of the same rows.

    python3 compare.py PREDICTED.txt RUN.txt [RUN.txt ...]

PREDICTED is a `cuzk bench contention --backend sim --seeds N` table (its .err
beside it gives the seeds' range of items/s); each RUN is a `--backend gpu`
table of the same family and limit. For every design and worker count that
the runs have, prints the card's draws (their mean, standard deviation, least
and most), the prediction, the error of the prediction against the card's mean
(prediction / mean - 1) and the difference in GPU busy, in points; then the
rows' median and largest |error| against the means and the largest busy
difference, in contention_errors.sh's words.
"""
import os, re, statistics as S, sys

def table(path):
    rows = {}
    for line in open(path):
        f = line.split()
        if len(f) > 4 and f[1].isdigit() and f[3].endswith('%'):
            rows[(f[0], int(f[1]))] = (float(f[2]), float(f[3].rstrip('%')))
    return rows

def seed_ranges(path):
    err = path[:-4] + '.err'
    out = {}
    if os.path.exists(err):
        for line in open(err):
            m = re.match(r'(\S+) × (\d+): \d+ seeds, items/s ([\d.]+) to ([\d.]+)', line)
            if m:
                out[(m[1], int(m[2]))] = (float(m[3]), float(m[4]))
    return out

pred, runs = table(sys.argv[1]), [table(p) for p in sys.argv[2:]]
ranges = seed_ranges(sys.argv[1])
print('%-14s %2s %5s %18s %6s %6s %7s %14s %8s %7s' % ('design', 'w', 'draws', 'card mean ± sd', 'least', 'most',
      'pred', 'seeds', 'error', 'busy Δ'))
errs, dbusy = [], []
for key in sorted({k for r in runs for k in r}, key=lambda k: (list(pred).index(k) if k in pred else 99, k)):
    ips = [r[key][0] for r in runs if key in r]
    busy = [r[key][1] for r in runs if key in r]
    if key not in pred:
        continue
    p, pb = pred[key]
    lo, hi = ranges.get(key, (p, p))
    sd = S.stdev(ips) if len(ips) > 1 else 0
    print('%-14s %2d %5d %11.2f ± %4.2f %6.2f %6.2f %7.2f %6.2f–%-6.2f %+7.1f%% %+6.1f' % (key[0], key[1], len(ips),
          S.mean(ips), sd, min(ips), max(ips), p, lo, hi, (p / S.mean(ips) - 1) * 100, pb - S.mean(busy)))
    errs.append(abs(p / S.mean(ips) - 1) * 100)
    dbusy.append(abs(pb - S.mean(busy)))
if errs:
    print('%d rows against the mean of their draws: throughput error median %.1f %%, max %.1f %%; GPU busy within %.1f points'
          % (len(errs), S.median(errs), max(errs), max(dbusy)))
