"""The two goroutine chains of each launch/device-sync tie, from Go's
execution trace: the launching worker's from its compute-lock grant to its
launch call, and the syncing worker's from its mem-lock grant to its
cudaDeviceSynchronize call, each split by the goroutine's states.

    go tool trace -d=parsed GO.trace > GO.parsed
    python3 chain.py [--window US] [--show N] GO.parsed ...

A tie is counted as runs/h200-2026-12-04d's gostall.ties counts it (the trace's
logs: "grant LOCK PART wN" on the lock's goroutine, "start compute PART" and
"start device_sync PART" on the caller's). It is lost when the worker granted
later called first. For each chain: the goroutine that made the call, its time
from the grant to the call by state (before it existed or was first seen:
"unborn"; runnable: waiting for a processor; blocked: where), and, while it
was runnable, what ran on the processor that finally ran it. Prints, lost and
kept ties apart, the mean µs by state of each chain, then the N slowest lost
ties' launching chains in full.
"""
import collections, re, statistics as S, sys

sys.path.insert(0, __file__.rsplit('/', 1)[0] + '/../h200-2026-12-04d')
from gostall import parse, goid, where  # noqa: E402


def msg(e):
    m = re.search(r'Message="([^"]*)"', e['rest'])
    return m.group(1).split() if m else []


def chain(evs, j, i, g):
    """Goroutine g's time from event j to event i by state (µs), the places it
    blocked, and the runnable intervals with the P that ended each."""
    state, since = 'unborn', evs[j]['t']
    spent, blocked, runs = collections.Counter(), [], []
    # the state g was in at j: the last transition of g before j
    for e in reversed(evs[:j]):
        x = goid(e)
        if x and x[0] == g:
            state = x[2].lower()
            break
        if e['g'] == g:
            state = 'running'
            break
    if state == 'runnable':
        runs.append([evs[j]['t'], None, None])
    for e in evs[j + 1:i + 1]:
        x = goid(e)
        if not x or x[0] != g:
            continue
        spent[state] += (e['t'] - since) / 1e3
        since, new = e['t'], x[2].lower()
        if new == 'waiting':
            blocked.append(where(e['stack']) + (f' ({x[3]})' if x[3] else ''))
        elif new == 'runnable':
            runs.append([e['t'], None, None])
        elif new == 'running' and runs and runs[-1][1] is None:
            runs[-1][1], runs[-1][2] = e['t'], e['p']
        state = 'blocked' if new == 'waiting' else new
    spent[state] += (evs[i]['t'] - since) / 1e3
    return spent, blocked, runs


def ties(evs, window_us):
    w = window_us * 1e3
    grants = collections.defaultdict(list)  # (lock, part) -> event indexes
    calls = []
    for k, e in enumerate(evs):
        if e['kind'] != 'Log':
            continue
        m = msg(e)
        if m and m[0] == 'grant':
            grants[(m[1], m[2])].append(k)
        elif m[:1] == ['start'] and m[1] in ('compute', 'device_sync'):
            calls.append((k, m[1], m[2]))

    def granted(lock, k, part):
        before = [x for x in grants[(lock, part)] if x <= k]
        if not before or evs[k]['t'] - evs[before[-1]]['t'] > w:
            return None
        return before[-1]
    launches = [c for c in calls if c[1] == 'compute']
    for ks, _, part in (c for c in calls if c[1] == 'device_sync'):
        near = [l for l in launches if l[2] != part and abs(evs[l[0]]['t'] - evs[ks]['t']) <= w]
        if not near:
            continue
        kl = min(near, key=lambda l: abs(evs[l[0]]['t'] - evs[ks]['t']))[0]
        gl, gs = granted('compute', kl, evs[kl] and msg(evs[kl])[2]), granted('mem', ks, part)
        if gl is None or gs is None:
            continue
        tl, ts = evs[gl]['t'], evs[gs]['t']
        if tl == ts or evs[kl]['t'] == evs[ks]['t']:
            continue
        lost = (tl < ts) != (evs[kl]['t'] < evs[ks]['t'])
        yield dict(lost=lost, gap=(ts - tl) / 1e3, launch=(gl, kl, evs[kl]['g']), sync=(gs, ks, evs[ks]['g']))


def show_runnable(evs, j, i, g, runs):
    for r in runs:
        if r[1] is None:
            continue
        for e in evs[j:i + 1]:
            if r[0] <= e['t'] <= r[1] and e['p'] == r[2] and e['g'] != g:
                x = goid(e)
                what = e['kind'] + (f' G{x[0]} {x[1]}->{x[2]} {x[3]}' if x else ' ' + ' '.join(msg(e)) if e['kind'] == 'Log' else ' ' + e['kind'])
                print(f'         +{(e["t"] - evs[j]["t"]) / 1e3:7.1f} P{e["p"]} G{e["g"]} {what} {where(e["stack"]) if e["stack"] else ""}')


def main(args):
    window, show = 300.0, 4
    while args and args[0].startswith('--'):
        window = float(args[1]) if args[0] == '--window' else window
        show = int(args[1]) if args[0] == '--show' else show
        args = args[2:]
    for path in args:
        evs = parse(path)
        rows = []
        for t in ties(evs, window):
            for side in ('launch', 'sync'):
                j, i, g = t[side]
                t[side + '_us'] = (evs[i]['t'] - evs[j]['t']) / 1e3
                t[side + '_by'] = chain(evs, j, i, g)
            rows.append(t)
        lost = [t for t in rows if t['lost']]
        print(f'{path}: {len(rows)} ties, {len(lost)} lost '
              f'({sum(1 for t in lost if t["gap"] < 0)} with the mem lock granted first)')
        for name, part in (('lost', lost), ('kept', [t for t in rows if not t['lost']])):
            if not part:
                continue
            for side in ('launch', 'sync'):
                tot = collections.Counter()
                for t in part:
                    tot.update(t[side + '_by'][0])
                us = [t[side + '_us'] for t in part]
                print(f'  {name:4s} {side:6s} grant->call median {S.median(us):6.0f} µs, mean by state: '
                      + ', '.join(f'{k} {v / len(part):.0f}' for k, v in tot.most_common()))
            blocks = collections.Counter(b for t in part for b in t['launch_by'][1])
            if blocks:
                print(f'  {name:4s} launch blocked in: ' + '; '.join(f'{b} ×{n}' for b, n in blocks.most_common(4)))
        for t in sorted(lost, key=lambda t: -t['launch_us'])[:show]:
            j, i, g = t['launch']
            spent, blocked, runs = t['launch_by']
            print(f'  -- lost: mem grant {t["gap"]:+.0f} µs after compute grant; launch G{g} {t["launch_us"]:.0f} µs ('
                  + ', '.join(f'{k} {v:.0f}' for k, v in spent.most_common()) + ')'
                  + (f'; blocked in {", ".join(blocked)}' if blocked else '')
                  + f'; sync G{t["sync"][2]} {t["sync_us"]:.0f} µs')
            show_runnable(evs, j, i, g, runs)


if __name__ == '__main__':
    main(sys.argv[1:])
