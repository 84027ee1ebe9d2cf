# Reads blind.sh's call (its summary.txt, pred/ and blind.tgz in docs/runs/
# h200-2026-12-05c/CALL) against its checks (README.md "Before the call with
# f27"): each prediction against the draws (compare.py), OOM against lost
# ties (oomtie.py), the draws' share of lost ties against the race runs'
# (gaps.py).
#   bash docs/runs/h200-2026-12-05c/read_blind.sh CALL
set -eu
H=docs/runs/h200-2026-12-05c
C=$H/$1
T=$(mktemp -d); trap 'rm -rf $T' EXIT
tar xzf $C/blind.tgz -C $T
draws=$(ls $T/d*/gpu-f27-16GiB.txt)
echo "$(echo $draws | wc -w) draws"
for p in h200-contention-f27 base-handoff-f27; do
  echo "== $p: $(python3 -c "import json,sys; h=json.load(open(sys.argv[1]))['host']['handoff']; print('newest_first', h['newest_first'], 'later_first', h.get('later_first', 0))" $C/pred/$p.json)"
  python3 docs/predictions/contention/draws/compare.py $C/pred/sim-$p-16GiB.txt $draws | grep -E '^design|^split-devsync +[34] '
done
python3 $H/oomtie.py $T/d*/traces-gpu-f27-16GiB/*.json.gz
(cd $T && python3 $OLDPWD/$H/gaps.py ROWS d*/traces-gpu-f27-16GiB/*.json.gz | sed -n '/lost %/,$p')
(cd $T && python3 $OLDPWD/$H/gaps.py CAL cal-f27)
