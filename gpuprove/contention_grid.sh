#!/usr/bin/env bash
# The contention grid (docs/predictions/contention): families of synthetic
# partitions × every design × 1–4 workers × the whole card and 16 GiB, each
# family × limit one `cuzk bench contention` run whose table goes to
# $OUT/<backend>-<family>-<limit>.txt. BACKEND=gpu measures on the card, emu
# on the emulated device; BACKEND=sim predicts from the families' calibrated
# profiles ($PROFILES/h200-contention-<family>.json, which
# contention_fit.sh makes from contention_calibrate.sh's one-worker traces).
#   CUZK (the executable, default build/cuzk), OUT (default /tmp/contention-grid),
#   FAMILIES ("f1 f2"), LIMITS ("140GiB 16GiB"), WORKERS (1,2,3,4),
#   PROFILES (default docs/predictions/contention), SEEDS (sim: each row the
#   mean of this many seeds' runs, default 1), RUNS (gpu, emu: each row the
#   mean of this many runs on the device, default 1; a racing row needs
#   about ten), DESIGN_TIMEOUT (seconds: each design its own bench, sent
#   SIGQUIT after that long, so that one that does not finish loses only its
#   own rows and leaves its goroutines' stacks in the .err), TRACES (1: a trace of
#   every run in $OUT/traces-<backend>-<family>-<limit>/, for diagnosis).
set -u
CUZK=${CUZK:-build/cuzk}
OUT=${OUT:-/tmp/contention-grid}
BACKEND=${BACKEND:-gpu}
PROFILES=${PROFILES:-docs/predictions/contention}
. "$(dirname "$0")/contention_families.sh"
mkdir -p "$OUT"
# Which binary ran: its digest, to compare with the one built here.
echo "cuzk $(sha256sum "$CUZK" | cut -c1-16): $("$CUZK" version | head -1)" | tee "$OUT/binary.txt"
# bench DESIGNS [PREFIX...]: the current family and limit's bench of those
# designs (run under PREFIX, say `timeout N`), its table and stderr appended
# to $OUT/<backend>-<family>-<limit>.txt and .err.
bench() {
	local designs=$1
	shift
	"$@" "$CUZK" bench contention --backend "$BACKEND" $costs $MEM --vram-limit "$lim" \
		--designs "$designs" --workers "${WORKERS:-1,2,3,4}" $traces \
		>> "$OUT/$BACKEND-$fam-$lim.txt" 2>> "$OUT/$BACKEND-$fam-$lim.err"
}
for fam in ${FAMILIES:-f1 f2}; do
	family "$fam" || exit 2
	costs="$COSTS $(backend_flags "$BACKEND")"
	costs="$costs --runs ${RUNS:-1}"
	[ "$BACKEND" = sim ] && costs="--profile $PROFILES/h200-contention-$fam.json --seeds ${SEEDS:-1}"
	for lim in ${LIMITS:-140GiB 16GiB}; do
		t0=$(date +%s)
		traces=
		[ "${TRACES:-}" = 1 ] && traces="--trace-dir $OUT/traces-$BACKEND-$fam-$lim"
		: > "$OUT/$BACKEND-$fam-$lim.txt"
		: > "$OUT/$BACKEND-$fam-$lim.err"
		if [ -z "${DESIGN_TIMEOUT:-}" ]; then
			bench "$DESIGNS"
			echo "$BACKEND $fam $lim: exit $?, $(( $(date +%s) - t0 )) s"
			continue
		fi
		# One bench a design, each stopped after DESIGN_TIMEOUT seconds: a
		# design that does not finish loses its own rows only, and says so.
		# SIGQUIT makes the Go runtime print every goroutine's stack before
		# it exits, to show where it stood; SIGKILL 10 s later if not.
		rc=0
		for d in ${DESIGNS//,/ }; do
			td=$(date +%s)
			bench "$d" timeout -s QUIT -k 10 "$DESIGN_TIMEOUT"
			r=$?
			[ $r -eq 0 ] || rc=$r
			case $r in 124 | 137) echo "$d: stopped after $DESIGN_TIMEOUT s (exit $r)" | tee -a "$OUT/$BACKEND-$fam-$lim.err" ;; esac
			echo "$BACKEND $fam $lim $d: exit $r, $(( $(date +%s) - td )) s"
		done
		echo "$BACKEND $fam $lim: exit $rc, $(( $(date +%s) - t0 )) s"
	done
done
