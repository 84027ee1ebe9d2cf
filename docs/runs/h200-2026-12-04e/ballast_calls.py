"""Whether the 16 GiB limit's ballast changes copies, trims and growths, read
from the calibration calls' one-worker split runs (the same design, the same
call, the whole card against 16 GiB).

    python3 ballast_calls.py CAL FAMILY...

CAL holds a calibration as contention_calibrate.sh lays it out (unpacked
.json traces): traces-<family>/trace-split-w1*.json on the whole card and
traces-<family>-ballast/trace-split-w1*.json under 16 GiB. Prints, per
family, the median copy rate, and the median host time per GiB of the trims
that released memory and of every pool growth (malloc_async), whole card ->
16 GiB.
"""
import glob, gzip, json, statistics as S, sys


def marks(path):
    f = gzip.open(path) if path.endswith('.gz') else open(path)
    return [e for e in json.load(f)['traceEvents'] if e.get('ph') == 'i']


def per_gib(paths, name):
    """ms a GiB of each name call with a duration and bytes."""
    out = []
    for p in paths:
        for e in marks(p):
            a = e.get('args', {})
            if e['name'] == name and a.get('took_us', 0) > 0 and a.get('bytes', 0) > 0:
                out.append(a['took_us'] / 1e3 / (a['bytes'] / 2**30))
    return out


def main(cal, families):
    for f in families:
        whole = sorted(glob.glob(f'{cal}/traces-{f}/trace-split-w1*.json*'))
        limit = sorted(glob.glob(f'{cal}/traces-{f}-ballast/trace-split-w1*.json*'))
        if not whole or not limit:
            print(f'{f}: no split w1 traces at both limits under {cal}')
            continue
        cw, cl = S.median(per_gib(whole, 'copy_in')), S.median(per_gib(limit, 'copy_in'))
        line = [f'{f:4s} copy GiB/s {1e3 / cw:5.1f} -> {1e3 / cl:5.1f} ({100 * (cw / cl - 1):+5.1f} %)']
        for name in ('trim_pool', 'malloc_async'):
            w, l = S.median(per_gib(whole, name)), S.median(per_gib(limit, name))
            line.append(f'{name} ms/GiB {w:.2f} -> {l:.2f} ({l - w:+.2f})')
        print('  '.join(line))


if __name__ == '__main__':
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
