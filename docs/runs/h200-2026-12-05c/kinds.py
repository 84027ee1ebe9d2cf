"""What made each launch/device-sync tie, from the card's JSON traces: whether
the launching worker A found compute_mtx free when it asked (its "wait
compute" span under 30 us) or queued for it, whether another worker's compute
hold ended just before A's grant (C-rel), and whose mem hold ended just before
the syncing worker's grant (A's own: the handoff of one handler, which
releases mem_mtx and then asks for compute_mtx). By family, then by row: each
kind's ties and (lost).

    python3 kinds.py TRACE.json.gz ...   (paths named as gaps.py's)
"""
import collections, re, sys

sys.path.insert(0, __file__.rsplit('/', 1)[0] + '/../h200-2026-12-05')
from calls import load, ties  # noqa: E402


def kinds(path):
    ev = load(path)
    thr = {(e['pid'], e['tid']): e['args']['name'] for e in ev if e.get('ph') == 'M' and e.get('name') == 'thread_name'}
    holds = collections.defaultdict(list)  # lock -> (grant, end, partition)
    waits = collections.defaultdict(list)  # (lock, partition) -> (request, wait)
    for e in ev:
        if e.get('ph') != 'X':
            continue
        t = thr.get((e['pid'], e['tid']), '')
        if t.startswith('lock '):
            holds[t[5:]].append((e['ts'], e['ts'] + e['dur'], e['args']['partition']))
        elif e['name'].startswith('wait '):
            waits[(e['name'][5:], e['args']['partition'])].append((e['ts'], e['dur']))
    for l, s, gl, gs in ties([e for e in ev if e.get('ph') != 'M']):
        pa, pb = l['args']['partition'], s['args']['partition']
        wa = [w for w in waits[('compute', pa)] if abs(w[0] + w[1] - gl) < 200]
        asked = 'free' if wa and wa[0][1] < 30 else 'queued'
        crel = any(h[1] <= gl + 1 and gl - h[1] < 300 and h[2] != pa for h in holds['compute'])
        relm = [h for h in holds['mem'] if h[1] <= gs + 1 and gs - h[1] < 300 and h[2] != pb]
        mem_by = 'A' if relm and relm[-1][2] == pa else ('other' if relm else 'none')
        yield f'{asked}/{"C-rel" if crel else "-"}/mem by {mem_by}', not s['args']['waited']


by, tot = collections.defaultdict(collections.Counter), collections.defaultdict(collections.Counter)
for p in sys.argv[1:]:
    row = (re.findall(r'f\d+', p)[-1], '16GiB' if '16GiB' in p else 'whole', re.search(r'-w(\d+)(-[rs]\d+)?\.json', p).group(1))
    for k, lost in kinds(p):
        for c in (by[row], tot[row[0]]):
            c[k] += 1
            c[k + ' lost'] += lost
show = lambda c: '  '.join(f'{k}: {c[k]} ({c[k + " lost"]})' for k in sorted(c) if not k.endswith('lost'))
for fam in sorted(tot):
    print(fam, show(tot[fam]))
for row in sorted(by):
    print('  %s %s w%s ' % row, show(by[row]))
