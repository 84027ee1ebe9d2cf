"""The launch/device-sync ties lost, by call and row: whether a family's share
is the family's or its call's (machine's). A path's first directory names its
call (as gaps.sh unpacks them: a = runs/h200-2026-12-05, b = -05b; c1-c3).

    python3 bycall.py CALL/.../TRACE.json.gz ...
"""
import collections, re, sys

sys.path.insert(0, __file__.rsplit('/', 1)[0] + '/../h200-2026-12-05')
from calls import load, ties  # noqa: E402

by = collections.defaultdict(lambda: [0, 0])
for p in sys.argv[1:]:
    call = p.lstrip('./').split('/')[0].replace('run', '')
    fam = re.findall(r'f\d+', p)[-1]
    lim = '16GiB' if '16GiB' in p else 'whole'
    w = re.search(r'-w(\d+)(-[rs]\d+)?\.json', p).group(1)
    for l, s, gl, gs in ties([e for e in load(p) if e.get('ph') != 'M']):
        for k in ((call, fam, lim, w), (call, fam, '*', '*')):
            by[k][0] += 1
            by[k][1] += not s['args']['waited']
for k in sorted(by):
    t, lost = by[k]
    print('%-4s %-4s %-5s %s  %4d ties  %3d lost  %5.1f %%' % (*k, t, lost, 100 * lost / t))
