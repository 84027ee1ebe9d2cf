#!/usr/bin/env bash
# The share of launch/device-sync ties the syncing worker wins is the host's:
# e2 of emu-sweep.sh (its profile from emu-sweep.tgz, fitted on one-worker runs
# with the H200 host's later_first), split-devsync at 2-4 workers on the
# emulated device of this host, three runs each with traces; later_first
# fitted from the 3-4 worker traces (sim calibrate --race-trace); the model's
# rows (16 seeds) with the base's share and with the fitted one.
# Run from the repository root: bash docs/predictions/contention/recipes/emu-race.sh
#   CUZK (default build/cuzk), TMP (default a fresh temporary directory).
set -eu
CUZK=${CUZK:-build/cuzk}
TMP=${TMP:-$(mktemp -d)}
D=docs/predictions/contention/recipes
echo "cuzk $("$CUZK" version | head -1), $(nproc) cores"
tar xzf $D/emu-sweep.tgz -C "$TMP" e2/profile.json
MEM="--items 13 --staged 12288MiB --copy 7680MiB --scratch 2048MiB"
"$CUZK" bench contention --backend emu --free-copy-work 2450us $MEM --kernel 290ms --before 85ms --after 50ms \
	--vram-limit 140GiB --designs split-devsync --workers 2,3,4 --runs 3 --trace-dir "$TMP/emu" > "$TMP/emu.txt" 2> "$TMP/emu.err"
race=()
for t in "$TMP"/emu/trace-split-devsync-w[34]*.json; do race+=(--race-trace "$t"); done
"$CUZK" sim calibrate --profile "$TMP/e2/profile.json" "${race[@]}" --out "$TMP/race.json" 2>&1
row() { awk '$1 == "split-devsync" { printf "  w%s %s items/s, %s busy", $2, $3, $4 } END { print "" }'; }
echo "emulated device, mean of 3 runs:$(row < "$TMP/emu.txt")"
grep 'runs,' "$TMP/emu.err"
for p in "$TMP/e2/profile.json" "$TMP/race.json"; do
	lf=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['host']['handoff']['later_first'])" "$p")
	echo "model, later_first $lf, 16 seeds:$("$CUZK" bench contention --backend sim --profile "$p" $MEM --vram-limit 140GiB \
		--designs split-devsync --workers 2,3,4 --seeds 16 2> /dev/null | row)"
done
