"""When a kernel's host code runs, and what a device sync beside it waits for.

    python3 kernel_host.py TRACE.json[.gz] ...

Traces of the production runtime on the card (`bench contention --trace-dir`,
binaries since 2026-12-04 trace the synthetic kernel's host code: kernel_host,
scratch_malloc, scratch_free_async). The launch (the worker's `compute` call)
returns once the kernel is handed to its stream's host code; that code then
allocates the kernel's scratch (cudaMallocAsync) and enqueues the kernel's
work. Prints, by worker count:
  host start   the host code's start less the launch's return (us);
  scratch      the scratch allocation's length (us), growing the pool or not;
and for every other worker's cudaDeviceSynchronize whose call began within
1 ms of a launch's return, by where the call began: before the launch
returned, between its return and the end of the scratch allocation (the
kernel's work not yet enqueued), or after; and how many of each waited.
"""
import collections, re, sys

from calls import began, is_call, load, pct, returned


host = collections.defaultdict(list)
scratch = collections.defaultdict(list)
syncs = collections.defaultdict(collections.Counter)
for path in sys.argv[1:]:
    m = re.search(r'-w(\d)', path.rsplit('/', 1)[-1])
    w = 'w' + (m.group(1) if m else '?')
    ev = load(path)
    launches, kh, sm, ds = {}, {}, {}, []
    for e in ev:
        a = e.get('args', {})
        n = e.get('name')
        if is_call(e, 'compute'):
            launches.setdefault(a['partition'], []).append(e)
        elif n == 'kernel_host':
            kh.setdefault(a['partition'], []).append(e)
        elif n == 'scratch_malloc':
            sm.setdefault(a['partition'], []).append(e)
        elif is_call(e, 'device_sync'):
            ds.append(e)
    kernels = []  # (worker tid, launch return, scratch allocation's end)
    for p, ls in launches.items():
        for i, l in enumerate(ls):
            ret = returned(l)
            if i < len(kh.get(p, [])):
                host[w].append(kh[p][i]['ts'] - ret)
            if i < len(sm.get(p, [])):
                s = sm[p][i]
                scratch[w + (' grew' if s['dur'] > 1000 else ' held')].append(s['dur'])
                kernels.append((l['tid'], ret, s['ts'] + s['dur']))
    for d in ds:
        call = began(d)
        for tid_, ret, enq in kernels:
            if tid_ == d['tid'] or not -1000 <= call - ret <= 1000:
                continue
            where = 'before return' if call < ret else ('before work' if call < enq else 'after work')
            syncs[w][(where, d['args']['waited'])] += 1
for w in sorted(host):
    print(f"{w}  host start: n={len(host[w])} p10 {pct(host[w], .1):.1f} p50 {pct(host[w], .5):.1f} p90 {pct(host[w], .9):.1f} us")
for k in sorted(scratch):
    v = scratch[k]
    print(f"{k:8s} scratch: n={len(v)} p10 {pct(v, .1):.0f} p50 {pct(v, .5):.0f} p90 {pct(v, .9):.0f} us")
for w in sorted(syncs):
    c = syncs[w]
    print(w, 'device syncs within 1 ms of another worker\'s launch:', ', '.join(
        f"{where} {c[(where, True)]} waited / {c[(where, True)] + c[(where, False)]}"
        for where in ('before return', 'before work', 'after work')))
