#!/usr/bin/env bash
# device.pool_slowdown_kernel and device.kernel_slowdown_pool family by
# family, from each card grid's traces of split, split-first and
# split-devsync at 2-4 workers (both limits, every committed draw), each
# against the family's own one-worker profile as runs/retro-2026-12-05's
# retro.sh fits it (docs/simulator.md, "Both sides of the pool's work");
# the base profile takes the H200 families' medians. No device is used.
#   bash docs/predictions/contention/beside/refit.sh    (from the repository root)
#   CUZK (default build/cuzk), TMP (default a fresh temporary directory).
set -eu
CUZK=${CUZK:-build/cuzk}
TMP=${TMP:-$(mktemp -d)}
FAMS="f12 f13 f14 f15 f16 f17 f18 f19 f22 f23 f24 f25 f26 f28"
# The families' profiles and the archives' traces, unpacked under $TMP/x.
FAMS=$FAMS CUZK=$CUZK TMP=$TMP bash docs/runs/retro-2026-12-05/retro.sh > "$TMP/retro.txt"
for fam in $FAMS; do
	args=()
	for t in docs/runs/h200-*/*/grid/traces-gpu-$fam-*/trace-split*-w[234].json* \
		docs/runs/h200-*/*/*/grid/traces-gpu-$fam-*/trace-split*-w[234].json* \
		"$TMP"/x/docs/runs/*/*/*/*/traces-gpu-$fam-*/trace-split*-w[234].json* \
		"$TMP"/x/docs/runs/*/*/*/*/*/traces-gpu-$fam-*/trace-split*-w[234].json*; do
		[ -f "$t" ] && args+=(--beside-trace "$t")
	done
	echo "$fam $((${#args[@]} / 2)) traces: $("$CUZK" sim calibrate --profile "$TMP/h200-contention-$fam.json" "${args[@]}" \
		--out "$TMP/beside-$fam.json" 2>&1 | grep -E 'slowdown' | tr -s ' ' | tr '\n' ' ')"
done
