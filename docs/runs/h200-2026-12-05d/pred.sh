# The model's racing rows for the call (README "Before the call"), made on the
# build host and committed before it: split-devsync at 3 and 4 workers under
# 16 GiB, 256 seeds, from the profiles of f24 (runs/h200-2026-12-05), f26
# (-05b) and f27 (-05c c1), with free mutexes taken in place (the default),
# and f27 with --lock-hops too; the same rows on the whole card for f27.
#   CUZK=build/cuzk bash docs/runs/h200-2026-12-05d/pred.sh
set -eu
CUZK=${CUZK:-build/cuzk}
O=docs/runs/h200-2026-12-05d/pred
mkdir -p $O
. gpuprove/contention_families.sh
prof() {
  case $1 in
  f24) echo docs/runs/h200-2026-12-05/pred/h200-contention-f24.json ;;
  f26) echo docs/runs/h200-2026-12-05b/pred/h200-contention-f26.json ;;
  f27) echo docs/runs/h200-2026-12-05c/c1/pred/h200-contention-f27.json ;;
  esac
}
run() { # family limit mode
  family $1
  flag=""; [ $3 = hops ] && flag=--lock-hops
  "$CUZK" bench contention --backend sim --profile $(prof $1) --seeds 256 $COSTS $MEM --vram-limit $2 \
    --designs split-devsync --workers 3,4 $flag > $O/sim-$1-$2-$3.txt 2> $O/sim-$1-$2-$3.err
  echo "$1 $2 $3: $(grep -o 'items/s [0-9.]* to [0-9.]*.*an OOM in [0-9]* of them' $O/sim-$1-$2-$3.err | sed 's/(sd [0-9.]*), //' | tr '\n' ';')"
}
for f in f27 f24 f26; do run $f 16GiB inplace; done
run f27 16GiB hops
run f27 140GiB inplace
run f27 140GiB hops
# f27's whole 16 GiB grid, every design at 1-4 workers, 64 seeds, each runtime.
family f27
for m in inplace hops; do
  flag=""; [ $m = hops ] && flag=--lock-hops
  "$CUZK" bench contention --backend sim --profile $(prof f27) --seeds 64 $COSTS $MEM --vram-limit 16GiB \
    --workers 1,2,3,4 $flag > $O/grid-f27-16GiB-$m.txt 2> $O/grid-f27-16GiB-$m.err
  echo "f27 16GiB grid $m: $(grep -c 'an OOM in [1-9]' $O/grid-f27-16GiB-$m.err) rows with an OOM in some seed"
done
