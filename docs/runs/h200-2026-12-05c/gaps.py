"""A launch/device-sync tie's outcome as three host latencies, from the card's
JSON traces: the gap from the launching worker's compute-lock grant to the
syncing worker's mem-lock grant, the launching chain (compute grant -> launch
call) and the syncing chain (mem grant -> cudaDeviceSynchronize call). A tie
is lost (the sync did not wait) when launch - sync > gap.

    python3 gaps.py ROWS TRACE.json.gz ...      by row: ties and lost share by gap,
                                                the three latencies' quantiles, and the
                                                share that independent draws of the
                                                row's own three latencies give
    python3 gaps.py CAL CAL-DIR ...             the same share from a calibration's
                                                race/ runs (whole card, 3 and 4 workers)

The independent draws hold for the runtime with lock hops (--lock-hops, the
runtime of this round). With free mutexes taken in place (runs/h200-2026-12-05d
on) the syncing worker's grant comes after the launch is enqueued, so the three
latencies depend on each other and the "indep." column says nothing there.

A path names its family (f<N>), its limit (16GiB or not) and its workers
(-w<N>.json, -w<N>-r<i>.json); ties as runs/h200-2026-12-05's calls.ties (300 us).
"""
import collections, glob, random, re, sys

sys.path.insert(0, __file__.rsplit('/', 1)[0] + '/../h200-2026-12-05')
from calls import began, load, pct, ties  # noqa: E402

BINS = [(-1e9, 0, '<0'), (0, 10, '0-10'), (10, 25, '10-25'), (25, 50, '25-50'), (50, 100, '50-100'), (100, 1e9, '100+')]


def samples(paths):
    """(gap, launch chain, sync chain, lost) of every tie in paths, us."""
    out = []
    for p in paths:
        ev = [e for e in load(p) if e.get('ph') != 'M']
        for l, s, gl, gs in ties(ev):
            out.append((gs - gl, began(l) - gl, began(s) - gs, not s['args']['waited']))
    return out


def independent(r, n=100000, seed=1):
    """The lost share when gap, launch and sync are drawn apart from r's."""
    g, ld, sd = [x[0] for x in r], [x[1] for x in r], [x[2] for x in r]
    rng = random.Random(seed)
    return sum(1 for _ in range(n) if rng.choice(ld) - rng.choice(sd) > rng.choice(g)) / n


def rows(paths):
    by = collections.defaultdict(list)
    for p in paths:
        fam = re.findall(r'f\d+', p)[-1]
        lim = '16GiB' if '16GiB' in p else 'whole'
        w = re.search(r'-w(\d+)(-[rs]\d+)?\.json', p).group(1)
        by[(fam, lim, w)].append(p)
    allb = collections.defaultdict(lambda: [0, 0])
    table = []
    print('row          ties lost | ties/lost by gap (us): ' + ' | '.join(b[2] for b in BINS))
    for k in sorted(by):
        r = samples(by[k])
        c = collections.defaultdict(lambda: [0, 0])
        for x in r:
            i = next(i for i, b in enumerate(BINS) if b[0] <= x[0] < b[1])
            for d in (c[i], allb[i]):
                d[0] += 1
                d[1] += x[3]
        print('%-4s %-5s %s %5d %4d | ' % (*k, len(r), sum(x[3] for x in r)) + ' | '.join('%3d/%-3d' % tuple(c[i]) for i in range(len(BINS))))
        table.append((k, r))
    print('all  lost share by gap: ' + ' | '.join('%s %d/%d (%.1f %%)' % (BINS[i][2], v[1], v[0], 100 * v[1] / max(v[0], 1)) for i, v in sorted(allb.items())))
    print('\nrow          lost %   indep. %   gap p10/p50   launch p50/p90/p99   sync p50/p90/p99')
    for k, r in table:
        g, ld, sd = [x[0] for x in r], [x[1] for x in r], [x[2] for x in r]
        print('%-4s %-5s %s   %5.1f     %5.1f     %4.0f/%-4.0f     %4.0f/%4.0f/%4.0f       %4.0f/%4.0f/%4.0f' % (
            *k, 100 * sum(x[3] for x in r) / len(r), 100 * independent(r), pct(g, .1), pct(g, .5),
            pct(ld, .5), pct(ld, .9), pct(ld, .99), pct(sd, .5), pct(sd, .9), pct(sd, .99)))


def cal(dirs):
    for d in dirs:
        r = samples(glob.glob(d + '/race/*.json*'))
        g, ld = [x[0] for x in r], [x[1] for x in r]
        print('%s: race ties %d, lost %d (%.1f %%); independent draws %.1f %%; gap p10 %.0f, launch p50/p90 %.0f/%.0f' % (
            re.findall(r'f\d+', d)[-1], len(r), sum(x[3] for x in r), 100 * sum(x[3] for x in r) / max(len(r), 1),
            100 * independent(r), pct(g, .1), pct(ld, .5), pct(ld, .9)))


if __name__ == '__main__':
    {'ROWS': rows, 'CAL': cal}[sys.argv[1]](sys.argv[2:])
