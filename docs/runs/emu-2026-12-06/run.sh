# f30 on the build host's emulated device with a trim's copy-engine work
# (--trim-copy-work 1320us, the H200's; README.md), in three steps:
#   K=build/cuzk OUT=DIR STEP=cal bash docs/runs/emu-2026-12-06/run.sh    # bench contention calibrate --runs 1
#   K=build/cuzk OUT=DIR STEP=pred bash docs/runs/emu-2026-12-06/run.sh   # pred/ (the fit) and pred-notrim/ (its trim figure 0), committed first
#   K=build/cuzk OUT=DIR STEP=grid DRAWS=2 bash docs/runs/emu-2026-12-06/run.sh   # draws of both grids, read against both
set -eu
H=docs/runs/emu-2026-12-06
export EMU_TRIM_WORK=1320us
. gpuprove/contention_families.sh
family f30
mkdir -p "$OUT"
case $STEP in
cal)
	"$K" version | head -1 > "$OUT/binary.txt"
	"$K" bench contention calibrate --backend emu $COSTS $MEM $(backend_flags emu) --runs 1 \
		--dir "$OUT/cal-f30" --name emu-contention-f30 > "$OUT/cal-f30.txt" 2>&1
	grep -E 'h2d_gbps|copy_work' "$OUT/cal-f30.txt" ;;
pred)
	FAMS=f30 SEEDS=64 COMPARE=0 CUZK=$K bash docs/runs/h200-2026-12-05/predict.sh "$OUT" $H/pred
	rm -rf $H/pred/cal-f30
	mkdir -p $H/pred-notrim
	python3 docs/predictions/contention/setfield.py $H/pred/h200-contention-f30.json $H/pred-notrim/h200-contention-f30.json \
		device.trim_copy_work_ms_per_gib 0 > /dev/null
	OUT=$H/pred-notrim BACKEND=sim PROFILES=$H/pred-notrim FAMILIES=f30 SEEDS=64 CUZK=$K gpuprove/contention_grid.sh > /dev/null ;;
grid)
	for D in $(seq 1 ${DRAWS:-2}); do
		CUZK=$K OUT=$OUT/d$D BACKEND=emu FAMILIES=f30 LIMITS="16GiB 140GiB" TRACES=1 DESIGN_TIMEOUT=120 \
			gpuprove/contention_grid.sh
	done
	for p in pred pred-notrim; do for lim in 16GiB 140GiB; do
		echo "== f30 $lim against $p"
		python3 docs/predictions/contention/draws/compare.py "$H/$p/sim-f30-$lim.txt" "$OUT"/d*/emu-f30-$lim.txt
	done; done ;;
esac
