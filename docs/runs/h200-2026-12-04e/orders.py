"""Split-devsync's fast and slow orders, and the race at a kernel's end.

    python3 orders.py TRACE.json[.gz] ...

Traces of split-devsync with 3-4 workers (card or simulator). Per group
(family, limit, workers):

orders: each device sync that waited while another worker's kernel ran is F
when a third worker launched within 1 ms of its return (a partition was
staged beside that kernel: the fast order) and S when not (the slow order:
each pre-stage waits for the running kernel). Prints the F share and how
often a trace went from S to F and from F to S.

kernel-end race: kernels launched within 1 ms after another worker's waited
device sync returned (both at the end of the kernel before): how many ran
less than 8 ms longer than the family's nominal kernel, i.e. did not wait
behind the syncing worker's trim and growth (their scratch came first).
Kernel OOMs are left out.
"""
import collections, re, sys

from scratch import load, span, workers

NOMINAL_MS = {'f10': 140, 'f22': 95, 'f23': 55, 'f24': 120, 'f25': 70}


def main(paths):
    orders = collections.defaultdict(collections.Counter)
    race = collections.defaultdict(collections.Counter)
    for path in paths:
        events = load(path)
        if events is None:
            continue
        m = re.search(r'(f\d+)-(\d+GiB).*split-devsync-w(\d)', path)
        if not m:
            continue
        group = '%s %s w%s' % m.groups()
        worker, ev = workers(events)
        compute = {(e['tid'], e['args'].get('partition')): e['dur'] / 1000 for e in events
                   if e.get('ph') == 'X' and e['name'] == 'compute' and worker(e)}
        failed = {(e['tid'], e['args'].get('partition')) for e in ev if e['name'] == 'OOM' and e['args'].get('bytes', 1) == 0}
        launches = sorted((span(e)[1], e['tid'], e['args'].get('partition')) for e in ev if e['name'] == 'compute')
        ssyncs = [(span(e)[1], e['tid']) for e in ev if e['name'] == 'stream_sync']
        seq = ''
        for e in ev:
            if e['name'] != 'device_sync' or not e['args'].get('waited'):
                continue
            s0, s1 = span(e)
            running = None
            for t, tid, _ in launches:
                if tid == e['tid'] or t >= s0 + 50:
                    continue
                ends = [x for x, stid in ssyncs if stid == tid and x > t]
                if ends and min(ends) > s0 + 1000:
                    running = (tid, min(ends))
            after = [(t, tid, p) for t, tid, p in launches if tid != e['tid'] and 0 <= t - s1 <= 1000]
            if running:
                nxt = [t for t, tid, _ in launches if tid not in (e['tid'], running[0]) and t > running[1] - 200]
                seq += 'F' if nxt and min(nxt) - s1 < 1000 else 'S'
            if after:
                t, tid, p = after[0]
                if (tid, p) in failed or (tid, p) not in compute:
                    continue
                race[group]['launches'] += 1
                if compute[(tid, p)] - NOMINAL_MS.get(m.group(1), 0) < 8:
                    race[group]['did not wait'] += 1
        o = orders[group]
        o['traces'] += 1
        o['F'] += seq.count('F')
        o['S'] += seq.count('S')
        o['S->F'] += len(re.findall('SF', seq)) + seq.startswith('F')
        o['F->S'] += len(re.findall('FS', seq))
    print('%-16s %6s %5s %5s %6s %5s %5s   %s' % ('group', 'traces', 'F', 'S', 'F %', 'S->F', 'F->S', 'kernel-end race: did not wait / launches'))
    for g in sorted(set(orders) | set(race)):
        o, r = orders[g], race[g]
        n = o['F'] + o['S']
        print('%-16s %6d %5d %5d %5.0f%% %5d %5d   %d / %d' % (g, o['traces'], o['F'], o['S'], 100 * o['F'] / max(n, 1),
                                                        o['S->F'], o['F->S'], r['did not wait'], r['launches']))


if __name__ == '__main__':
    main(sys.argv[1:])
