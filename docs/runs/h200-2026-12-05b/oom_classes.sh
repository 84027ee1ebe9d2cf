# OOM never, sometimes or always, by row: the model's seeds against every card
# draw of the row, over the three families drawn in runs/h200-2026-12-05 and
# this round (F24, F25: pred-256, 256 seeds, against the grids' draws, -05's
# racing draws and this round's; f26: pred/, 64 seeds, against its grid's
# draw and its racing draws). A row is wrong when the model says never and a
# draw met an OOM, or always and a draw did not; a "sometimes" row is read by
# its odds (draws/seeds, Fisher p: compare.py).
#   bash docs/runs/h200-2026-12-05b/oom_classes.sh
set -eu
H5=docs/runs/h200-2026-12-05 H=docs/runs/h200-2026-12-05b
C=docs/predictions/contention/draws/compare.py
T=$(mktemp -d); trap 'rm -rf $T' EXIT
for c in c1 c2; do mkdir -p $T/05-$c; tar xzf $H5/$c/run.tgz -C $T/05-$c; done
for c in c1 c2 c3; do mkdir -p $T/$c; tar xzf $H/$c/draws.tgz -C $T/$c; done
mkdir -p $T/grid; tar xzf $H/c2/run.tgz -C $T/grid
for f in f24 f25; do
  c=$([ $f = f24 ] && echo 05-c2 || echo 05-c1)
  for l in 16GiB 140GiB; do
    d="$(ls $T/$c/d*/gpu-$f-$l.txt $H5/c3/tables/d*/gpu-$f-$l.txt $T/c1/d*/gpu-$f-$l.txt)"
    if [ $l = 140GiB ]; then d="$d $(ls $H5/race-tables/$f*/gpu-$f-$l.txt)"; else d="$d $(ls $T/c3/d*/gpu-$f-$l.txt)"; fi
    echo "== $f $l"; python3 $C $H5/pred-256/sim-$f-$l.txt $d
  done
done > $T/all.txt
for l in 16GiB 140GiB; do
  echo "== f26 $l"; python3 $C $H/pred/sim-f26-$l.txt $T/grid/d1/gpu-f26-$l.txt $T/c2/d*/gpu-f26-$l.txt
done >> $T/all.txt
python3 - $T/all.txt <<'PY'
import re, sys
grid, n, wrong, some = '', 0, [], []
cls = lambda a, k: 'never' if a == 0 else 'always' if a == k else 'sometimes'
for l in open(sys.argv[1]):
    if l.startswith('== '):
        grid = l[3:].strip()
    m = re.match(r'(\S+)\s+(\d+)\s+(\d+)\s.*?(\d+)/(\d+) (\d+)/(\d+)\s+\S+\s+(\S+)\s*$', l)
    if not m:
        continue
    d, k, s, z = int(m[4]), int(m[5]), int(m[6]), int(m[7])
    n += 1
    row = f'{grid} {m[1]}/{m[2]}: draws {d}/{k}, seeds {s}/{z}'
    if (s == 0 and d > 0) or (s == z and d < k):
        wrong.append(row)
    elif cls(s, z) == 'sometimes' or cls(d, k) == 'sometimes':
        some.append(row + f' (p {m[8]})')
print(f'{n} rows; the model says never or always and a draw differs: {len(wrong)}')
for r in wrong: print('  wrong:', r)
print(f'sometimes, in the seeds or the draws: {len(some)}')
for r in some: print('  ', r)
PY
