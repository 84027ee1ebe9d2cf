"""A `bench contention` table from its runs' traces.

    python3 tables.py TRACES_DIR [DESIGNS...] > gpu-<family>-<limit>.txt

For each trace-<design>-w<n>.json[.gz] in TRACES_DIR, the row the bench
printed for that run: items/s (partitions proved over the time from the job's
acceptance to its end), GPU busy (the union of the workers' compute stages
over that time), partitions proved and failed, retries, OOMs before the
fallback and in it (an OOM of a partition that has fallen back in the same
attempt), fallbacks and device waits. Call 3 of this round ran more draws
than a call's files may bring back; its traces came back whole, its tables
are made again here (on the draws whose tables came back, the same to the
last digit of items/s and busy: see README.md).
"""
import glob, os, re, sys

from calls import load


def union(spans):
    total, cur = 0.0, None
    for s, e in sorted(spans):
        if cur is None or s > cur[1]:
            if cur:
                total += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    return total + (cur[1] - cur[0] if cur else 0)


def row(path):
    ev = load(path)
    acc = end = None
    proved = failed = retries = fallbacks = waited = oom_pre = oom_fall = 0
    busy, fell = [], set()
    for e in sorted((e for e in ev if e.get('ph') != 'M'), key=lambda e: e['ts']):
        n, a = e.get('name', ''), e.get('args', {})
        if n.startswith('accepted '):
            acc = e['ts']
        elif n.startswith('done '):  # the job's end ("done <job>"), not a partition's ("done")
            end = e['ts']
        elif n == 'done':
            proved += 1
        elif n == 'failed':
            failed += 1
        elif n == 'retry':
            retries += 1
            fell.discard(a.get('partition'))
        elif n == 'fallback':
            fallbacks += 1
            fell.add(a.get('partition'))
        elif n == 'OOM':
            if a.get('partition') in fell:
                oom_fall += 1
            else:
                oom_pre += 1
        elif n == 'compute' and e.get('ph') == 'X':  # the compute stage (the launch is an instant)
            busy.append((e['ts'], e['ts'] + e['dur']))
        if 'took_us' in a and a.get('waited'):
            waited += 1
    wall = (end - acc) / 1e6
    return proved / wall, 100 * union(busy) / (end - acc), proved, failed, retries, oom_pre, oom_fall, fallbacks, waited


d = sys.argv[1]
print('         design  workers  items/s  GPU busy  proved  failed  retries  OOM pre-stage  OOM fallback  fallbacks  waited ops')
for path in sorted(glob.glob(os.path.join(d, 'trace-*-w*.json*'))):
    m = re.match(r'trace-(.+)-w(\d)(-r\d+)?\.json', os.path.basename(path))
    if not m or m[3] or (len(sys.argv) > 2 and m[1] not in sys.argv[2:]):
        continue
    r = row(path)
    print('%15s %8s %8.2f %8.1f%% %7d %7d %8d %14d %13d %10d %11d' % ((m[1], m[2]) + r))
