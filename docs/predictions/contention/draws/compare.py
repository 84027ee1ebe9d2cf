"""Compare predicted rows with the mean of several card runs of the same rows.

    python3 compare.py PREDICTED.txt RUN.txt [RUN.txt ...]

PREDICTED is a `cuzk bench contention --backend sim --seeds N` table (its .err
beside it gives the seeds' range of items/s); each RUN is a `--backend gpu`
table of the same family and limit. For every design and worker count that
the runs have, prints the card's draws (their mean, standard deviation, least
and most), the prediction, the error of the prediction against the card's mean
(prediction / mean - 1), the difference in GPU busy, in points, how many of
the draws' standard errors the prediction lies from their mean (se: sd / √n;
a row whose draws split between two outcomes has a wide one), and in how
many draws an OOM came against in how many seeds; then the rows' median and
largest |error| against the means and the largest busy difference, in
contention_errors.sh's words, and the rows whose OOM shares (draws, seeds)
differ by more than a half. Two columns test each row as two samples, the
draws against the seeds: z, the prediction's distance from the draws' mean
in the standard error of the difference of two means (the draws' sd / √n and
the seeds' sd / √seeds, the seeds' sd from the .err; none with one draw, whose spread is unknown), and the two-sided
p-value of Fisher's exact test on the OOM counts (draws with one against
seeds with one); the summary names the rows beyond |z| 2 and p 0.05.
"""
import math, os, re, statistics as S, sys

def fisher(a, n, b, m):
    """Two-sided p-value of Fisher's exact test: a of n against b of m."""
    k, total = a + b, n + m
    def pr(x):
        return math.comb(n, x) * math.comb(m, k - x) / math.comb(total, k)
    lo, hi = max(0, k - m), min(k, n)
    p0 = pr(a)
    return min(1.0, sum(pr(x) for x in range(lo, hi + 1) if pr(x) <= p0 * (1 + 1e-9)))

def table(path):
    rows = {}
    for line in open(path):
        f = line.split()
        if len(f) > 8 and f[1].isdigit() and f[3].endswith('%'):
            rows[(f[0], int(f[1]))] = (float(f[2]), float(f[3].rstrip('%')), int(f[7]) + int(f[8]) > 0)
    return rows

def seed_ranges(path):
    err = path[:-4] + '.err'
    out = {}
    if os.path.exists(err):
        for line in open(err):
            m = re.match(r'(\S+) × (\d+): (\d+) seeds, items/s ([\d.]+) to ([\d.]+) \(sd ([\d.]+)\).*an OOM in (\d+) of them', line)
            if m:
                out[(m[1], int(m[2]))] = (float(m[4]), float(m[5]), int(m[7]), int(m[3]), float(m[6]))
    return out

pred, runs = table(sys.argv[1]), [table(p) for p in sys.argv[2:]]
ranges = seed_ranges(sys.argv[1])
print('%-14s %2s %5s %18s %6s %6s %7s %14s %8s %7s %6s  %-15s %6s %6s' % ('design', 'w', 'draws', 'card mean ± sd', 'least', 'most',
      'pred', 'seeds', 'error', 'busy Δ', 'in se', 'OOM draws/seeds', 'z', 'OOM p'))
errs, dbusy, ooms, zs, ps = [], [], [], [], []
for key in sorted({k for r in runs for k in r}, key=lambda k: (list(pred).index(k) if k in pred else 99, k)):
    ips = [r[key][0] for r in runs if key in r]
    busy = [r[key][1] for r in runs if key in r]
    if key not in pred:
        continue
    oom = sum(r[key][2] for r in runs if key in r)
    p, pb, poom = pred[key]
    lo, hi, soom, seeds, ssd = ranges.get(key, (p, p, int(poom), 1, 0))
    sd = S.stdev(ips) if len(ips) > 1 else 0
    se = sd / len(ips) ** 0.5
    inse = '%+6.1f' % ((p - S.mean(ips)) / se) if se > 0 else '     -'
    se2 = (se ** 2 + ssd ** 2 / seeds) ** 0.5
    z = (p - S.mean(ips)) / se2 if se2 > 0 and len(ips) > 1 else None  # one draw: its spread unknown
    pf = fisher(oom, len(ips), soom, seeds)
    print('%-14s %2d %5d %11.2f ± %4.2f %6.2f %6.2f %7.2f %6.2f–%-6.2f %+7.1f%% %+6.1f %s  %-15s %6s %6.3f' % (key[0], key[1], len(ips),
          S.mean(ips), sd, min(ips), max(ips), p, lo, hi, (p / S.mean(ips) - 1) * 100, pb - S.mean(busy), inse,
          '%d/%d %d/%d' % (oom, len(ips), soom, seeds), '%+6.1f' % z if z is not None else '-', pf))
    if z is not None and abs(z) > 2:
        zs.append('%s/%d (%+.1f)' % (key[0], key[1], z))
    if pf < 0.05:
        ps.append('%s/%d (p %.3f)' % (key[0], key[1], pf))
    if abs(oom / len(ips) - soom / seeds) > 0.5:
        ooms.append('%s/%d (draws %d/%d, seeds %d/%d)' % (key[0], key[1], oom, len(ips), soom, seeds))
    errs.append(abs(p / S.mean(ips) - 1) * 100)
    dbusy.append(abs(pb - S.mean(busy)))
if errs:
    print('%d rows against the mean of their draws: throughput error median %.1f %%, max %.1f %%; GPU busy within %.1f points'
          % (len(errs), S.median(errs), max(errs), max(dbusy)))
    print('OOM shares differing by more than a half: %s' % ('; '.join(ooms) if ooms else 'none'))
    print('rows whose draws and seeds differ (|z| > 2): %s; OOM counts (Fisher p < 0.05): %s' % (
        '; '.join(zs) if zs else 'none', '; '.join(ps) if ps else 'none'))
