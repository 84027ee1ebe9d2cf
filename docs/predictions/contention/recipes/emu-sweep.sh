#!/usr/bin/env bash
# bench contention calibrate and the simulator against the emulated device on
# families drawn at random in the contention grid's ranges (partitions of
# 6-12 GiB, kernels of 40-300 ms, CPU stages of 20-200 ms, copies of 0.5 GiB
# to the partition, scratch of 0.25-3.5 GiB), no card: per family the
# calibration (--runs 2), the model's grid (16 seeds) and the emulated
# device's (one draw a row; split-devsync at 3-4 workers, whose draws race,
# four), read with draws/compare.py.
# Run from the repository root: bash docs/predictions/contention/recipes/emu-sweep.sh
#   CUZK (default build/cuzk), TMP (default a fresh temporary directory),
#   SEED (the families' draw, default 1), N (families, default 5), READ (1:
#   only read the tables a run left in $TMP again).
set -eu
CUZK=${CUZK:-build/cuzk}
TMP=${TMP:-$(mktemp -d)}
mkdir -p "$TMP"
echo "cuzk $("$CUZK" version | head -1)"
[ -n "${READ:-}" ] || python3 - "${SEED:-1}" "${N:-5}" > "$TMP/families" <<'PY'
import random, sys
r = random.Random(int(sys.argv[1]))
for i in range(int(sys.argv[2])):
    staged = r.randrange(6 * 1024, 12 * 1024 + 1, 256)
    copy = r.randrange(512, staged + 1, 256)
    scratch = r.randrange(256, 3584 + 1, 256)
    print(f"e{i+1} --items {r.randrange(10, 15)} --staged {staged}MiB --copy {copy}MiB --scratch {scratch}MiB "
          f"--kernel {r.randrange(40, 301, 5)}ms --before {r.randrange(20, 201, 5)}ms --after {r.randrange(20, 201, 5)}ms")
PY
EMU="--backend emu --free-copy-work 2450us"
while read -r fam flags; do
	echo "== $fam: $flags"
	mem=$(echo "$flags" | sed 's/ --kernel.*//')
	[ -n "${READ:-}" ] || "$CUZK" bench contention calibrate $EMU --runs 2 --dir "$TMP/$fam" $flags > /dev/null 2> "$TMP/$fam.err"
	for lim in 140GiB 16GiB; do
		[ -n "${READ:-}" ] || {
			"$CUZK" bench contention --backend sim --profile "$TMP/$fam/profile.json" --seeds 16 $mem --vram-limit $lim \
				--workers 1,2,3,4 > "$TMP/sim-$fam-$lim.txt" 2> "$TMP/sim-$fam-$lim.err"
			"$CUZK" bench contention $EMU $flags --vram-limit $lim --workers 1,2,3,4 \
				--designs single,split-first,split,budget > "$TMP/emu-$fam-$lim.txt" 2> /dev/null
			"$CUZK" bench contention $EMU $flags --vram-limit $lim --workers 1,2 \
				--designs split-devsync >> "$TMP/emu-$fam-$lim.txt" 2> /dev/null
			"$CUZK" bench contention $EMU $flags --vram-limit $lim --workers 3,4 --runs 4 \
				--designs split-devsync >> "$TMP/emu-$fam-$lim.txt" 2> /dev/null
		}
		printf '%-7s ' "$lim"
		python3 docs/predictions/contention/draws/compare.py "$TMP/sim-$fam-$lim.txt" "$TMP/emu-$fam-$lim.txt" |
			grep -A1 'rows against' | tr '\n' ' '
		echo
		python3 docs/predictions/contention/draws/compare.py "$TMP/sim-$fam-$lim.txt" "$TMP/emu-$fam-$lim.txt" |
			awk 'NR > 1 && NF > 10 && $2 ~ /^[0-9]$/ { e = $11; sub("%", "", e); if (e + 0 > 5 || e + 0 < -5) print "        beyond 5 %: " $0 }'
	done
done < "$TMP/families"
