#!/usr/bin/env bash
# The contention grid (docs/predictions/contention): two families of synthetic
# partitions × every design × 1–4 workers × the whole card and 16 GiB, each
# family × limit one `cuzk bench contention` run whose table goes to
# $OUT/<backend>-<family>-<limit>.txt. BACKEND=gpu measures on the card;
# BACKEND=sim predicts from the families' calibrated profiles.
#   CUZK (the executable, default build/cuzk), OUT (default /tmp/contention-grid),
#   FAMILIES ("f1 f2"), LIMITS ("140GiB 16GiB"), WORKERS (1,2,3,4).
set -u
CUZK=${CUZK:-build/cuzk}
OUT=${OUT:-/tmp/contention-grid}
BACKEND=${BACKEND:-gpu}
P=docs/predictions/contention
mkdir -p "$OUT"
# Which binary ran: its digest, to compare with the one built here.
echo "cuzk $(sha256sum "$CUZK" | cut -c1-16): $("$CUZK" version | head -1)" | tee "$OUT/binary.txt"
for fam in ${FAMILIES:-f1 f2}; do
	case $fam in
	f1) mem="--items 12 --staged 6GiB --copy 1GiB --scratch 1GiB"; costs="--kernel 150ms --before 100ms --after 50ms" ;;
	f2) mem="--items 8 --staged 10GiB --copy 3GiB --scratch 2GiB"; costs="--kernel 400ms --before 250ms --after 100ms" ;;
	*) echo "unknown family $fam" >&2; exit 2 ;;
	esac
	[ "$BACKEND" = sim ] && costs="--profile $P/h200-contention-$fam.json"
	for lim in ${LIMITS:-140GiB 16GiB}; do
		t0=$(date +%s)
		"$CUZK" bench contention --backend "$BACKEND" $costs $mem --vram-limit "$lim" \
			--designs single,split-first,split-devsync,split,budget --workers "${WORKERS:-1,2,3,4}" \
			> "$OUT/$BACKEND-$fam-$lim.txt" 2> "$OUT/$BACKEND-$fam-$lim.err"
		echo "$BACKEND $fam $lim: exit $?, $(( $(date +%s) - t0 )) s"
	done
done
