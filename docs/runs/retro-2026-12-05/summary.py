"""Sums up retro.sh's per-family comparisons (its TMP's now-*.txt and
then-*.txt): every row of every family, the racing rows (split-devsync at 3-4
workers, whose single draws are one of the ties' outcomes) apart.

    python3 docs/runs/retro-2026-12-05/summary.py TMP
"""
import glob, os, re, statistics as S, sys

def rows(path):
    out = []
    for line in open(path):
        f = line.split()
        if len(f) > 12 and f[1].isdigit() and f[10].endswith('%'):
            ooms = [l for l in f if re.fullmatch(r'\d+/\d+', l)]
            d, s = ooms[0].split('/'), ooms[1].split('/')
            out.append(dict(design=f[0], w=int(f[1]), draws=int(f[2]), err=float(f[10].rstrip('%')),
                            busy=float(f[11]), oom_draws=int(d[0]) / int(d[1]), oom_seeds=int(s[0]) / int(s[1]),
                            p=float(f[-1]), line=line.rstrip()))
    return out

tmp = sys.argv[1]
for which in ('now', 'then'):
    print('== %s' % ('this binary, refitted' if which == 'now' else 'the predictions committed before the card ran'))
    groups = {'racing (split-devsync w3-w4)': [], 'every other row': []}
    beyond = []
    for p in sorted(glob.glob(os.path.join(tmp, which + '-*.txt'))):
        fam, lim = re.match(r'.*/\w+-(f\d+)-(\d+GiB)\.txt', p).groups()
        for r in rows(p):
            racing = r['design'] == 'split-devsync' and r['w'] >= 3
            groups['racing (split-devsync w3-w4)' if racing else 'every other row'].append(r)
            # OOM yes/no: wrong where the card met one and no seed did, or
            # where one side has one in most runs and the other in none or
            # in less than half (a racing row's odds are read as odds).
            d, m = r['oom_draws'], r['oom_seeds']
            r['oom_wrong'] = (d > 0 and m == 0) or (d == 0 and m > 0.5) or (d == 1 and m < 0.5)
            if not racing and (abs(r['err']) > 5 or r['oom_wrong']) and which == 'now':
                beyond.append('%-4s %-6s %s' % (fam, lim, r['line']))
    for name, g in groups.items():
        if not g:
            continue
        e = [abs(r['err']) for r in g]
        racing = name.startswith('racing')
        print('%-30s %4d rows: throughput error median %.1f %%, max %.1f %%; within 5 %%: %d, within 10 %%: %d; GPU busy within %.1f points (median %.1f); %s' % (
            name, len(g), S.median(e), max(e), sum(x <= 5 for x in e), sum(x <= 10 for x in e),
            max(abs(r['busy']) for r in g), S.median(abs(r['busy']) for r in g),
            # A racing row's OOM is odds: its draws' count against its seeds'.
            'OOM counts beyond chance (Fisher p < 0.05) %d' % sum(r['p'] < 0.05 for r in g) if racing else
            'OOM yes/no off %d' % sum(r['oom_wrong'] for r in g)))
    for b in beyond:
        print('  ' + b)
