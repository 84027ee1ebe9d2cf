# The contention grid's families (docs/predictions/contention/README.md), as
# `cuzk bench contention` flags; sourced by contention_grid.sh,
# contention_calibrate.sh and contention_fit.sh.
# family FAMILY sets MEM (items a run, staged and copied bytes, the kernel's
# scratch) and COSTS (the kernel and the CPU stages before and after it).
family() {
	case $1 in
	f1) MEM="--items 12 --staged 6GiB --copy 1GiB --scratch 1GiB"; COSTS="--kernel 150ms --before 100ms --after 50ms" ;;
	f2) MEM="--items 8 --staged 10GiB --copy 3GiB --scratch 2GiB"; COSTS="--kernel 400ms --before 250ms --after 100ms" ;;
	f3) MEM="--items 10 --staged 7GiB --copy 2GiB --scratch 512MiB"; COSTS="--kernel 250ms --before 180ms --after 60ms" ;;
	f4) MEM="--items 16 --staged 12GiB --copy 1GiB --scratch 2GiB"; COSTS="--kernel 100ms --before 50ms --after 30ms" ;;
	f5) MEM="--items 10 --staged 6656MiB --copy 3GiB --scratch 1GiB"; COSTS="--kernel 200ms --before 150ms --after 80ms" ;;
	f6) MEM="--items 14 --staged 11GiB --copy 512MiB --scratch 1536MiB"; COSTS="--kernel 120ms --before 60ms --after 40ms" ;;
	f7) MEM="--items 12 --staged 9GiB --copy 2GiB --scratch 1GiB"; COSTS="--kernel 160ms --before 110ms --after 50ms" ;;
	f8) MEM="--items 10 --staged 6GiB --copy 4GiB --scratch 2GiB"; COSTS="--kernel 220ms --before 80ms --after 120ms" ;;
	f9) MEM="--items 14 --staged 5GiB --copy 2560MiB --scratch 1GiB"; COSTS="--kernel 90ms --before 70ms --after 25ms" ;;
	f10) MEM="--items 12 --staged 7GiB --copy 1536MiB --scratch 512MiB"; COSTS="--kernel 140ms --before 90ms --after 60ms" ;;
	f11) MEM="--items 12 --staged 8GiB --copy 2GiB --scratch 768MiB"; COSTS="--kernel 180ms --before 120ms --after 40ms" ;;
	f12) MEM="--items 12 --staged 10GiB --copy 1GiB --scratch 1GiB"; COSTS="--kernel 120ms --before 140ms --after 30ms" ;;
	f13) MEM="--items 14 --staged 6GiB --copy 3GiB --scratch 512MiB"; COSTS="--kernel 110ms --before 50ms --after 70ms" ;;
	f14) MEM="--items 12 --staged 9728MiB --copy 2560MiB --scratch 768MiB"; COSTS="--kernel 130ms --before 100ms --after 50ms" ;;
	# f15-f17 leave the earlier families' ranges: copies longer than the
	# kernel (f15), short kernels beside long CPU stages and a large scratch
	# (f16), and the largest partition with an 8 GiB copy (f17).
	f15) MEM="--items 14 --staged 7GiB --copy 6GiB --scratch 768MiB"; COSTS="--kernel 60ms --before 40ms --after 20ms" ;;
	f16) MEM="--items 16 --staged 6GiB --copy 512MiB --scratch 3GiB"; COSTS="--kernel 40ms --before 200ms --after 80ms" ;;
	f17) MEM="--items 8 --staged 12GiB --copy 8GiB --scratch 1536MiB"; COSTS="--kernel 300ms --before 200ms --after 100ms" ;;
	# f18 is the first family predicted with each stage's own jitter and a
	# pool-beside probe in its calibration: a 4 GiB copy longer than its
	# 50 ms kernel (as f15) between long CPU stages (as f16).
	f18) MEM="--items 14 --staged 5GiB --copy 4GiB --scratch 2GiB"; COSTS="--kernel 50ms --before 150ms --after 60ms" ;;
	# f19 is the first predicted with scratch_oom_waits_copies: three
	# staged partitions and one kernel's scratch are more than 16 GiB.
	f19) MEM="--items 12 --staged 4608MiB --copy 3GiB --scratch 3GiB"; COSTS="--kernel 90ms --before 120ms --after 40ms" ;;
	# f20 and f21 are the first pair in the range of partitions
	# (6-12 GiB) predicted with the model of f19, every row drawn three
	# times on the card: f20 stages 8.5 GiB, two of which never fit
	# under 16 GiB (17 GiB); f21 copies 3.5 GiB, about its 75 ms kernel,
	# with a long CPU stage after it, and under 16 GiB two partitions and
	# one scratch fit (14.5 GiB) where two scratch blocks do not (17).
	f20) MEM="--items 12 --staged 8704MiB --copy 1536MiB --scratch 1280MiB"; COSTS="--kernel 210ms --before 130ms --after 45ms" ;;
	f21) MEM="--items 16 --staged 6GiB --copy 3584MiB --scratch 2560MiB"; COSTS="--kernel 75ms --before 45ms --after 100ms" ;;
	# f22 and f23 are the first calibrated on three one-worker runs of each
	# design (contention_calibrate.sh's RUNS): both copy or trim and grow
	# back for longer than their kernel, so that split's mem lock bounds
	# them at 3-4 workers. f22 copies 4.5 GiB of 7.5 around a 95 ms kernel;
	# under 16 GiB a second partition beside a kernel's scratch does not fit
	# (16.5 GiB). f23 stages 10 GiB around a 55 ms kernel; two never fit.
	f22) MEM="--items 12 --staged 7680MiB --copy 4608MiB --scratch 1536MiB"; COSTS="--kernel 95ms --before 60ms --after 70ms" ;;
	f23) MEM="--items 14 --staged 10GiB --copy 2560MiB --scratch 1GiB"; COSTS="--kernel 55ms --before 90ms --after 40ms" ;;
	# f24 and f25 check scratch_oom_at_once_after_trim on families it was
	# not set from: under 16 GiB two staged partitions fit and a kernel's
	# scratch beside them does not (16.5 GiB), so split-devsync's lost
	# handoffs end in fallback kernels whose scratch fails after a trim;
	# with and without the rule the model differs by 9-15 % there. f24's
	# 3 GiB copy is shorter than its 120 ms kernel; f25 copies 5 GiB around
	# a 70 ms kernel, with a long CPU stage after it.
	f24) MEM="--items 12 --staged 7GiB --copy 3GiB --scratch 2560MiB"; COSTS="--kernel 120ms --before 80ms --after 50ms" ;;
	f25) MEM="--items 14 --staged 6656MiB --copy 5GiB --scratch 3584MiB"; COSTS="--kernel 70ms --before 50ms --after 90ms" ;;
	# f26 is the first family run after the one-command calibration's
	# rounds, predicted from its own call's one-worker runs: under 16 GiB
	# two staged partitions fit (15 GiB) and a kernel's scratch beside them
	# does not (17 GiB), as f24's; its 2 GiB copy is a third of its 100 ms
	# kernel, and its CPU stage before the GPU section the longest stage.
	f26) MEM="--items 12 --staged 7680MiB --copy 2GiB --scratch 2GiB"; COSTS="--kernel 100ms --before 110ms --after 35ms" ;;
	# f27 is the first whose later_first is fitted through the simulator
	# from its own race runs (bench contention calibrate --race): under 16
	# GiB two staged partitions fit (13 GiB) and a kernel's scratch beside
	# them does not (16.5 GiB); its 4 GiB copy is about its 85 ms kernel.
	f27) MEM="--items 12 --staged 6656MiB --copy 4GiB --scratch 3584MiB"; COSTS="--kernel 85ms --before 60ms --after 70ms" ;;
	# f28 is the first family run with free mutexes taken in place (runs/
	# h200-2026-12-05d): under 16 GiB two staged partitions fit (14 GiB)
	# and a kernel's scratch beside them does not (17 GiB); its 3 GiB copy
	# is shorter than its 95 ms kernel, its CPU stages the shortest yet.
	f28) MEM="--items 12 --staged 7GiB --copy 3GiB --scratch 3GiB"; COSTS="--kernel 95ms --before 45ms --after 40ms" ;;
	# f29 is the first family calibrated with --beside (its card's own pool
	# figures beside a kernel) and predicted with both those and the base's.
	f29) MEM="--items 12 --staged 8704MiB --copy 2560MiB --scratch 2560MiB"; COSTS="--kernel 120ms --before 70ms --after 30ms" ;;
	# f30 is the first family run after a trim's copy-engine work was
	# modelled (trim_copy_work_ms_per_gib), its copies longer than its kernels.
	f30) MEM="--items 12 --staged 10GiB --copy 5GiB --scratch 1536MiB"; COSTS="--kernel 70ms --before 90ms --after 50ms" ;;
	*) echo "unknown family $1" >&2; return 2 ;;
	esac
}

# The designs of the grid (DESIGNS, comma-separated, picks some).
DESIGNS=${DESIGNS:-single,split-first,split-devsync,split,budget}

# On the emulated backend the copy engine keeps the work a cudaFree leaves,
# as the H200 does (docs/cuda-facts.md), so that the pipeline can be tried
# without a card; EMU_TRIM_WORK (say 2590us, the H200's from the trim's start) adds the work a trim
# leaves (--trim-copy-work), which runs made before it had not.
backend_flags() {
	[ "$1" = emu ] && echo "--free-copy-work 2450us${EMU_TRIM_WORK:+ --trim-copy-work $EMU_TRIM_WORK}"
	return 0
}
