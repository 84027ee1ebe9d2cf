#!/usr/bin/env bash
# The model as it stands against every card grid whose one-worker calibration
# is committed: each family fitted again from its own call's one-worker traces
# with this binary (`bench contention calibrate --fit-only`, the base
# h200-contention-base, its newest_first and later_first as predict.sh takes
# them), its grids predicted (16 seeds a row, in the runtime the card ran:
# --lock-hops for every run before runs/h200-2026-12-05d), and read against
# the mean of every committed draw of each row with draws/compare.py; beside
# it the prediction committed before the card ran (the model of its day)
# against the same draws. No device is used. Not blind: the base's rules were
# read from some of these runs (README.md).
#   bash docs/runs/retro-2026-12-05/retro.sh      (from the repository root)
#   CUZK (default build/cuzk), TMP (default a fresh temporary directory),
#   FAMS (default every family below), SEEDS (16).
set -eu
CUZK=${CUZK:-build/cuzk}
TMP=${TMP:-$(mktemp -d)}
R=docs/runs P=docs/predictions/contention
. gpuprove/contention_families.sh
nf=$(python3 -c "import json; print(json.load(open('sim/profiles/h200-contention-base.json'))['host']['handoff']['newest_first'])")
mkdir -p "$TMP/x"

# at SPEC: SPEC's path here; ARCHIVE.tgz::MEMBER is MEMBER of the archive,
# unpacked once under $TMP/x.
at() {
	case $1 in
	*::*)
		local a=${1%%::*} m=${1#*::}
		[ -d "$TMP/x/$a" ] || { mkdir -p "$TMP/x/$a" && tar xzf "$a" -C "$TMP/x/$a"; }
		echo "$TMP/x/$a/$m" ;;
	*) echo "$1" ;;
	esac
}

