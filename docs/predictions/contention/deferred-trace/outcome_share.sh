#!/usr/bin/env bash
# The model's share of split-devsync's launch/device-sync ties whose sync did
# not wait for the kernel (by outcome, as ties.py reads the model's traces),
# for host.handoff.later_first = $1, over F10, F22, F24 and F25 at 3-4
# workers, whole card and 16 GiB, SEEDS seeds a row (default 16); and, given
# card traces ($CARD: a glob of trace-split-devsync-w[34]*.json or .json.gz), the
# card's share read the same way. later_first is fitted by making the two
# agree: a flipped order at one virtual instant is not one card tie lost.
#   CUZK (default build/cuzk)
set -u
CUZK=${CUZK:-build/cuzk}
P=docs/predictions/contention/deferred-trace
T=$(mktemp -d)
. gpuprove/contention_families.sh
for f in f10 f22 f24 f25; do
	family $f
	src=$P/v2/h200-contention-$f.json
	[ $f = f22 ] && src=$P/v2-f22-after-trim/h200-contention-f22.json
	python3 docs/predictions/contention/setfield.py $src $T/p.json host.handoff.later_first "$1" > /dev/null
	for l in 140GiB 16GiB; do
		"$CUZK" bench contention --backend sim --profile $T/p.json $MEM --vram-limit $l --designs split-devsync \
			--workers 3,4 --seeds "${SEEDS:-16}" --trace-dir $T/sim-$f-$l > /dev/null 2>&1
	done
done
echo "model, later_first $1: $(python3 docs/runs/h200-2026-12-04b/ties.py $T/sim-*/*.json 2>/dev/null | grep 'all:')"
[ -n "${CARD:-}" ] && echo "card: $(python3 docs/runs/h200-2026-12-04b/ties.py $CARD 2>/dev/null | grep 'all:')"
rm -rf "$T"
