# Reads card.sh's call (its summary.txt and draws.tgz in docs/runs/
# h200-2026-12-05d/CALL) against pred/: each row's draws against the model
# (compare.py: items/s, busy, OOM draws against seeds), OOM against lost
# ties (oomtie.py), the draws' ties by gap (gaps.py), by run; then every
# run's ties by how compute_mtx was taken (grants.py: in place or through
# its actor).
#   bash docs/runs/h200-2026-12-05d/read_card.sh CALL
set -eu
H=docs/runs/h200-2026-12-05d
G=docs/runs/h200-2026-12-05c
T=$(mktemp -d); trap 'rm -rf $T' EXIT
tar xzf $H/$1/draws.tgz -C $T
for m in inplace hops; do
  [ -f $T/grid-$m/gpu-f27-16GiB.txt ] || continue
  echo "== f27 16 GiB grid, $m"
  python3 docs/predictions/contention/draws/compare.py $H/pred/grid-f27-16GiB-$m.txt $T/grid-$m/gpu-f27-16GiB.txt
done
for run in inplace-f27 inplace-f24 inplace-f26 hops-f27; do
  m=${run%%-*}; fam=${run#*-}
  ls $T/d*/$run.txt > /dev/null 2>&1 || continue
  echo "== $run: $(ls $T/d*/$run.txt | wc -l) draws"
  python3 docs/predictions/contention/draws/compare.py $H/pred/sim-$fam-16GiB-$m.txt $T/d*/$run.txt | grep -E '^design|^split-devsync +[34] '
  python3 $G/oomtie.py $T/d*/traces-$run-16GiB/*.json.gz | tail -n +2 | sed "s/^$fam /$run /"
  (cd $T && python3 $OLDPWD/$G/gaps.py ROWS d*/traces-$run-16GiB/*.json.gz | sed -n '2,3p')
done
(cd $T && python3 $OLDPWD/$H/grants.py d*/traces-*/*.json.gz)
