# Call 4, by the card that came: on an H200, the in-place racing draws of
# runs/h200-2026-12-05d card.sh (split-devsync at 3 and 4 workers under 16 GiB: f27, f24,
# f26 in place, f27 with --lock-hops) against that round's committed H200 predictions
# (h200-2026-12-05d/pred), until END; on an H100, one porep-sha 2^26 job at 2-4 workers
# under 54 GiB against c2's profile (predictions/h100-porepsha64m-w1cal-jobs1-predicted.txt,
# committed before the call).
#   OUT=$OUT [END=330] bash docs/runs/h100-2026-12-06d/c4.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
echo "card: $gpu" >> $OUT/summary.txt
case "$gpu" in
*H200*) GRID=0 LIMIT=${END:-330} bash docs/runs/h200-2026-12-05d/card.sh > /dev/null ;;
*) lim=${END:-330}; END=0 JOBS=1 WORKERS=2,3,4 PLIMIT=$lim bash docs/runs/h100-2026-12-06c/p26.sh > /dev/null ;;
esac
cat $OUT/summary.txt
