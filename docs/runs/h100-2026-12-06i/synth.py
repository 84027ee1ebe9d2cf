# The syntheses of every porep-sha 2^26 run on an H100 whose traces are committed
# (runs/h100-2026-12-06d to i): per call and row kind, the mean of the syntheses that began
# after the first batch (the partitions synthesized at once when a row starts), where the
# host runs them one after another, as the model does. Prints one line a call: the
# one-worker calibration's spans, the rows', and the VRAM limit its summary names (the
# jobs and host gate of each call: its round's README).
#   python3 docs/runs/h100-2026-12-06i/synth.py [ARCHIVES]   (a glob; by default d to i's)
import json, gzip, glob, re, sys, tarfile, statistics as st

def spans(tf, member):
    ev = json.load(gzip.open(tf.extractfile(member)))
    ev = ev['traceEvents'] if isinstance(ev, dict) else ev
    syn = sorted((e['ts'], e['dur'] / 1e3) for e in ev if e.get('ph') == 'X' and e.get('name') == 'synthesize')
    return [d for t, d in syn if t > syn[0][0] + 1e5] if syn else []

for arc in sorted(glob.glob(sys.argv[1] if len(sys.argv) > 1 else "docs/runs/h100-2026-12-06[d-i]/c*/*.tgz")):
    summary = open(arc.rsplit('/', 1)[0] + "/summary.txt").read()
    limit = sorted(set(re.findall(r'limit ([\d.]+ GiB|none)', summary)))
    tf = tarfile.open(arc)
    cal, rows = [], []
    for m in tf.getmembers():
        if re.search(r'trace-.*-log26\.json\.gz$', m.name):
            (cal if re.search(r'-w1-', m.name) else rows).extend(spans(tf, m))
    if not cal and not rows:
        continue
    f = lambda v: f"{st.mean(v):4.0f} ms (n {len(v):3d})" if v else "      -        "
    print(f"{arc[10:]:38s} one worker {f(cal)}  rows {f(rows)}  limit {','.join(limit) or 'none'}")
