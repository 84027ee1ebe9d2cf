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

from calls import began, load, pct, ties

out = collections.defaultdict(lambda: collections.defaultdict(list))
for path in sys.argv[1:]:
    lim = '16' if '16GiB' in path else 'whole'
    ev = [e for e in load(path) if e.get('ph') != 'M']
    for l, s, gl, gs in ties(ev):
        k = lim + (' won' if s['args']['waited'] else ' lost')
        out[k]['grant->launch call'].append(began(l) - gl)
        out[k]['grant->sync call'].append(began(s) - gs)
        out[k]['sync call - launch call'].append(began(s) - began(l))
for k in sorted(out):
    print(k, ' | '.join(f"{n}: n={len(v)} p10 {pct(v, .1):.0f} p50 {pct(v, .5):.0f} p90 {pct(v, .9):.0f}" for n, v in out[k].items()))
