# Every committed proving prediction (docs/predictions/*-job.json, --compare)
# in the runtime with free mutexes taken in place (the default since
# runs/h200-2026-12-05d) against the runtime they were made and run in
# (--lock-hops): per scenario the largest throughput change and the rows
# whose OOM count moves, then every row that moves by more than 1 %.
#   K=build/cuzk bash docs/predictions/inplace_vs_hops.sh > docs/predictions/inplace-vs-hops.txt
set -eu
K=${K:-build/cuzk}
T=$(mktemp -d)
echo "$($K version | head -1); columns: part/s in place, with lock hops, change; OOM in place, with lock hops"
for J in docs/predictions/*-job.json; do
  n=$(basename "$J" -job.json)
  "$K" sim --scenario "$J" --compare > "$T/a.txt"
  "$K" sim --scenario "$J" --compare --lock-hops > "$T/b.txt"
  paste "$T/a.txt" "$T/b.txt" | awk -v j="$n" -v rows="$T/rows.txt" '
    NR > 2 {
      h = NF / 2; d = $(h + 3) > 0 ? ($3 / $(h + 3) - 1) * 100 : 0
      if ((d < 0 ? -d : d) > m) { m = (d < 0 ? -d : d); at = $1 " w" $2 }
      if ($6 != $(h + 6)) o++
      if (d > 1 || d < -1 || $6 != $(h + 6))
        printf "%-44s %-14s w%s %8.3f %8.3f %+7.1f %% OOM %s %s\n", j, $1, $2, $3, $(h + 3), d, $6, $(h + 6) >> rows
    }
    END { printf "%-44s largest change %5.1f %% (%s), OOM count moves on %d rows\n", j, m, at, o }'
done
echo
echo "rows that move by more than 1 % or whose OOM count moves:"
cat "$T/rows.txt" 2>/dev/null
rm -rf "$T"
