# One call, by the card that comes (asked as nvidia-h200; an H100 may come):
# - an H200: split-devsync's racing draws under the in-place runtime, with f27's 16 GiB
#   grid in both runtimes first (runs/h200-2026-12-05d card.sh; its predictions, pred/,
#   committed before that round's call), until LIMIT;
# - an H100, with H100=copyload: bench prove's copy load on a card again (its first run,
#   runs/h100-2026-12-06k c1, made no progress beside the copies), the same calibration
#   and three-worker rows as c1 (VRAM 36 GiB, two jobs), predicted in the call from the
#   calibration with its copies row (device.stream_stall); with H100=none, nothing.
#   OUT=$OUT [LIMIT=540] [H100=copyload|none] bash docs/runs/h200-2026-12-07/call.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
echo "card: $gpu" | tee -a $OUT/summary.txt
case "$gpu" in
*H200*) OUT=$OUT LIMIT=${LIMIT:-540} bash docs/runs/h200-2026-12-05d/card.sh ;;
*)
  case "${H100:-copyload}" in
  copyload) VRAM=36 CALJOBS=2 ROWJOBS=2 ROWGATE=72 ROWWORKERS=3 COPYLOAD=also CALEND=300 OUT=$OUT END=${END:-470} \
    bash docs/runs/atsize/atsize.sh > /dev/null ;;
  esac ;;
esac
cat $OUT/summary.txt
