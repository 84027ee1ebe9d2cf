"""What the round's trace readers share: a trace's events, percentiles, and
when a device call began and returned.

A device call is an instant event (`took_us`: the call's length, `late_us`:
from its return to its worker's handling of it, at `ts`).
"""
import gzip, json


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
