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

    python3 ties.py --dispersion TRACE.json[.gz] ...

asks instead whether the share of ties lost (by outcome) differs between the
measured rows more than one share allows: Pearson's chi-square of the rows'
lost counts against the pooled share, and the fraction of 20,000 shuffles of
whole traces among the rows of the same worker count (each row keeping its
number of traces) whose chi-square is as large; then the same chi-square
across single traces of 8 ties or more (binomial: about its degrees of
freedom).
"""
import collections, gzip, json, random, re, statistics as S, sys

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
            # The call: the mark's time less the op's own and, where the
            # trace has it (late_us), its completion's wait for the worker.
            call = (e['pid'], e['tid'], part, e['ts'] - e['args'].get('took_us', 0) - e['args'].get('late_us', 0),
                    e['args'].get('waited'), e['args'].get('late_us'))
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
                        gap=gs - gl, launch=l[3] - gl, sync=s[3] - gs, stage=stage, late=l[5], synclate=s[5]))
    return sorted(out, key=lambda t: t['at'])

def group(path):
    m = re.search(r'traces-(gpu|sim|emu)-', path)
    fam = re.search(r'(f\d+)', path.split('/traces-')[-1] if '/traces-' in path else path)
    lim = re.search(r'(\d+GiB)(-[A-Za-z][A-Za-z0-9]*)?/', path) or re.search(r'(\d+GiB)()', path)
    w = re.search(r'-w(\d)', path)
    # A traces directory may end in -TAG (traces-gpu-f25-16GiB-gogcoff/): a
    # condition of its own, kept apart.
    return (m[1] if m else 'gpu', fam[1] if fam else '?', (lim[1] + (lim[2] or '')) if lim else '?', 'w' + (w[1] if w else '?'))

def main(paths):
    by = collections.defaultdict(list)
    traces = collections.Counter()
    for p in paths:
        traces[group(p)] += 1
        for i, t in enumerate(ties(p)):
            t['first'] = i == 0
            by[group(p)].append(t)
    print('%-4s %-5s %-15s %-3s %6s %5s %15s %17s %18s' % ('', 'fam', 'limit', 'w', 'traces', 'ties', 'lost by time', 'did not wait', 'first: not waited'))
    order = lambda k: (k[0], int(k[1][1:]) if k[1][1:].isdigit() else 0, k[2], k[3])
    for k in sorted(by, key=order):
        v = by[k]
        timed = [t for t in v if t['timed']]
        bytime = '%4d (%5.1f%%)' % (sum(t['lost'] for t in timed), 100 * sum(t['lost'] for t in timed) / len(timed)) if timed else '-'
        nw = sum(t['nowait'] for t in v)
        first = [t for t in v if t['first']]
        print('%-4s %-5s %-15s %-3s %6d %5d %15s %4d (%5.1f%%) %11d of %d' % (k + (traces[k], len(v), bytime, nw, 100 * nw / len(v),
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
        if any(t['late'] is not None for t in sel):
            print('  %14s completions\' wait for their worker (late_us): the launch\'s %s, the sync\'s %s' % ('', q('late'), q('synclate')))

def chi2(rows):
    """Pearson's chi-square of each row's lost ties against the pooled share;
    a row is a list of (ties, lost) per trace."""
    n = sum(t for r in rows for t, _ in r)
    p = sum(k for r in rows for _, k in r) / n
    out = 0.0
    for r in rows:
        rn, rk = sum(t for t, _ in r), sum(k for _, k in r)
        if rn:
            out += (rk - rn * p) ** 2 / (rn * p * (1 - p))
    return out

def dispersion(paths, shuffles=20000):
    by = collections.defaultdict(list)
    for p in paths:
        k = group(p)
        if k[0] == 'sim':
            continue
        t = ties(p)
        by[k].append((len(t), sum(x['nowait'] for x in t)))
    rng = random.Random(1)
    for label, keep in (('rows of 3-4 workers', lambda k: k[3] in ('w3', 'w4')), ('all rows', lambda k: True)):
        keys = sorted(k for k in by if keep(k) and sum(t for t, _ in by[k]))
        rows = [by[k] for k in keys]
        seen = chi2(rows)
        strata = collections.defaultdict(list)
        for i, k in enumerate(keys):
            strata[k[3]].append(i)
        larger = 0
        for _ in range(shuffles):
            new = list(rows)
            for idx in strata.values():
                pool = [tr for i in idx for tr in rows[i]]
                rng.shuffle(pool)
                j = 0
                for i in idx:
                    new[i] = pool[j:j + len(rows[i])]
                    j += len(rows[i])
            larger += chi2(new) >= seen
        n = sum(t for r in rows for t, _ in r)
        k = sum(x for r in rows for _, x in r)
        print('%s: %d rows, %d traces, %d ties, lost %d (%.1f %%); chi-square %.1f on %d degrees of freedom; '
              'shuffles of traces among rows as large: %.3f' % (label, len(rows), sum(map(len, rows)), n, k, 100 * k / n,
                                                               seen, len(rows) - 1, larger / shuffles))
    single = [[tr] for v in by.values() for tr in v if tr[0] >= 8]
    print('single traces of 8 ties or more: %d, chi-square %.1f on %d degrees of freedom'
          % (len(single), chi2(single), len(single) - 1))

if __name__ == '__main__':
    if sys.argv[1:2] == ['--dispersion']:
        dispersion(sys.argv[2:])
    else:
        main(sys.argv[1:])
