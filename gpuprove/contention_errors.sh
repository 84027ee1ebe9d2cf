#!/usr/bin/env bash
# Compares a predicted table of `cuzk bench contention` (--backend sim) with the
# measured one (--backend gpu) of the same configurations: per row the items/s
# of each and the error of the prediction, GPU busy of each and the difference
# in points, and whether the prediction had the OOM outcome right (any OOM,
# pre-stage or fallback, yes or no); then the median and largest throughput
# error, the largest busy difference and the OOM rows wrong, which are the
# goals docs/predictions/contention/README.md states. Where the prediction
# was the mean of several seeds (bench contention --seeds N, whose stderr
# beside PREDICTED, .txt → .err, gives each row's range of items/s), the
# last column says whether the card's items/s lie in that range, and the
# summary counts the rows outside it: split-devsync's rows at 3–4 workers
# are bimodal, on the card as in the model, and one card run is one draw.
#   contention_errors.sh PREDICTED MEASURED
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 PREDICTED MEASURED" >&2; exit 2; }
awk '
function row(f,   i) { return f[1] "/" f[2] }
# A table row: design, workers (a number), items/s, busy, proved, failed,
# retries, OOM pre-stage, OOM fallback, ...
# The seed range: "design × workers: N seeds, items/s LO to HI".
FILENAME ~ /\.err$/ {
	if ($0 ~ /^[a-z-]+ × [0-9]+: [0-9]+ seeds, items\/s [0-9.]+ to [0-9.]+/) {
		split($0, f, " ")
		w = f[3]; sub(/:/, "", w)
		lo[f[1] "/" w] = f[7]; hi[f[1] "/" w] = f[9]
	}
	next
}
{
	n = split($0, f, " ")
	if (n < 10 || f[2] !~ /^[0-9]+$/) next
	k = row(f); busy = f[4]; sub(/%/, "", busy)
	oom = (f[8] + f[9] > 0) ? "yes" : "no"
	if (FILENAME != measured) { pi[k] = f[3]; pb[k] = busy; po[k] = oom; order[++rows] = k }
	else { mi[k] = f[3]; mb[k] = busy; mo[k] = oom }
}
END {
	printf "%-18s %9s %9s %7s %7s %7s %6s %9s\n", "design/workers", "pred/s", "meas/s", "error", "busy p", "busy m", "Δ pts", "OOM p/m"
	m = 0; worst = 0; dbusy = 0; wrong = 0
	for (r = 1; r <= rows; r++) {
		k = order[r]
		if (!(k in mi)) { printf "%-18s not measured\n", k; continue }
		e = mi[k] > 0 ? (pi[k] - mi[k]) / mi[k] * 100 : 0
		ae = e < 0 ? -e : e
		errs[++m] = ae
		if (ae > worst) worst = ae
		d = pb[k] - mb[k]; ad = d < 0 ? -d : d
		if (ad > dbusy) dbusy = ad
		ok = po[k] == mo[k] ? "" : "  WRONG"
		if (ok != "") wrong++
		rng = ""
		if (k in lo) {
			seeds++
			rng = (mi[k] + 0 >= lo[k] - 0.005 && mi[k] + 0 <= hi[k] + 0.005) ? "  in " lo[k] "-" hi[k] : "  OUT " lo[k] "-" hi[k]
			if (rng ~ /OUT/) outside++
		}
		printf "%-18s %9.2f %9.2f %+6.1f%% %6.1f%% %6.1f%% %+6.1f %5s/%-3s%s%s\n", k, pi[k], mi[k], e, pb[k], mb[k], d, po[k], mo[k], ok, rng
	}
	if (m == 0) { print "no rows in common"; exit 1 }
	# median of the absolute errors
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (errs[j] < errs[i]) { t = errs[i]; errs[i] = errs[j]; errs[j] = t }
	med = m % 2 ? errs[(m + 1) / 2] : (errs[m / 2] + errs[m / 2 + 1]) / 2
	printf "%d rows: throughput error median %.1f %%, max %.1f %%; GPU busy within %.1f points; OOM yes/no wrong on %d rows", m, med, worst, dbusy, wrong
	if (seeds > 0) printf "; items/s outside the seed range on %d of %d rows", outside + 0, seeds
	printf "\n"
}' $( [ -f "${1%.txt}.err" ] && [ "${1%.txt}.err" != "$1" ] && echo "${1%.txt}.err" ) "$1" measured="$2" "$2"
