"""What the round's trace readers share: a trace's events, percentiles, and
when a device call began and returned, and the launch/device-sync ties.

A device call is an instant event (`took_us`: the call's length, `late_us`:
from its return to its worker's handling of it, at `ts`).
"""
import collections, gzip, json


def load(path):
    """The events of a trace (.json or .json.gz)."""
    f = gzip.open(path, 'rt') if path.endswith('.gz') else open(path)
    ev = json.load(f)
    return ev['traceEvents'] if isinstance(ev, dict) else ev


def pct(v, q):
    """The q-quantile of v by nearest rank below (nan when empty)."""
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float('nan')


def returned(e):
    """When a device call returned (us)."""
    return e['ts'] - e['args'].get('late_us', 0)


def began(e):
    """When a device call began (us)."""
    return returned(e) - e['args']['took_us']


def is_call(e, name):
    """Whether e is the device call name (not a stage span of that name)."""
    return e.get('name') == name and 'took_us' in e.get('args', {})


def ties(ev, window=300):
    """The launch/device-sync ties of a trace's events: each launch (the
    `compute` call) and another worker's cudaDeviceSynchronize whose calls
    began within window us of each other, as (launch, sync, the launching
    partition's latest lock grant before its call, the syncing one's), the
    grants' times in us. A lock's grant is a span on its lock's thread named
    "w<worker> <partition>"; a tie without both grants is left out."""
    grants = collections.defaultdict(list)
    for e in ev:
        a = e.get('args', {})
        if e.get('ph') == 'X' and e['name'].startswith('w') and 'worker' in a and ' bench/' in e['name']:
            grants[a['partition']].append(e['ts'])

    def last_grant(e):
        g = [t for t in grants[e['args']['partition']] if t <= began(e)]
        return max(g) if g else None

    syncs = [e for e in ev if is_call(e, 'device_sync')]
    for l in (e for e in ev if is_call(e, 'compute')):
        for s in syncs:
            if s['tid'] == l['tid'] or abs(began(s) - began(l)) >= window:
                continue
            gl, gs = last_grant(l), last_grant(s)
            if gl is not None and gs is not None:
                yield l, s, gl, gs
