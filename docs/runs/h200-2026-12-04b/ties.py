"""The launch/device-sync ties of split-devsync traces, and which ones the card lost.

    python3 ties.py TRACE.json[.gz] ...

A tie, as `cuzk sim calibrate --race-trace` counts it (sim/calibrate_handoff.go):
a worker's kernel launch and another worker's cudaDeviceSynchronize starting
within 1 ms of each other, each within 1 ms of its grant (compute_mtx for the
launch, mem_mtx for the sync). It is lost when the worker granted later
reached the device first: the sync then does not wait for the kernel, and the
trim after it cannot return that kernel's memory.

Each trace is grouped by the family, limit and workers its path names
(traces-gpu-<family>-<limit>/trace-split-devsync-w<workers>.json, or
f10-*-<limit>-*/). Prints, per group, the ties and those lost (and of them the
run's first tie); then, for lost and kept ties, three host latencies: gap (the
sync's grant after the launch's), launch (the launching worker's grant to its
launch call) and sync (the syncing worker's grant to its sync call).
"""
import collections, gzip, json, re, statistics as S, sys

WINDOW_US = 1000.0

def events(path):
    f = gzip.open(path) if path.endswith('.gz') else open(path)
    return json.load(f)['traceEvents']

def ties(path):
    ev = events(path)
    threads = {(e['pid'], e['tid']): e['args']['name'] for e in ev if e.get('ph') == 'M' and e['name'] == 'thread_name'}
    grants = collections.defaultdict(list)
    launches, syncs = [], []
    for e in ev:
        part = e.get('args', {}).get('partition')
        th = threads.get((e['pid'], e.get('tid')), '')
        if e['ph'] == 'X' and th.startswith('lock '):
            grants[(th[5:], e['pid'], part)].append(e['ts'])
        elif e['ph'] == 'i' and e['name'] in ('compute', 'device_sync'):
            call = (e['pid'], e['tid'], part, e['ts'] - e['args'].get('took_us', 0))
            (launches if e['name'] == 'compute' else syncs).append(call)
    def granted(lock, c):
        before = [g for g in grants[(lock, c[0], c[2])] if g <= c[3]]
        return max(before) if before and c[3] - max(before) <= WINDOW_US else None
    out = []
    for s in syncs:
        near = [l for l in launches if l[0] == s[0] and l[1] != s[1] and abs(l[3] - s[3]) <= WINDOW_US]
        if not near:
            continue
        l = min(near, key=lambda l: abs(l[3] - s[3]))
        gl, gs = granted('compute', l), granted('mem', s)
        if gl is None or gs is None or gl == gs:
            continue
        out.append(dict(at=s[3], lost=(gl < gs) != (l[3] < s[3]), gap=gs - gl, launch=l[3] - gl, sync=s[3] - gs))
    return sorted(out, key=lambda t: t['at'])

def group(path):
    fam = re.search(r'(f\d+)', path.split('/traces-')[-1] if '/traces-' in path else path)
    lim = re.search(r'(\d+GiB)', path)
    w = re.search(r'-w(\d)', path)
    return (fam[1] if fam else '?', lim[1] if lim else '?', 'w' + (w[1] if w else '?'))

def main(paths):
    by = collections.defaultdict(list)
    for p in paths:
        for i, t in enumerate(ties(p)):
            t['first'] = i == 0
            by[group(p)].append(t)
    print('%-5s %-7s %-3s %5s %5s %7s %12s' % ('fam', 'limit', 'w', 'ties', 'lost', 'share', 'first: lost'))
    for k in sorted(by, key=lambda k: (int(k[0][1:]) if k[0][1:].isdigit() else 0, k[1], k[2])):
        v = by[k]; lost = sum(t['lost'] for t in v)
        first = [t for t in v if t['first']]
        print('%-5s %-7s %-3s %5d %5d %6.1f%% %6d of %d' % (k + (len(v), lost, 100 * lost / len(v), sum(t['lost'] for t in first), len(first))))
    allt = [t for v in by.values() for t in v]
    lost = sum(t['lost'] for t in allt)
    print('all: %d ties, %d lost (%.1f %%); first ties %d of %d lost' % (len(allt), lost, 100 * lost / len(allt),
          sum(t['lost'] for t in allt if t['first']), sum(t['first'] for t in allt)))
    print('\nhost latencies, µs: median (10th-90th percentile)')
    for name, sel in (('lost', [t for t in allt if t['lost']]), ('kept', [t for t in allt if not t['lost']])):
        def q(key):
            xs = sorted(t[key] for t in sel)
            return '%4.0f (%4.0f-%4.0f)' % (S.median(xs), xs[len(xs) // 10], xs[9 * len(xs) // 10])
        print('  %s, %3d ties: gap %s  launch %s  sync %s' % (name, len(sel), q('gap'), q('launch'), q('sync')))

if __name__ == '__main__':
    main(sys.argv[1:])
