# Reads the round's draws against the same-call predictions (pred/, from
# predict.sh on calls 1-2's calibrations; committed before call 3): every
# draw of a row, from the grids of the family's own call (F25: c1, F24: c2),
# call 3's racing draws (c3/tables, remade from its traces by tables.py) and,
# on the whole card, the calibration's race/ runs (race-tables/, the same).
# Then the rows outside split-devsync at 3-4 workers and the racing rows,
# each summed up as the issue's goals read them.
#   bash docs/runs/h200-2026-12-05/read.sh [PRED_DIR]   (default: pred/)
set -eu
H=docs/runs/h200-2026-12-05
P=${1:-$H/pred}
T=$(mktemp -d); trap 'rm -rf $T' EXIT
mkdir -p $T/c1 $T/c2
tar xzf $H/c1/run.tgz -C $T/c1; tar xzf $H/c2/run.tgz -C $T/c2
for f in f24 f25; do
  c=$([ $f = f24 ] && echo c2 || echo c1)
  for l in 16GiB 140GiB; do
    draws="$(ls $T/$c/d*/gpu-$f-$l.txt) $(ls $H/c3/tables/d*/gpu-$f-$l.txt)"
    [ $l = 140GiB ] && draws="$draws $(ls $H/race-tables/$f*/gpu-$f-$l.txt)"
    echo "== $f $l" | tee -a $T/all.txt
    python3 docs/predictions/contention/draws/compare.py $P/sim-$f-$l.txt $draws | tee -a $T/all.txt
  done
done
python3 - $T/all.txt <<'PY'
import re, statistics as S, sys
rows, grid = [], ''
for l in open(sys.argv[1]):
    if l.startswith('== '):
        grid = l[3:].strip()
    p = l.split()
    if len(p) > 12 and p[1].isdigit() and p[10].endswith('%'):
        m = re.search(r'(\d+)/(\d+) (\d+)/(\d+)', l)
        a, n, b, k = map(int, m.groups())
        rows.append((grid + ' ' + p[0], int(p[1]), int(p[2]), float(p[10].rstrip('%')), float(p[11]), a / n, b / k))
def say(name, rs):
    e, bz = [abs(r[3]) for r in rs], [abs(r[4]) for r in rs]
    off = [f'{r[0]}/{r[1]} (draws {r[5]:.0%}, seeds {r[6]:.0%})' for r in rs if (r[5] > .5) != (r[6] > .5)]
    print(f'{name}: {len(rs)} rows, {min(r[2] for r in rs)}-{max(r[2] for r in rs)} draws a row: throughput error median {S.median(e):.1f} %, '
          f'max {max(e):.1f} %; GPU busy within {max(bz):.1f} points; OOM in most draws but not in most seeds, or the other way: {"; ".join(off) or "none"}')
racing = [r for r in rows if r[0].endswith(' split-devsync') and r[1] >= 3]
say('outside split-devsync at 3-4 workers', [r for r in rows if r not in racing])
say('split-devsync at 3-4 workers', racing)
PY
