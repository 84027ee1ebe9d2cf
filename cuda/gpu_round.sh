#!/usr/bin/env bash
# One round on the GPU machine, from the repository root: build the kernel
# library unless build/ already has one (REBUILD=1 forces it), run the GPU
# tests with CUZK_REQUIRE_GPU=1, then the kernel benchmarks. Full logs go to
# $OUT; a short summary is printed last.
#   TESTRUN: -test.run pattern (default: all); BENCH_SIZES: log sizes;
#   SKIP_TESTS=1 / SKIP_BENCH=1.
set -u
OUT=${OUT:-/tmp/cuzk-gpu-round}
mkdir -p "$OUT"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
if [ ! -f build/libcuzkgpu.so ] || [ "${REBUILD:-0}" = 1 ]; then
	start=$(date +%s)
	if ! make cuda NVCC="${NVCC:-/usr/local/cuda/bin/nvcc}" EXTRA_NVCC_FLAGS="-Xptxas -v" > "$OUT/nvcc.log" 2>&1; then
		tail -40 "$OUT/nvcc.log"
		exit 1
	fi
	echo "library built in $(( $(date +%s) - start )) s"
fi
export CUZK_REQUIRE_GPU=1
rc=0
if [ "${SKIP_TESTS:-0}" != 1 ]; then
	timeout "${TEST_TIMEOUT:-300}" ./build/cuda.test -test.v -test.count=1 -test.run "${TESTRUN:-.}" > "$OUT/test.log" 2>&1
	rc=$?
	grep -E "^(--- |PASS|FAIL|ok|panic)|_test.go:[0-9]+:" "$OUT/test.log" | head -80
	echo "tests exit $rc"
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
	sizes=${BENCH_SIZES:-20,22,24}
	timeout "${BENCH_TIMEOUT:-240}" ./build/cuzk bench ntt --backend gpu --log-sizes "$sizes" --runs 9 > "$OUT/bench-ntt.txt" 2>&1
	echo "bench ntt exit $?"
	timeout "${BENCH_TIMEOUT:-240}" ./build/cuzk bench msm --backend gpu --log-sizes "$sizes" --runs 5 ${MSM_FLAGS:-} > "$OUT/bench-msm.txt" 2>&1
	echo "bench msm exit $?"
	cat "$OUT/bench-ntt.txt" "$OUT/bench-msm.txt"
fi
exit $rc
