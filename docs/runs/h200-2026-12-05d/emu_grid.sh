# f27's 16 GiB grid (every design, 1-4 workers) on the build host's emulated
# device, DRAWS times, each draw once in place and once with --lock-hops,
# alternately: what taking a free mutex in place changes outside
# split-devsync's racing rows.
#   K=build/cuzk DRAWS=3 OUT=DIR bash docs/runs/h200-2026-12-05d/emu_grid.sh
set -eu
. gpuprove/contention_families.sh
family f27
mkdir -p $OUT
echo "$($K version | head -1); $(nproc) cores; $(date -u +%FT%TZ)" > $OUT/summary.txt
for D in $(seq 1 ${DRAWS:-3}); do
  for m in inplace hops; do
    flag=""; [ $m = hops ] && flag=--lock-hops
    $K bench contention --backend emu $COSTS $MEM --free-copy-work 2450us --vram-limit 16GiB --workers 1,2,3,4 $flag \
      > $OUT/$m-d$D.txt 2> $OUT/$m-d$D.err || echo "$m d$D: exit $?" >> $OUT/summary.txt
  done
done
python3 - $OUT <<'PY' | tee -a $OUT/summary.txt
import collections, glob, statistics as S, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for m in ('inplace', 'hops'):
    for f in sorted(glob.glob(f'{sys.argv[1]}/{m}-d*.txt')):
        for l in open(f):
            p = l.split()
            if len(p) > 10 and p[1].isdigit():
                rows[(p[0], int(p[1]))][m].append((float(p[2]), float(p[3].rstrip('%')), int(p[7]) + int(p[8]), int(p[6])))
print('%-14s %2s  %-22s %-22s %s' % ('design', 'w', 'in place items/s busy', 'lock hops items/s busy', 'OOM runs / retries (in place; hops)'))
for k in sorted(rows, key=lambda k: (['single', 'split-first', 'split-devsync', 'split', 'budget'].index(k[0]), k[1])):
    r = rows[k]
    f = lambda m: '%5.2f %5.1f%%' % (S.mean(x[0] for x in r[m]), S.mean(x[1] for x in r[m]))
    o = lambda m: '%d/%d %d' % (sum(x[2] > 0 for x in r[m]), len(r[m]), sum(x[3] for x in r[m]))
    d = S.mean(x[0] for x in r['inplace']) / S.mean(x[0] for x in r['hops']) - 1
    print('%-14s %2d  %-22s %-22s %+5.1f %%   %s; %s' % (*k, f('inplace'), f('hops'), 100 * d, o('inplace'), o('hops')))
PY
