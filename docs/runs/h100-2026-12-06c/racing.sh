# The racing draws of c1 and c2 (split-devsync at 3 and 4 workers under 16 GiB):
# OOMs against lost launch/device-sync ties by run (oomtie.py), and every run's
# ties by how compute_mtx was taken (grants.py).
#   bash docs/runs/h100-2026-12-06c/racing.sh > docs/runs/h100-2026-12-06c/racing.txt
set -eu
G=docs/runs/h200-2026-12-05c; H=docs/runs/h200-2026-12-05d; D=docs/runs/h100-2026-12-06c
T=$(mktemp -d); trap 'rm -rf $T' EXIT
for c in c1 c2; do mkdir $T/x; tar xzf $D/$c/draws.tgz -C $T/x; for d in $T/x/d*; do mv $d $T/$c-$(basename $d); done; rm -r $T/x; done
echo "# The racing draws of c1 (16 draws) and c2 (9 draws and part of a tenth): split-devsync at 3 and 4 workers under 16 GiB on the H100, binary 686de6d"
echo "# (the partial draw's inplace-f27 and inplace-f24 runs are counted below; summary.txt's 'draw N' lines count whole draws)"
echo "#   bash $D/racing.sh"
for run in inplace-f27 inplace-f24 inplace-f26 hops-f27; do echo "== $run"; python3 $G/oomtie.py $T/*/traces-$run-16GiB/*.json.gz; done
(cd $T && python3 $OLDPWD/$H/grants.py */traces-*/*.json.gz) > $T/grants.txt
echo "== ties by run, all draws"
awk 'NR>1 && /inplace/ {t+=$(NF-1); l+=$NF; n++; if (/through/) a+=$(NF-1)} NR>1 && /hops/ {t2+=$(NF-1); l2+=$NF; n2++}
  END {printf "in place (%d runs'"'"' traces): %d ties (%d with compute_mtx granted through its actor: held when asked, cuzk'"'"'s own race), %d lost\n--lock-hops (%d): %d ties, %d lost\n", n, t, a, l, n2, t2, l2}' $T/grants.txt
