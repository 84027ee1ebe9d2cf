"""Launch/device-sync ties (calls.ties) by how the launching worker got
compute_mtx: taken in place (the lock span's in_place) or granted through the
lock actor (it was held when asked for), with the ties whose device sync did
not wait (lost), per trace directory.

    python3 grants.py TRACE.json[.gz] ...
"""
import collections, os, re, sys

sys.path.insert(0, __file__.rsplit('/', 1)[0] + '/../h200-2026-12-05')
from calls import load, ties  # noqa: E402

by = collections.defaultdict(collections.Counter)
for p in sys.argv[1:]:
    ev = [e for e in load(p) if e.get('ph') != 'M']
    in_place = {(e['args']['partition'], e['ts']): bool(e['args'].get('in_place'))
                for e in ev if e.get('ph') == 'X' and 'worker' in e.get('args', {}) and 'partition' in e['args']}
    # the trace's directories, less the draws' (d<i>) and the temporary ones
    row = '/'.join(d for d in os.path.dirname(p).split('/') if d and not re.fullmatch(r'd\d+', d))[-40:]
    for l, s, gl, gs in ties(ev):
        kind = 'in place' if in_place.get((l['args']['partition'], gl)) else 'through the actor'
        c = by[(row, kind)]
        c['ties'] += 1
        c['lost'] += not s['args']['waited']
print('%-40s %-18s %6s %6s' % ('traces', 'compute_mtx', 'ties', 'lost'))
for (row, kind), c in sorted(by.items()):
    print('%-40s %-18s %6d %6d' % (row, kind, c['ties'], c['lost']))
