# The 15 rows of a predictions file (docs/predictions/*-predicted.txt) for one scenario:
# every design at 2-4 workers, `cuzk sim --seeds 16`'s line, then the s/job it gives
# (10 / part/s, a 10-partition job) and seed 1's OOMs/fallbacks.
#   K=build/cuzk bash docs/runs/atsize/predicted.sh SCENARIO
set -eu
K=${K:-build/cuzk}
for w in 2 3 4; do for d in budget split-first split split-devsync single; do
  m=$($K sim --scenario $1 --design $d --workers $w --seeds 16 | sed -n 3p)
  o=$($K sim --scenario $1 --design $d --workers $w | awk '/^OOM/ {print $2 "/" $NF}' | tr -d '(')
  echo "$m  s/job $(echo "$m" | awk '{printf "%.2f", 10/$3}')  OOM/fallbacks (seed 1) $o"
done; done
