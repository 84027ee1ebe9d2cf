"""Where a launch/device-sync tie is lost: how long each worker took from its
lock's grant to its device call.

    python3 ties_grant.py TRACE.json.gz ...

Card traces of split-devsync at 3-4 workers. For every launch (the `compute`
call) and another worker's cudaDeviceSynchronize whose calls began within
300 us of each other, by limit and by whether the sync waited for the kernel
(won: the launch came first) or not (lost): the launching worker's time from
its compute lock's grant to its launch call, the syncing worker's from its
mem lock's grant to its sync call, and the sync call's start less the
launch call's (us).
"""
import collections, sys

from calls import began, is_call, load, pct

out = collections.defaultdict(lambda: collections.defaultdict(list))
for path in sys.argv[1:]:
    lim = '16' if '16GiB' in path else 'whole'
    ev = [e for e in load(path) if e.get('ph') != 'M']
    # A lock's grant is a span on its lock's thread named "w<worker> <partition>".
    grants = collections.defaultdict(list)
    for e in ev:
        a = e.get('args', {})
        if e.get('ph') == 'X' and e['name'].startswith('w') and 'worker' in a and ' bench/' in e['name']:
            grants[a['partition']].append(e['ts'])

    def last_grant(e):
        """The latest grant to e's partition before its call began."""
        g = [t for t in grants[e['args']['partition']] if t <= began(e)]
        return max(g) if g else None

    launches = [e for e in ev if is_call(e, 'compute')]
    syncs = [e for e in ev if is_call(e, 'device_sync')]
    for l in launches:
        for s in syncs:
            if s['tid'] == l['tid'] or abs(began(s) - began(l)) >= 300:
                continue
            gl, gs = last_grant(l), last_grant(s)
            if gl is None or gs is None:
                continue
            k = lim + (' won' if s['args']['waited'] else ' lost')
            out[k]['grant->launch call'].append(began(l) - gl)
            out[k]['grant->sync call'].append(began(s) - gs)
            out[k]['sync call - launch call'].append(began(s) - began(l))
for k in sorted(out):
    print(k, ' | '.join(f"{n}: n={len(v)} p10 {pct(v, .1):.0f} p50 {pct(v, .5):.0f} p90 {pct(v, .9):.0f}" for n, v in out[k].items()))