# Each family: card, runtime, the calibration's four runs (designs, probe,
# ballast, probe-ballast: a folder of one-worker traces each, "-" where the
# call had none), the folders of its draws (a trailing ! marks one whose
# 16 GiB budget rows are of the design before baa094f), the prediction
# committed before the card ran (a folder holding sim-<family>-<limit>.txt).
# f9's ballast is r3's rerun, the first whose traces carry cudaMemGetInfo's
# free bytes (the limit's shortfall: f9/README.md); f18, f19 and f22 take
# budget's 16 GiB rows from the draws of the design that keeps room for a
# kernel's scratch (runs/h200-2026-12-04 r1).
while IFS='|' read -r fam card runtime designs probe ballast pballast draws committed; do
	case " ${FAMS:-$fam} " in *" $fam "*) ;; *) continue ;; esac
	family "$fam"
	L=$TMP/cal-$fam
	rm -rf "$L"; mkdir -p "$L"
	for d in designs:$designs probe:$probe ballast:$ballast probe-ballast:$pballast; do
		src=${d#*:}
		[ "$src" = - ] || ln -sfn "$(realpath "$(at "$src")")" "$L/${d%%:*}"
	done
	prof=$TMP/h200-contention-$fam.json
	"$CUZK" bench contention calibrate --fit-only $COSTS $MEM --dir "$L" --name retro-$fam --out "$prof" > "$TMP/fit-$fam.txt" 2>&1 ||
		{ echo "== $fam: the fit failed: $(tail -1 "$TMP/fit-$fam.txt")"; continue; }
	python3 $P/setfield.py "$prof" "$prof" host.handoff.newest_first "$nf" > /dev/null
	hops=
	[ "$runtime" = hops ] && hops=--lock-hops
	for lim in 140GiB 16GiB; do
		runs=()
		for d in $draws; do
			f=$(at "${d%!}")/gpu-$fam-$lim.txt
			[ -f "$f" ] && [ "$(awk '$2 ~ /^[0-9]$/' "$f" | wc -l)" -gt 0 ] || continue
			# A draw marked ! ran the budget design before it kept room for
			# one kernel's scratch (baa094f): under the limit, where that
			# changed what it admits, its budget rows are left out.
			if [ "$d" != "${d%!}" ] && [ "$lim" = 16GiB ]; then
				g=$TMP/draw-$(echo "$d" | tr -c 'a-zA-Z0-9\n' _)-$fam-$lim.txt
				awk '$1 != "budget"' "$f" > "$g"
				f=$g
			fi
			runs+=("$f")
		done
		[ ${#runs[@]} -gt 0 ] || continue
		sim=$TMP/sim-$fam-$lim.txt
		"$CUZK" bench contention --backend sim --profile "$prof" --seeds "${SEEDS:-16}" $MEM $hops --vram-limit "$lim" \
			--workers 1,2,3,4 > "$sim" 2> "${sim%.txt}.err"
		python3 $P/draws/compare.py "$sim" "${runs[@]}" > "$TMP/now-$fam-$lim.txt"
		then=-
		old=$(at "$committed")/sim-$fam-$lim.txt
		if [ "$committed" != - ] && [ -f "$old" ]; then
			python3 $P/draws/compare.py "$old" "${runs[@]}" > "$TMP/then-$fam-$lim.txt"
			then=$(grep 'rows against' "$TMP/then-$fam-$lim.txt" | sed 's/.*median \([0-9.]*\) %, max \([0-9.]*\) %; GPU busy within \([0-9.]*\) points.*/\1 \/ \2 %, \3/')
		fi
		now=$(grep 'rows against' "$TMP/now-$fam-$lim.txt" | sed 's/.*median \([0-9.]*\) %, max \([0-9.]*\) %; GPU busy within \([0-9.]*\) points.*/\1 \/ \2 %, \3/')
		# OOM: the rows whose share of draws with an OOM and share of seeds
		# with one differ by more than a half (compare.py's list).
		oom=$(grep 'OOM shares differing' "$TMP/now-$fam-$lim.txt" | sed 's/.*: //')
		n=0
		[ "$oom" = none ] || n=$(echo "$oom" | tr ';' '\n' | wc -l)
		printf '%-4s %-5s %-5s %-7s draws %d   now %-20s OOM off %d   then %s\n' "$fam" "$card" "$runtime" "$lim" ${#runs[@]} "$now" "$n" "$then"
		# The rows beyond 5 % now.
		awk 'NF > 10 && $2 ~ /^[0-9]$/ { e = $11; sub("%", "", e); if (e + 0 > 5 || e + 0 < -5) print "        beyond 5 %: " $0 }' "$TMP/now-$fam-$lim.txt"
	done
done <<X
f6|H200|hops|$R/h200-2026-12-01f/contention-calibration/traces-f6|$R/h200-2026-12-01f/contention-calibration/traces-f6-probe|$R/h200-2026-12-01h/h3/calibration/traces-f6-ballast|-|$R/h200-2026-12-01f/f3/grid!|$P/f56
f7|H200|hops|$R/h200-2026-12-01h/h3/calibration/traces-f7|$R/h200-2026-12-01h/h3/calibration/traces-f7-probe|$R/h200-2026-12-01h/h3/calibration/traces-f7-ballast|-|$R/h200-2026-12-01h/h4/grid!|$P/f7
f8|H200|hops|$R/h200-2026-12-01h/h5/calibration/traces-f8|$R/h200-2026-12-01h/h5/calibration/traces-f8-probe|$R/h200-2026-12-01h/h5/calibration/traces-f8-ballast|-|$R/h200-2026-12-01h/h6/grid!|$P/f8
f9|H200|hops|$R/h200-2026-12-02b/r1/calibration/traces-f9|$R/h200-2026-12-02b/r1/calibration/traces-f9-probe|$R/h200-2026-12-02b/r3/traces-f9-ballast|-|$R/h200-2026-12-02b/r2/grid! $R/h200-2026-12-02b/r4/grid-f9!|$P/f9
f10|H200|hops|$R/h200-2026-12-02b/r3/calibration/traces-f10|$R/h200-2026-12-02b/r3/calibration/traces-f10-probe|$R/h200-2026-12-02b/r3/calibration/traces-f10-ballast|-|$R/h200-2026-12-02b/r4/grid!|$P/f10
f11|H200|hops|$R/h200-2026-12-03b/r1/cal/traces-f11|$R/h200-2026-12-03b/r1/cal/traces-f11-probe|$R/h200-2026-12-03b/r1/cal/traces-f11-ballast|$R/h200-2026-12-03c/r3/probe-ballast-f11|$R/h200-2026-12-03b/r2/grid!|$P/f11
f12|H200|hops|$R/h200-2026-12-03c/r1/cal/traces-f12|$R/h200-2026-12-03c/r1/cal/traces-f12-probe|$R/h200-2026-12-03c/r1/cal/traces-f12-ballast|$R/h200-2026-12-03c/r3/probe-ballast-f12|$R/h200-2026-12-03c/r2/grid!|$P/f12
f13|H200|hops|$R/h200-2026-12-03c/r1/cal/traces-f13|$R/h200-2026-12-03c/r1/cal/traces-f13-probe|$R/h200-2026-12-03c/r1/cal/traces-f13-ballast|-|$R/h200-2026-12-03c/r2/grid!|$P/f13
f14|H200|hops|$R/h200-2026-12-03c/r3/cal/traces-f14|$R/h200-2026-12-03c/r3/cal/traces-f14-probe|$R/h200-2026-12-03c/r3/cal/traces-f14-ballast|$R/h200-2026-12-03c/r3/cal/traces-f14-probe-ballast|$R/h200-2026-12-03c/r4/grid!|$P/f14
f15|H200|hops|$R/h200-2026-12-03d/r1/cal/traces-f15|$R/h200-2026-12-03d/r1/cal/traces-f15-probe|$R/h200-2026-12-03d/r1/cal/traces-f15-ballast|$R/h200-2026-12-03d/r1/cal/traces-f15-probe-ballast|$R/h200-2026-12-03d/r2/grid!|$P/f15
f16|H200|hops|$R/h200-2026-12-03d/r1/cal/traces-f16|$R/h200-2026-12-03d/r1/cal/traces-f16-probe|$R/h200-2026-12-03d/r1/cal/traces-f16-ballast|$R/h200-2026-12-03d/r1/cal/traces-f16-probe-ballast|$R/h200-2026-12-03d/r3/grid!|$P/f16
f17|H200|hops|$R/h200-2026-12-03d/r1/cal/traces-f17|$R/h200-2026-12-03d/r1/cal/traces-f17-probe|$R/h200-2026-12-03d/r1/cal/traces-f17-ballast|$R/h200-2026-12-03d/r1/cal/traces-f17-probe-ballast|$R/h200-2026-12-03d/r2/grid! $R/h200-2026-12-03d/r3/grid!|$P/f17
f18|H200|hops|$R/h200-2026-12-03e/r1/cal/traces-f18|$R/h200-2026-12-03e/r1/cal/traces-f18-probe|$R/h200-2026-12-03e/r1/cal/traces-f18-ballast|$R/h200-2026-12-03e/r1/cal/traces-f18-probe-ballast|$R/h200-2026-12-03e/r2/grid! $R/h200-2026-12-04/r1/r1.tgz::d1 $R/h200-2026-12-04/r1/r1.tgz::d2 $R/h200-2026-12-04/r1/r1.tgz::d3|$P/f18
f19|H200|hops|$R/h200-2026-12-03e/r3/cal/traces-f19|$R/h200-2026-12-03e/r3/cal/traces-f19-probe|$R/h200-2026-12-03e/r3/cal/traces-f19-ballast|$R/h200-2026-12-03e/r3/cal/traces-f19-probe-ballast|$R/h200-2026-12-03e/r4/grid! $R/h200-2026-12-04/r1/r1.tgz::d1 $R/h200-2026-12-04/r1/r1.tgz::d2 $R/h200-2026-12-04/r1/r1.tgz::d3|$P/f19
f20|H200|hops|$R/h200-2026-12-03f/r1/r1.tgz::cal/traces-f20|$R/h200-2026-12-03f/r1/r1.tgz::cal/traces-f20-probe|$R/h200-2026-12-03f/r1/r1.tgz::cal/traces-f20-ballast|$R/h200-2026-12-03f/r1/r1.tgz::cal/traces-f20-probe-ballast|$R/h200-2026-12-03f/r2/grid! $R/h200-2026-12-03f/r3/grid! $R/h200-2026-12-03f/r4/grid!|$P/f20
f21|H200|hops|$R/h200-2026-12-03f/r1/r1.tgz::cal/traces-f21|$R/h200-2026-12-03f/r1/r1.tgz::cal/traces-f21-probe|$R/h200-2026-12-03f/r1/r1.tgz::cal/traces-f21-ballast|$R/h200-2026-12-03f/r1/r1.tgz::cal/traces-f21-probe-ballast|$R/h200-2026-12-03f/r2/grid! $R/h200-2026-12-03f/r3/grid! $R/h200-2026-12-03f/r4/grid!|$P/f21
f22|H200|hops|$R/h200-2026-12-03g/r1/r1.tgz::cal/traces-f22|$R/h200-2026-12-03g/r1/r1.tgz::cal/traces-f22-probe|$R/h200-2026-12-03g/r1/r1.tgz::cal/traces-f22-ballast|$R/h200-2026-12-03g/r1/r1.tgz::cal/traces-f22-probe-ballast|$R/h200-2026-12-03g/r2/grid! $R/h200-2026-12-04/r2-d2/d2.tgz::grid $R/h200-2026-12-04/r2-d3/d3.tgz::grid $R/h200-2026-12-04/r1/r1.tgz::d1 $R/h200-2026-12-04/r1/r1.tgz::d2 $R/h200-2026-12-04/r1/r1.tgz::d3|$P/f22
f23|H200|hops|$R/h200-2026-12-03g/r1/r1.tgz::cal/traces-f23|$R/h200-2026-12-03g/r1/r1.tgz::cal/traces-f23-probe|$R/h200-2026-12-03g/r1/r1.tgz::cal/traces-f23-ballast|$R/h200-2026-12-03g/r1/r1.tgz::cal/traces-f23-probe-ballast|$R/h200-2026-12-03g/r2/grid! $R/h200-2026-12-04/r2-d2/d2.tgz::grid $R/h200-2026-12-04/r2-d3/d3.tgz::grid $R/h200-2026-12-04e/c1/grids.tgz::d1|$P/f23
f24|H200|hops|$R/h200-2026-12-04b/r1/cal.tgz::traces-f24|$R/h200-2026-12-04b/r1/cal.tgz::traces-f24-probe|$R/h200-2026-12-04b/r1/cal.tgz::traces-f24-ballast|$R/h200-2026-12-04b/r1/cal.tgz::traces-f24-probe-ballast|$R/h200-2026-12-04b/r2/grids.tgz::d1 $R/h200-2026-12-04b/r2/grids.tgz::d2 $R/h200-2026-12-04b/r2/grids.tgz::d3 $R/h200-2026-12-04e/c1/grids.tgz::d1 $R/h200-2026-12-05/c2/run.tgz::d1 $R/h200-2026-12-05/c2/run.tgz::d2|$P/f24
f25|H200|hops|$R/h200-2026-12-04b/r1/cal.tgz::traces-f25|$R/h200-2026-12-04b/r1/cal.tgz::traces-f25-probe|$R/h200-2026-12-04b/r1/cal.tgz::traces-f25-ballast|$R/h200-2026-12-04b/r1/cal.tgz::traces-f25-probe-ballast|$R/h200-2026-12-04b/r2/grids.tgz::d1 $R/h200-2026-12-04b/r2/grids.tgz::d2 $R/h200-2026-12-04b/r2/grids.tgz::d3 $R/h200-2026-12-04e/c1/grids.tgz::d1 $R/h200-2026-12-05/c1/run.tgz::d1 $R/h200-2026-12-05/c1/run.tgz::d2|$P/f25
f26|H200|hops|$R/h200-2026-12-05b/c2/run.tgz::cal-f26/designs|$R/h200-2026-12-05b/c2/run.tgz::cal-f26/probe|$R/h200-2026-12-05b/c2/run.tgz::cal-f26/ballast|$R/h200-2026-12-05b/c2/run.tgz::cal-f26/probe-ballast|$R/h200-2026-12-05b/c2/run.tgz::d1|$R/h200-2026-12-05b/pred
f28|H100|place|$R/h100-2026-12-05/c1/run.tgz::cal-f28/designs|$R/h100-2026-12-05/c1/run.tgz::cal-f28/probe|$R/h100-2026-12-05/c1/run.tgz::cal-f28/ballast|$R/h100-2026-12-05/c1/run.tgz::cal-f28/probe-ballast|$R/h100-2026-12-05/c1/run.tgz::d1|$R/h100-2026-12-05/pred
f29|H100|place|$R/h100-2026-12-06/c3/run.tgz::cal-f29/designs|$R/h100-2026-12-06/c3/run.tgz::cal-f29/probe|$R/h100-2026-12-06/c3/run.tgz::cal-f29/ballast|$R/h100-2026-12-06/c3/run.tgz::cal-f29/probe-ballast|$R/h100-2026-12-06/c3/run.tgz::d1 $R/h100-2026-12-06/c3/run.tgz::d2 $R/h100-2026-12-06/c3/run.tgz::d3|$R/h100-2026-12-06/pred
X

