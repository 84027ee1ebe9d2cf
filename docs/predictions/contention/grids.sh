# The card's grid of each family (the table `contention_grid.sh` printed on the
# H200), for the recheck scripts beside it: `card FAMILY LIMIT` (140GiB or
# 16GiB) prints its path. Sourced from the repository root.
card() {
	local R=docs/runs
	case $1 in
	f4) echo $R/h200-2026-12-01d/contention-grid/gpu-$1-$2.txt ;;
	f6) echo $R/h200-2026-12-01f/f3/grid/gpu-$1-$2.txt ;;
	f7) echo $R/h200-2026-12-01h/h4/grid/gpu-$1-$2.txt ;;
	f8) echo $R/h200-2026-12-01h/h6/grid/gpu-$1-$2.txt ;;
	f9) echo $R/h200-2026-12-02b/r2/grid/gpu-$1-$2.txt ;;
	f10) echo $R/h200-2026-12-02b/r4/grid/gpu-$1-$2.txt ;;
	f11) echo $R/h200-2026-12-03b/r2/grid/gpu-$1-$2.txt ;;
	f12 | f13) echo $R/h200-2026-12-03c/r2/grid/gpu-$1-$2.txt ;;
	f14) echo $R/h200-2026-12-03c/r4/grid/gpu-$1-$2.txt ;;
	f15) echo $R/h200-2026-12-03d/r2/grid/gpu-$1-$2.txt ;;
	f16) echo $R/h200-2026-12-03d/r3/grid/gpu-$1-$2.txt ;;
	f17) [ "$2" = 16GiB ] && echo $R/h200-2026-12-03d/r3/grid/gpu-$1-$2.txt || echo $R/h200-2026-12-03d/r2/grid/gpu-$1-$2.txt ;;
	f18) echo $R/h200-2026-12-03e/r2/grid/gpu-$1-$2.txt ;;
	f19) echo $R/h200-2026-12-03e/r4/grid/gpu-$1-$2.txt ;;
	f20 | f21) echo $R/h200-2026-12-03f/r2/grid/gpu-$1-$2.txt ;; # the first of three draws (r3, r4)
	*) echo "no card grid for $1" >&2; return 2 ;;
	esac
}

# recheck DIR FAMILY LIMIT LABEL predicts the family's grid under the limit
# with DIR/h200-contention-FAMILY.json (16 seeds a row; $CUZK), compares it
# with the card's, writes DIR/sim-FAMILY-LIMIT.txt (.err) and
# DIR/errors-FAMILY-LIMIT.txt, and prints LABEL and the errors' summary line.
recheck() {
	local dir=$1 fam=$2 lim=$3
	family "$fam"
	"$CUZK" bench contention --backend sim --profile "$dir/h200-contention-$fam.json" --seeds 16 $MEM --vram-limit "$lim" \
		--designs "$DESIGNS" --workers 1,2,3,4 > "$dir/sim-$fam-$lim.txt" 2> "$dir/sim-$fam-$lim.err"
	gpuprove/contention_errors.sh "$dir/sim-$fam-$lim.txt" "$(card "$fam" "$lim")" > "$dir/errors-$fam-$lim.txt"
	echo "$4: $(tail -1 "$dir/errors-$fam-$lim.txt")"
}
