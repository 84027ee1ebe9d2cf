"""Which handoff a lost launch/device-sync tie was: the mem lock granted first,
or the launching goroutine late.

    python3 ties.py TRACE.json.gz ...

Card traces of split-devsync at 3-4 workers, or the simulator's (a path names
its family, f<N>, its limit, 16GiB or not, and its workers, -w<N>.json, or
-w<N>-s<seed>.json and -w<N>-r<run>.json as `bench contention` names its seeds
and runs). A tie is a launch (the `compute` call) and another worker's
cudaDeviceSynchronize whose calls began within 300 us of each other; it is
lost when the sync did not wait for the kernel. Of each tie, the gap from the
launching worker's compute-lock grant to the syncing worker's mem-lock grant:
negative, the mem lock granted first (in the model, the handoff's
1 - newest_first); otherwise a lost tie is the launching goroutine reaching
the device after a sync granted later (later_first). In the simulator a
handoff's two grants fall at one instant, whichever lock runs first, so its
lost ties all count as the second kind.
Prints, by family, limit and workers, the ties, the lost ones, and each kind's count
and share of the ties, then every lost tie's gap and delays (us).
"""
import re, sys

sys.path.insert(0, __file__.rsplit('/', 1)[0] + '/../h200-2026-12-05')
from calls import began, load, ties  # noqa: E402

rows = []
for path in sys.argv[1:]:
    fam = re.findall(r'f\d+', path)[-1]  # the last: a temporary directory's name may hold one too
    lim = '16GiB' if '16GiB' in path else 'whole'
    w = re.search(r'-w(\d+)(-[rs]\d+)?\.json', path).group(1)
    ev = [e for e in load(path) if e.get('ph') != 'M']
    for l, s, gl, gs in ties(ev):
        rows.append(dict(grid=(fam, lim, w), lost=not s['args']['waited'], gap=gs - gl,
                         launch=began(l) - gl, sync=began(s) - gs, path=path))

print('%-5s %-6s %2s %6s %6s %18s %18s' % ('fam', 'limit', 'w', 'ties', 'lost', 'mem lock first', 'launch late'))
for g in sorted({r['grid'] for r in rows}):
    r = [x for x in rows if x['grid'] == g]
    lost = [x for x in r if x['lost']]
    first = sum(1 for x in lost if x['gap'] < 0)
    late = len(lost) - first
    print('%-5s %-6s %2s %6d %6d %9d (%4.1f %%) %9d (%4.1f %%)' % (*g, len(r), len(lost), first, 100 * first / len(r), late, 100 * late / len(r)))
r, lost = rows, [x for x in rows if x['lost']]
first = sum(1 for x in lost if x['gap'] < 0)
print('%-15s %6d %6d %9d (%4.1f %%) %9d (%4.1f %%)' % ('all', len(r), len(lost), first, 100 * first / len(r), len(lost) - first, 100 * (len(lost) - first) / len(r)))
print('handoffs with the mem lock granted first, lost or not: %d of %d' % (sum(1 for x in rows if x['gap'] < 0), len(rows)))
print('\nlost ties: family limit workers, mem grant - compute grant, compute grant -> launch call, mem grant -> sync call (us)')
for x in lost:
    print('  %s %-5s %s %6.0f %6.0f %6.0f' % (*x['grid'], x['gap'], x['launch'], x['sync']))
