"""Where a launching worker's goroutine spends the time between its compute
stage's start and its kernel launch, from Go's execution trace.

    go tool trace -d=parsed GO.trace > GO.parsed
    python3 gostall.py [--limit US] [--show N] GO.parsed ...

`cuzk --go-trace FILE bench contention ...` logs, on the goroutine that emits
it, each stage start ("stage compute bench/7 w3") and each lock grant, and
runner.Start logs each device call ("start compute bench/7"). For each
compute stage start and the launch call after it on the same goroutine, the
time between them is split by the goroutine's states: running, blocked (by
why: the function it blocked in), runnable (waiting for a P). A launch that
took LIMIT µs (default 60) or more is slow; for slow ones the script prints
what ran on the P that finally ran the goroutine while it was runnable.
"""
import collections, re, statistics as S, sys

def parse(path):
    evs, cur = [], None
    for line in open(path):
        if line.startswith('M='):
            m = re.match(r'M=(-?\d+) P=(-?\d+) G=(-?\d+) (\S+) Time=(\d+)(.*)', line.rstrip())
            if not m:
                cur = None
                continue
            cur = dict(t=int(m.group(5)), m=int(m.group(1)), p=int(m.group(2)), g=int(m.group(3)),
                       kind=m.group(4), rest=m.group(6), stack=[])
            evs.append(cur)
        elif cur is not None and line.startswith('\t') and not line.startswith('\t\t'):
            cur['stack'].append(line.strip().split(' @')[0])
    evs.sort(key=lambda e: e['t'])
    return evs

def goid(e):
    m = re.search(r'GoID=(\d+) (\S+)->(\S+) Reason="([^"]*)"', e['rest'])
    return (int(m.group(1)), m.group(2), m.group(3), m.group(4)) if m else None

def where(stack):
    """The first frame of the stack outside the runtime and sync packages."""
    for f in stack:
        if not f.startswith(('runtime.', 'sync.', 'internal/')):
            return f.replace('github.com/cuzk/cuzk/', '')
    return stack[0] if stack else '?'

def launches(evs):
    """Yields (stage event index, call event index, goroutine)."""
    stage = {}
    for i, e in enumerate(evs):
        if e['kind'] != 'Log':
            continue
        msg = re.search(r'Message="([^"]*)"', e['rest']).group(1).split()
        if msg[:2] == ['stage', 'compute']:
            stage[(e['g'], msg[2])] = i
        elif msg[:2] == ['start', 'compute']:
            j = stage.pop((e['g'], msg[2]), None)
            if j is not None:
                yield j, i, e['g'], msg[2]

def split(evs, j, i, g):
    """The goroutine's time from event j to i by state, in µs, and the
    blocking sites, and the P and interval it was last runnable on."""
    state, since = 'running', evs[j]['t']
    spent = collections.Counter()
    blocked, runnable = [], None
    for e in evs[j + 1:i + 1]:
        x = goid(e)
        if not x or x[0] != g:
            continue
        spent[state] += (e['t'] - since) / 1e3
        since = e['t']
        new = x[2].lower()
        if new == 'waiting':
            blocked.append(where(e['stack']) + (f' ({x[3]})' if x[3] else ''))
            state = 'blocked'
        elif new == 'runnable':
            state, runnable = 'runnable', [e['t'], None, None]
        elif new == 'running':
            if runnable:
                runnable[1], runnable[2] = e['t'], e['p']
            state = 'running'
        else:
            state = new
    spent[state] += (evs[i]['t'] - since) / 1e3
    return spent, blocked, runnable

def main(args):
    limit, show = 60.0, 5
    while args and args[0].startswith('--'):
        if args[0] == '--limit':
            limit = float(args[1])
        elif args[0] == '--show':
            show = int(args[1])
        args = args[2:]
    for path in args:
        evs = parse(path)
        all_, slow = [], []
        causes = collections.Counter()
        for j, i, g, part in launches(evs):
            took = (evs[i]['t'] - evs[j]['t']) / 1e3
            all_.append(took)
            if took < limit:
                continue
            spent, blocked, runnable = split(evs, j, i, g)
            main_state = max(spent, key=spent.get)
            cause = main_state if main_state != 'blocked' else 'blocked in ' + (blocked[0] if blocked else '?')
            causes[cause] += 1
            slow.append((took, part, g, spent, blocked, runnable, j, i))
        print(f'{path}: {len(all_)} launches, median {S.median(all_) if all_ else 0:.0f} µs from stage start to call; '
              f'{len(slow)} took {limit:.0f} µs or more')
        for c, n in causes.most_common():
            print(f'  {n:4d}  mostly {c}')
        if slow:
            tot = collections.Counter()
            for s in slow:
                tot.update(s[3])
            print('  slow launches, µs by state (sum over them): ' + ', '.join(f'{k} {v:.0f}' for k, v in tot.most_common()))
        for took, part, g, spent, blocked, runnable, j, i in sorted(slow, reverse=True)[:show]:
            print(f'  -- {part} on G{g}: {took:.0f} µs (' + ', '.join(f'{k} {v:.0f}' for k, v in spent.most_common()) + ')'
                  + (f'; blocked in {", ".join(blocked)}' if blocked else ''))
            if runnable and runnable[1]:
                for e in evs[j:i + 1]:
                    if runnable[0] <= e['t'] <= runnable[1] and e['p'] == runnable[2] and e['g'] != g:
                        x = goid(e)
                        what = e['kind'] + (f' G{x[0]} {x[1]}->{x[2]} {x[3]}' if x else ' ' + e['rest'][:70])
                        print(f'       +{(e["t"] - evs[j]["t"]) / 1e3:6.1f} P{e["p"]} G{e["g"]} {what} {where(e["stack"]) if e["stack"] else ""}')

if __name__ == '__main__':
    main(sys.argv[1:])

def ties(evs, window_us=1000.0):
    """The launch/device-sync ties from the trace's logs, as ties.py counts
    them from a cuzk trace: a launch and another partition's device sync
    called within WINDOW of each other, each within WINDOW of its grant
    (compute_mtx, mem_mtx); lost when the one granted later called first.
    Returns (ties, lost)."""
    w = window_us * 1e3
    grants = collections.defaultdict(list)  # (lock, partition) → times
    calls = []  # (time, kind, partition)
    for e in evs:
        if e['kind'] != 'Log':
            continue
        msg = re.search(r'Message="([^"]*)"', e['rest']).group(1).split()
        if msg[0] == 'grant':
            grants[(msg[1], msg[2])].append(e['t'])
        elif msg[0] == 'start' and msg[1] in ('compute', 'device_sync'):
            calls.append((e['t'], msg[1], msg[2]))
    def granted(lock, t, part):
        before = [g for g in grants[(lock, part)] if g <= t]
        return max(before) if before and t - max(before) <= w else None
    n = lost = 0
    launches = [c for c in calls if c[1] == 'compute']
    for t, _, part in (c for c in calls if c[1] == 'device_sync'):
        near = [l for l in launches if l[2] != part and abs(l[0] - t) <= w]
        if not near:
            continue
        l = min(near, key=lambda l: abs(l[0] - t))
        gl, gs = granted('compute', l[0], l[2]), granted('mem', t, part)
        if gl is None or gs is None or gl == gs or l[0] == t:
            continue
        n += 1
        lost += (gl < gs) != (l[0] < t)
    return n, lost
