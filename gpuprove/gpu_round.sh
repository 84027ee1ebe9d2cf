#!/usr/bin/env bash
# One round of GPU proving on the GPU machine, from the repository root, with
# the binaries built here in $C (see docs/gpu-proving.md): the GPU tests with
# CUZK_REQUIRE_GPU=1, then bench prove --backend gpu (every design × 1..3
# workers on the whole card, then 3 workers under a 16 GiB limit). The kernel
# library is $C/libcuzkgpu.so when it is there and proves correctly, else it is
# built from $C/cudasrc. Logs and traces go to $OUT; a summary is printed last.
#   SIZE: constraints per partition (default 256K); CIRCUIT (default mimc);
#   SKIP_TESTS=1; BENCH_TIMEOUT / BENCH16_TIMEOUT: seconds for the two benches.
set -u
C=${C:-.gpuprove-carry}
OUT=${OUT:-/tmp/cuzk-gpuprove}
SIZE=${SIZE:-256K}
CIRCUIT=${CIRCUIT:-mimc}
mkdir -p "$OUT"
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s]"; }
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv > "$OUT/bench.err" 2>&1
for f in cuzk gpuprove.test; do
	[ -f "$C/$f.gz" ] && gunzip -c "$C/$f.gz" > "$C/$f" && chmod +x "$C/$f"
done
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so CUZK_REQUIRE_GPU=1
build_lib() {
	/usr/local/cuda/bin/nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -gencode=arch=compute_90,code=sm_90 \
		-o "$C/libcuzkgpu.so" "$C/cudasrc/cuda/src/cuzkgpu.cu" > "$OUT/nvcc.log" 2>&1
}
[ -f "$C/libcuzkgpu.so" ] || { build_lib; echo "$(el) library built: $?"; }
check() {
	timeout 120 "$C/gpuprove.test" -test.v -test.count=1 -test.run 'TestGPUComputeEqualsCPU' > "$OUT/test-compute.log" 2>&1
}
rc=0; rc2=0
if [ "${SKIP_TESTS:-0}" != 1 ]; then
check; rc=$?
if [ $rc != 0 ]; then
	echo "$(el) compute test failed with the shipped library ($rc):"; grep -E "^\s+gpuprove_test.go|--- " "$OUT/test-compute.log" | head -8
	cp "$OUT/test-compute.log" "$OUT/test-compute-shipped.log"
	build_lib; echo "$(el) library rebuilt from the committed source: $?"
	check; rc=$?
fi
echo "$(el) compute test exit $rc"
timeout 150 "$C/gpuprove.test" -test.v -test.count=1 -test.run 'TestDeviceOps|TestProveOnGPU|TestFootprint|TestNatural|TestAuto|TestOpen' > "$OUT/test-rest.log" 2>&1
rc2=$?
echo "$(el) other tests exit $rc2"
fi
mkdir -p "$OUT/traces"
timeout "${BENCH_TIMEOUT:-240}" "$C/cuzk" bench prove --backend gpu --circuit "$CIRCUIT" --sizes "$SIZE" --keys /tmp/cuzk-keys \
	--trace-dir "$OUT/traces" --gnark-runs 2 > "$OUT/bench.txt" 2>> "$OUT/bench.err"
echo "$(el) bench exit $?"
timeout "${BENCH16_TIMEOUT:-100}" "$C/cuzk" bench prove --backend gpu --circuit "$CIRCUIT" --sizes "$SIZE" --keys /tmp/cuzk-keys \
	--trace-dir "$OUT/traces" --workers 3 --vram-limits 16GiB --gnark-runs 0 > "$OUT/bench-16g.txt" 2>> "$OUT/bench.err"
echo "$(el) bench 16GiB exit $?"
tar czf "$OUT/traces.tgz" -C "$OUT" traces && rm -rf "$OUT/traces"
[ "${SKIP_TESTS:-0}" = 1 ] || grep -hE "^(--- |ok|FAIL|PASS|panic)|gpuprove_test.go:[0-9]+:" "$OUT/test-compute.log" "$OUT/test-rest.log" | head -40
grep -E "^(bench|setup|cuzk|panic)" "$OUT/bench.err" | tail -24
cat "$OUT/bench.txt" "$OUT/bench-16g.txt"
exit $(( rc | rc2 ))
