"""The launch/device-sync ties of split-devsync traces, and which ones were lost.

    python3 ties.py TRACE.json[.gz] ...

A tie, as `cuzk sim calibrate --race-trace` counts it (sim/calibrate_handoff.go):
a worker's kernel launch and another worker's cudaDeviceSynchronize starting
within 1 ms of each other, each within 1 ms of its grant (compute_mtx for the
launch, mem_mtx for the sync). It is lost when the worker granted later
reached the device first: the sync then does not wait for the kernel, and the
trim after it cannot return that kernel's memory. Two readings of "lost":
by time (the card's traces: the worker granted later called first; the one
`--race-trace` fits `later_first` from) and by outcome (the sync did not wait,
its `waited` false). The simulator's traces put both grants and both calls at
one instant, so only the outcome reads there: it is what compares the model's
seeds (`bench contention --backend sim --seeds N --trace-dir`) with the card.

Each trace is grouped by the family, limit and workers its path names
(traces-<backend>-<family>-<limit>/trace-split-devsync-w<workers>[-r<i>|-s<i>].json,
or f10-*-<limit>-*/). Prints, per group, the traces, the ties, those lost by
time and by outcome (and of them the trace's first tie); then, for the card's
ties lost and kept by time, three host latencies: gap (the sync's grant after
the launch's), launch (the launching worker's grant to its launch call, and its
two parts: the grant to the worker's compute stage start, and that to the
call) and sync (the syncing worker's grant to its sync call).
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
    stages = collections.defaultdict(list)  # (pid, tid) → compute stage starts
    for e in ev:
        if e['ph'] == 'X' and e['name'] == 'compute' and threads.get((e['pid'], e.get('tid')), '').startswith('worker'):
            stages[(e['pid'], e['tid'])].append(e['ts'])
        part = e.get('args', {}).get('partition')
        th = threads.get((e['pid'], e.get('tid')), '')
        if e['ph'] == 'X' and th.startswith('lock '):
            grants[(th[5:], e['pid'], part)].append(e['ts'])
        elif e['ph'] == 'i' and e['name'] in ('compute', 'device_sync'):
            call = (e['pid'], e['tid'], part, e['ts'] - e['args'].get('took_us', 0), e['args'].get('waited'))
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
        if gl is None or gs is None:
            continue
        timed = gl != gs and l[3] != s[3]
        st = [x for x in stages[(l[0], l[1])] if gl <= x <= l[3]]
        stage = min(st) - gl if st else None  # the launching worker's compute stage start after its grant
        out.append(dict(at=s[3], lost=timed and (gl < gs) != (l[3] < s[3]), timed=timed, nowait=not s[4],
                        gap=gs - gl, launch=l[3] - gl, sync=s[3] - gs, stage=stage))
    return sorted(out, key=lambda t: t['at'])

def group(path):
    m = re.search(r'traces-(gpu|sim|emu)-', path)
    fam = re.search(r'(f\d+)', path.split('/traces-')[-1] if '/traces-' in path else path)
    lim = re.search(r'(\d+GiB)', path)
    w = re.search(r'-w(\d)', path)
    return (m[1] if m else 'gpu', fam[1] if fam else '?', lim[1] if lim else '?', 'w' + (w[1] if w else '?'))

def main(paths):
    by = collections.defaultdict(list)
    traces = collections.Counter()
    for p in paths:
        traces[group(p)] += 1
        for i, t in enumerate(ties(p)):
            t['first'] = i == 0
            by[group(p)].append(t)
    print('%-4s %-5s %-7s %-3s %6s %5s %15s %17s %18s' % ('', 'fam', 'limit', 'w', 'traces', 'ties', 'lost by time', 'did not wait', 'first: not waited'))
    order = lambda k: (k[0], int(k[1][1:]) if k[1][1:].isdigit() else 0, k[2], k[3])
    for k in sorted(by, key=order):
        v = by[k]
        timed = [t for t in v if t['timed']]
        bytime = '%4d (%5.1f%%)' % (sum(t['lost'] for t in timed), 100 * sum(t['lost'] for t in timed) / len(timed)) if timed else '-'
        nw = sum(t['nowait'] for t in v)
        first = [t for t in v if t['first']]
        print('%-4s %-5s %-7s %-3s %6d %5d %15s %4d (%5.1f%%) %11d of %d' % (k + (traces[k], len(v), bytime, nw, 100 * nw / len(v),
              sum(t['nowait'] for t in first), len(first))))
    for backend in sorted({k[0] for k in by}):
        allt = [t for k, v in by.items() if k[0] == backend for t in v]
        timed = [t for t in allt if t['timed']]
        nw = sum(t['nowait'] for t in allt)
        line = '%s, all: %d ties, did not wait %d (%.1f %%)' % (backend, len(allt), nw, 100 * nw / len(allt))
        if timed and backend != 'sim':
            lost = sum(t['lost'] for t in timed)
            line += '; lost by time %d of %d (%.1f %%)' % (lost, len(timed), 100 * lost / len(timed))
        print(line)
    allt = [t for k, v in by.items() if k[0] != 'sim' for t in v if t['timed']]
    if not allt:
        return
    print('\nhost latencies of the measured (not simulated) timed ties, µs: median (10th-90th percentile)')
    for t in allt:
        if t['stage'] is not None:
            t['call'] = t['launch'] - t['stage']
    for name, sel in (('lost', [t for t in allt if t['lost']]), ('kept', [t for t in allt if not t['lost']])):
        def q(key):
            xs = sorted(t[key] for t in sel if t.get(key) is not None)
            return '%4.0f (%4.0f-%4.0f)' % (S.median(xs), xs[len(xs) // 10], xs[9 * len(xs) // 10])
        print('  %s, %3d ties: gap %s  launch %s  sync %s' % (name, len(sel), q('gap'), q('launch'), q('sync')))
        print('  %14s the launch: grant to compute stage start %s, stage start to launch call %s' % ('', q('stage'), q('call')))

if __name__ == '__main__':
    main(sys.argv[1:])
