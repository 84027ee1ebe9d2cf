"""After a kernel's scratch did not fit: the failing worker's next stream sync.

    python3 stream_sync.py TRACE.json[.gz] ...

For each kernel failure (an OOM event of 0 bytes on a worker), the worker's
next stream_sync: was another worker's pool call (trim_pool, malloc_async)
in progress when it was made, and did the sync return when that call ended
(within 300 us)? With none in progress, did it return within 1 ms?
(sim: stream_sync_waits_pool.)
"""
import collections, sys

from scratch import load, span, workers


def main(paths):
    c = collections.Counter()
    for path in paths:
        events = load(path)
        if events is None:
            continue
        _, ev = workers(events)
        pool = [(span(e), e['name'], e['tid']) for e in ev if e['name'] in ('trim_pool', 'malloc_async')]
        for i, e in enumerate(ev):
            if e['name'] != 'OOM' or e['args'].get('bytes', 1) != 0:
                continue
            nxt = [x for x in ev[i + 1:] if x['tid'] == e['tid'] and x['name'] == 'stream_sync'][:1]
            if not nxt:
                continue
            s0, s1 = span(nxt[0])
            held = [(t0, t1, n) for (t0, t1), n, tid in pool if tid != e['tid'] and t0 <= s0 < t1 - 100]
            if not held:
                c['no pool call in progress: returned %s' % ('within 1 ms' if s1 - s0 < 1000 else 'later')] += 1
                continue
            t0, t1, n = held[0]
            c['%s in progress: returned %s' % (n, 'with its end' if abs(s1 - t1) <= 300 else ('before' if s1 < t1 else 'after'))] += 1
    for k, v in sorted(c.items()):
        print('%-50s %d' % (k, v))


if __name__ == '__main__':
    main(sys.argv[1:])
