"""A whole-card racing draw's throughput against its first lost tie.

    python3 first_loss.py TABLE.txt ...

Each TABLE is a `bench contention --backend gpu` table of split-devsync at 3-4
workers on the whole card (gpu-<family>-140GiB.txt) with its traces beside it
(traces-gpu-<family>-140GiB/trace-split-devsync-w<N>.json.gz). For every row
of every table: the draw's items/s, its lost launch/device-sync ties of all
its ties (calls.ties), and when the first was lost (ms into the trace);
then, by row, the draws without a lost tie and those with one, with their
items/s.
"""
import collections, os, re, statistics as S, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'h200-2026-12-05'))
from calls import began, load, ties  # noqa: E402

rows = collections.defaultdict(list)
for path in sys.argv[1:]:
    fam = re.findall(r'f\d+', path)[-1]
    for line in open(path):
        f = line.split()
        if len(f) > 8 and f[0] == 'split-devsync' and f[1] in ('3', '4'):
            w = f[1]
            tr = os.path.join(os.path.dirname(path), f'traces-gpu-{fam}-140GiB', f'trace-split-devsync-w{w}.json.gz')
            ev = [e for e in load(tr) if e.get('ph') != 'M']
            t0 = min(e['ts'] for e in ev if 'ts' in e)
            tied = list(ties(ev))
            lost = sorted(began(l) - t0 for l, s, _, _ in tied if not s['args']['waited'])
            rows[(fam, w)].append((float(f[2]), len(lost), len(tied), lost[0] / 1e3 if lost else None))
for (fam, w), draws in sorted(rows.items()):
    draws.sort()
    print(f'{fam} whole w{w}: ' + ' '.join(f'{ips:.2f}:{n}/{k}' + (f'@{t:.0f}ms' if t is not None else '') for ips, n, k, t in draws))
    none = [d[0] for d in draws if d[1] == 0]
    some = [d[0] for d in draws if d[1] > 0]
    say = lambda v: f'{len(v)} draws' + (f', items/s {min(v):.2f}-{max(v):.2f} (mean {S.mean(v):.2f})' if v else '')
    print(f'    no lost tie: {say(none)}; a lost tie: {say(some)}')
