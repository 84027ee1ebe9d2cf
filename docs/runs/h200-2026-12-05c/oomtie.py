"""Under a limit, whether a run's OOM is its lost launch/device-sync tie: per
row (family, workers; 16 GiB traces only), the runs, those with an OOM, the
lost ties and the runs with one, whether each lost tie was followed by an OOM
within a second, and each OOM preceded by a lost tie within a second. Card
traces or the simulator's (a path names its family, limit and workers as
gaps.py's).

    python3 oomtie.py TRACE.json[.gz] ...
"""
import collections, re, sys

sys.path.insert(0, __file__.rsplit('/', 1)[0] + '/../h200-2026-12-05')
from calls import began, load, ties  # noqa: E402

by = collections.defaultdict(collections.Counter)
for p in sys.argv[1:]:
    if '16GiB' not in p:
        continue
    row = (re.findall(r'f\d+', p)[-1], re.search(r'-w(\d+)(-[rs]\d+)?\.json', p).group(1))
    ev = [e for e in load(p) if e.get('ph') != 'M']
    ooms = sorted(e['ts'] for e in ev if e.get('name') == 'OOM')
    lost = [began(s) for l, s, gl, gs in ties(ev) if not s['args']['waited']]
    c = by[row]
    c['runs'] += 1
    c['oom runs'] += bool(ooms)
    c['lost'] += len(lost)
    c['lost runs'] += bool(lost)
    c['oom without lost'] += bool(ooms) and not lost
    c['lost then oom'] += sum(any(t <= o <= t + 1e6 for o in ooms) for t in lost)
    c['ooms'] += len(ooms)
    c['oom after lost'] += sum(any(t <= o <= t + 1e6 for t in lost) for o in ooms)
print('row       runs  with OOM  with a lost tie  OOM without one  lost ties followed by an OOM  OOMs after a lost tie')
for row in sorted(by):
    c = by[row]
    print('%-4s w%s  %5d  %8d  %15d  %15d  %14d of %-4d  %14d of %d' % (*row, c['runs'], c['oom runs'], c['lost runs'],
          c['oom without lost'], c['lost then oom'], c['lost'], c['oom after lost'], c['ooms']))
