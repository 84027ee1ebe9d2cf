"""The copies of grid traces against a trim's copy-engine work
(docs/simulator.md, "A trim's work on the copy engine"): every host-to-device
copy that overlapped no other copy, by what came before it on its device:
the latest trim that released memory within 100 ms (the work the family's
figure leaves at the copy's start: figure x GiB released - time since the
trim), else whether the allocation it fills grew the pool (took > 2 ms) or
came from the pool's cache; each group's count, the copies' mean time beyond
their solo time at the family's link speed, and the work the model leaves.
Then the copies after trims by the GiB released and the time since.

    python3 trimcopies.py GBPS TRIM_MS_PER_GIB [--from-start] TRACE.json[.gz] ...

With --from-start the figure is the work from the trim's start (the model
since the trim's own host time was found to run inside that work), else from
its return (the model before).
"""
import gzip, json, statistics as S, sys

GIB = 1 << 30


def ops(path):
    f = gzip.open(path) if path.endswith('.gz') else open(path)
    out = []
    for e in json.load(f)['traceEvents']:
        a = e.get('args', {})
        if e.get('ph') == 'i' and 'took_us' in a and not a.get('error'):
            end = e['ts'] - (a.get('late_us') or 0)
            out.append(dict(name=e['name'], start=end - a['took_us'], end=end, bytes=a.get('bytes') or 0,
                            copied=a.get('copied') or 0, tid=e['tid'], dev=e['pid']))
    return sorted(out, key=lambda o: o['start'])


bw, work = float(sys.argv[1]) * 1e3, float(sys.argv[2])  # bytes a µs; ms a GiB
groups, bins = {}, {}
paths = sys.argv[3:]
from_start = bool(paths) and paths[0] == '--from-start'
if from_start:
    paths = paths[1:]
for path in paths:
    try:
        o = ops(path)
    except ValueError as e:  # a trace cut short (f17's 16 GiB split-first w4)
        print('%s: skipped, %s' % (path, e), file=sys.stderr)
        continue
    copies = [c for c in o if c['name'] == 'copy_in']
    for c in copies:
        if any(x is not c and x['start'] < c['end'] and x['end'] > c['start'] and x['dev'] == c['dev'] for x in copies):
            continue
        extra = (c['end'] - c['start'] - (c['copied'] or c['bytes']) / bw) / 1e3
        before = [x for x in o if x['dev'] == c['dev'] and x['end'] <= c['start'] + 1]
        trims = [x for x in before if x['name'] == 'trim_pool' and x['bytes'] > 0]
        left = 0.0
        if trims and c['start'] - trims[-1]['end'] < 100e3:
            t = trims[-1]
            gap, gib = (c['start'] - t['end']) / 1e3, t['bytes'] / GIB
            since = (c['start'] - t['start']) / 1e3 if from_start else gap
            left = max(0.0, work * gib - since)
            b = (int(gib // 4) * 4, gap < 10)
            bins.setdefault(b, []).append((extra, left))
        allocs = [x for x in before if x['tid'] == c['tid'] and x['name'] in ('malloc', 'malloc_async')]
        if left > 0.5:
            k = 'after a trim, its work left'
        elif not allocs:
            k = 'no allocation before it'
        elif allocs[-1]['end'] - allocs[-1]['start'] > 2000:
            k = 'into a growth, no trim work left'
        else:
            k = '%s from the cache' % allocs[-1]['name']
        groups.setdefault(k, []).append((extra, left))
for k in sorted(groups):
    v = groups[k]
    print('%-34s %5d copies: extra %6.2f ms mean, the model\'s trim work left %6.2f' % (k, len(v), S.mean(x[0] for x in v), S.mean(x[1] for x in v)))
print('after a trim, by GiB released and time since:')
for (g, near), v in sorted(bins.items()):
    print('  %2d-%2d GiB, %-8s %5d copies: extra %6.2f ms mean, work left %6.2f' % (g, g + 4, '< 10 ms' if near else '>= 10 ms', len(v), S.mean(x[0] for x in v), S.mean(x[1] for x in v)))
