# Row by row, the rows' traces of runs/h100-2026-12-06i: the kernels' mean time, the rate of
# the whole partitions' staging copies (8.94 GiB each; none under split-devsync and single,
# which stage while no kernel runs, only the partition's a), the syntheses' mean time, and
# per kernel the time other partitions' copies and syntheses overlapped it. Then a least-
# squares line per call: a kernel's time against the ms of synthesis beside it, of other
# partitions' copies, and of other workers' trims and growths; and a second line with the
# copies counted in GiB overlapped (each copy's bytes by the share of it beside the kernel)
# in place of ms, to see whether bytes tell the machines apart less than time does.
#   for c in c1 c2 c3; do mkdir -p T/$c; tar xzf docs/runs/h100-2026-12-06i/$c/*.tgz -C T/$c; done
#   python3 docs/runs/h100-2026-12-06i/hostload.py T
import json, gzip, sys, glob, re, statistics as st

def solve(A, y):  # normal equations, Gaussian elimination
    n = len(A[0])
    M = [[sum(a[i] * a[j] for a in A) for j in range(n)] for i in range(n)]
    v = [sum(a[i] * b for a, b in zip(A, y)) for i in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            f = M[j][i] / M[i][i]
            M[j] = [x - f * z for x, z in zip(M[j], M[i])]
            v[j] -= f * v[i]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (v[i] - sum(M[i][j] * x[j] for j in range(i + 1, n))) / M[i][i]
    return x

def overlap(s, t, spans, p=None):
    return sum(max(0, min(t, b) - max(s, a)) for a, b, q in spans if p is None or q != p) / 1e3

def overlap_gib(s, t, spans, p):
    return sum(max(0, min(t, b) - max(s, a)) / (b - a) * n for a, b, q, n in spans if q != p and b > a) / 2**30

def rms(x, A, y):
    r = [v - sum(c * a for c, a in zip(x, row)) for row, v in zip(A, y)]
    return (sum(v * v for v in r) / len(r)) ** .5

name = re.compile(r'trace-(.*?-w\d)')
for call in ("c1", "c2", "c3"):
    kernels = []
    for f in sorted(glob.glob(f"{sys.argv[1]}/{call}/rows/trace-*.json.gz")):
        ev = json.load(gzip.open(f))
        ev = ev['traceEvents'] if isinstance(ev, dict) else ev
        inst = lambda n: [e for e in ev if e.get('name') == n and e.get('ph') == 'i' and 'took_us' in e.get('args', {})]
        span = lambda n: [e for e in ev if e.get('name') == n and e.get('ph') == 'X']
        copies = [(e['ts'] - e['args']['took_us'], e['ts'], e['args']['partition']) for e in inst('copy_in')]
        sized = [(e['ts'] - e['args']['took_us'], e['ts'], e['args']['partition'], e['args'].get('copied', 0)) for e in inst('copy_in')]
        pool = [(e['ts'] - e['args']['took_us'], e['ts'], e['args'].get('partition')) for e in inst('trim_pool') + inst('malloc_async')]
        syn = [(e['ts'], e['ts'] + e['dur'], None) for e in span('synthesize')]
        rate = [e['args']['copied'] / e['args']['took_us'] / 1e3 for e in inst('copy_in') if e['args'].get('copied', 0) > 5e9]
        comp = span('compute')
        for e in comp:
            s, t, p = e['ts'], e['ts'] + e['dur'], e['args']['partition']
            kernels.append((overlap(s, t, syn), overlap(s, t, copies, p), overlap(s, t, pool, p), e['dur'] / 1e3, overlap_gib(s, t, sized, p)))
        print(f"{call} {name.search(f).group(1):18s} kernel {st.mean(e['dur'] for e in comp) / 1e3:5.0f} ms"
              f"  whole copies {st.mean(rate) if rate else 0:4.1f} GB/s (n {len(rate):2d})"
              f"  synthesize {st.mean(e['dur'] for e in span('synthesize')) / 1e3:5.0f} ms")
    if kernels:
        terms = ["per ms of synthesis beside", "per ms of another partition's copy", "per ms of another worker's trim or growth"]
        cols = [i for i in range(3) if any(k[i] for k in kernels)]  # a term no kernel met stays out
        x = solve([[1] + [k[i] for i in cols] for k in kernels], [k[3] for k in kernels])
        print(f"{call}: {len(kernels)} kernels: {x[0]:.0f} ms" + "".join(f" + {v:.3f} {terms[i]}" for v, i in zip(x[1:], cols))
              + "".join(f"; none met {terms[i][7:]}" for i in range(3) if i not in cols))
        y = [k[3] for k in kernels]
        Am = [[1, k[0], k[1]] for k in kernels]
        Ab = [[1, k[0], k[4]] for k in kernels]
        xm, xb = solve(Am, y), solve(Ab, y)
        print(f"{call}: synthesis and copies alone: {xm[2]:.3f} per ms of another partition's copy (rms {rms(xm, Am, y):.1f} ms);"
              f" by bytes, {xb[2]:.2f} ms per GiB of it copied beside (rms {rms(xb, Ab, y):.1f} ms)\n")
