# The round's first call, by the card that came: on an H200, runs/h200-2026-12-06's
# call B (porep-sha 2^26 in both runtimes against the H200 model's committed figures,
# then the in-place racing draws); on an H100, cal.sh (porep-sha 2^24 one worker, the
# profile's run), then the racing draws of runs/h200-2026-12-05d card.sh (split-devsync
# at 3 and 4 workers under 16 GiB: f27, f24, f26 in place, f27 with --lock-hops) until
# END seconds into the call.
#   OUT=$OUT [END=560] bash docs/runs/h100-2026-12-06c/call1.sh
t00=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
echo "card: $gpu" >> $OUT/summary.txt
case "$gpu" in
*H200*) LIMIT=${END:-560} bash docs/runs/h200-2026-12-06/callB.sh > /dev/null ;;
*)
  LIMIT=150 bash docs/runs/h100-2026-12-06c/cal.sh
  GRID=0 LIMIT=$(( ${END:-560} - ($(date +%s) - t00) )) bash docs/runs/h200-2026-12-05d/card.sh ;;
esac
cat $OUT/summary.txt
