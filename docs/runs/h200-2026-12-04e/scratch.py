"""Which claim on the pool wins after split-devsync's lost ties, and which
partitions are retried.

    python3 scratch.py TRACE.json[.gz] ...

Traces of split-devsync with 3-4 workers (the card's or the simulator's seeds,
`bench contention --trace-dir`). Two tables:

Retries: each retried attempt, by whether it had fallen back (a pre-stage that
found too little memory, allocated under compute_mtx, and whose kernel then
found no room for its scratch) or had been pre-staged normally (its own
kernel's scratch refused because another partition was staged meanwhile).

Lost ties: a worker's cudaDeviceSynchronize that did not wait (`waited`
false) with another worker's kernel launch within 1 ms of it; the sync then
cannot make the trim return that kernel's memory. What followed for the
syncing worker, whose trim, cudaMemGetInfo and cudaMallocAsync race the
launched kernel's scratch allocation:
  a  info-oom     cudaMemGetInfo already counted the scratch: pre-stage OOM
  b  malloc-oom   it did not, and the scratch took the memory before the
                  cudaMallocAsync did: pre-stage OOM at the allocation
  c  kernel-oom   the cudaMallocAsync took it first: the kernel's scratch
                  fails and its partition is retried
  d  both-fit     both fitted
and, where the trace has call times (the card's), the syncing worker's trim
call's start less the launch call's return, and its cudaMemGetInfo's (us).
"""
import collections, gzip, json, re, statistics, sys


def load(path):
    f = gzip.open(path, 'rt') if path.endswith('.gz') else open(path)
    try:
        return json.load(f)['traceEvents']
    except (ValueError, KeyError):
        return None


def group(path):
    m = re.search(r'traces-(\w+)-(f\d+)-(\w+)/trace-split-devsync-w(\d)', path)
    if m:
        return '%s %s %s w%s' % m.groups()
    m = re.search(r'(f\d+)-(\d+GiB).*split-devsync-w(\d)', path)
    return '%s %s w%s' % m.groups() if m else path


def call_start(e):
    a = e.get('args', {})
    return e['ts'] - a.get('took_us', 0) - a.get('late_us', 0)


def call_end(e):
    return e['ts'] - e.get('args', {}).get('late_us', 0)


def span(e):
    """A device call's start and end (call_start, call_end)."""
    return call_start(e), call_end(e)


def workers(events):
    """Whether an event is on a worker's thread, and the workers' marks
    (instant events: device calls, OOMs, retries, ...) in time order;
    stream_sync.py and orders.py read traces through these too."""
    threads = {(e['pid'], e['tid']): e['args']['name'] for e in events
               if e.get('ph') == 'M' and e['name'] == 'thread_name'}
    on_worker = lambda e: threads.get((e['pid'], e['tid']), '').startswith('worker')
    marks = sorted((e for e in events if e.get('ph') == 'i' and 'ts' in e and on_worker(e)), key=lambda e: e['ts'])
    return on_worker, marks


def analyse(ev):
    _, ev = workers(ev)
    retries, ties = collections.Counter(), []
    fell = set()
    for e in ev:
        p = e.get('args', {}).get('partition')
        if e['name'] == 'fallback':
            fell.add(p)
        elif e['name'] == 'retry':
            retries['fallback' if p in fell else 'staged'] += 1
            fell.discard(p)
    for i, e in enumerate(ev):
        if e['name'] != 'device_sync' or e['args'].get('waited'):
            continue
        me = e['tid']
        launches = [x for x in ev if x['name'] == 'compute' and x['tid'] != me and abs(x['ts'] - e['ts']) <= 1000]
        if not launches:
            continue
        launch = launches[0]
        after = [x for x in ev[i + 1:] if x['tid'] == me][:4]
        if len(after) < 3 or after[0]['name'] != 'trim_pool':
            continue
        if after[2]['name'] == 'OOM':
            kind = 'a info-oom'
        elif len(after) >= 4 and after[3]['name'] == 'OOM':
            kind = 'b malloc-oom'
        else:
            k = [x for x in ev if x['tid'] == launch['tid'] and x['ts'] > launch['ts'] and x['name'] in ('OOM', 'done', 'retry')][:1]
            kind = 'c kernel-oom' if k and k[0]['name'] == 'OOM' else 'd both-fit'
        ties.append((kind, call_start(after[0]) - call_end(launch), call_start(after[1]) - call_end(launch)))
    return retries, ties


def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]


def main(paths):
    retries = collections.defaultdict(collections.Counter)
    ties = collections.defaultdict(list)
    traces = collections.Counter()
    for path in paths:
        ev = load(path)
        if ev is None:
            print('skipped (not a whole trace):', path, file=sys.stderr)
            continue
        g = group(path)
        traces[g] += 1
        r, t = analyse(ev)
        retries[g].update(r)
        ties[g].extend(t)
    kinds = ['a info-oom', 'b malloc-oom', 'c kernel-oom', 'd both-fit']
    print('%-26s %6s %9s %7s   %s' % ('group', 'traces', 'retries', 'staged', 'lost ties: ' + ', '.join(kinds)))
    total_r, total_t = collections.Counter(), collections.Counter()
    for g in sorted(traces):
        c = collections.Counter(k for k, _, _ in ties[g])
        total_r.update(retries[g])
        total_t.update(c)
        print('%-26s %6d %9d %7d   %s' % (g, traces[g], sum(retries[g].values()), retries[g]['staged'],
                                          ' '.join('%4d' % c[k] for k in kinds)))
    n = sum(total_t.values())
    print('%-26s %6d %9d %7d   %s' % ('all', sum(traces.values()), sum(total_r.values()), total_r['staged'],
                                      ' '.join('%4d' % total_t[k] for k in kinds)))
    if n:
        print('lost ties, shares: ' + ', '.join('%s %.0f %%' % (k, 100 * total_t[k] / n) for k in kinds))
    every = [t for g in ties for t in ties[g]]
    for k in kinds:
        v = [t for t in every if t[0] == k]
        if len(v) >= 3:
            print('%-13s n=%3d  trim call start - launch return: p10 %6.0f  p50 %6.0f  p90 %6.0f us;'
                  '  mem_info call start - launch return: p10 %6.0f  p50 %6.0f  p90 %6.0f us' % (
                      k, len(v), q([x[1] for x in v], .1), q([x[1] for x in v], .5), q([x[1] for x in v], .9),
                      q([x[2] for x in v], .1), q([x[2] for x in v], .5), q([x[2] for x in v], .9)))


if __name__ == '__main__':
    main(sys.argv[1:])
