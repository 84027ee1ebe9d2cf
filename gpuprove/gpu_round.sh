#!/usr/bin/env bash
# One round of GPU proving on the GPU machine, from the repository root, with
# the binaries built here in $C (see docs/gpu-proving.md): the GPU tests with
# CUZK_REQUIRE_GPU=1 (gpuprove, and cuda and engine when carried), then for each size keys made by keygen on the GPU and
# bench prove --backend gpu over every design × WORKERS × LIMITS, traces kept.
# Everything goes to $OUT as few files (the machine returns a limited number):
# summary.txt, logs.tgz, traces-<size>.tgz. The summary is printed last.
#   SIZES: constraints per partition, space separated (default "1M");
#   CIRCUIT (mimc); WORKERS (1,2,3); LIMITS (0,16GiB); GNARK_RUNS (1);
#   DESIGNS (all); SKIP_TESTS=1; TEST_TIMEOUT (300) and BENCH_TIMEOUT (300) seconds;
#   PARTITION_RUNS (5); TEST_RUN (a -test.run pattern). SIZES=" " runs the tests alone.
set -u
C=$(cd "${C:-.gpuprove-carry}" && pwd)
OUT=${OUT:-/tmp/cuzk-gpuprove}
L=$(mktemp -d)   # logs, tarred at the end
mkdir -p "$OUT"
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$L/summary.txt"; }
for f in cuzk gpuprove.test cuda.test engine.test cli.test libcuzkgpu.so; do
	[ -f "$C/$f.gz" ] && gunzip -c "$C/$f.gz" > "$C/$f" && chmod +x "$C/$f"
	[ -f "$C/$f.xz" ] && xz -dc "$C/$f.xz" > "$C/$f" && chmod +x "$C/$f"
done
[ -f "$C/libcuzkgpu.so" ] || { make cuda BUILD="$C" > "$L/nvcc.log" 2>&1; say "library built: $?"; }
export CUZK_GPU_LIB=$C/libcuzkgpu.so
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$L/gpus.txt" 2>&1
say "$(tail -n +2 "$L/gpus.txt" | tr '\n' ';') $(nproc) cores"
say "$("$C/cuzk" version | tr '\n' ';')"
rc=0
if [ "${SKIP_TESTS:-0}" != 1 ]; then
	# Every GPU test binary carried (gpuprove.test always; cuda.test,
	# engine.test and cli.test when built: go test -c -o $C/<pkg>.test
	# ./<pkg>), each in its package's directory. cli's run only its GPU tests
	# unless TEST_RUN says otherwise.
	for pkg in gpuprove cuda engine cli; do
		[ -x "$C/$pkg.test" ] || continue
		run=${TEST_RUN:-.}
		[ "$pkg" = cli ] && [ -z "${TEST_RUN:-}" ] && run='GPU|StandIn'
		(cd "$pkg" && CUZK_REQUIRE_GPU=1 timeout "${TEST_TIMEOUT:-300}" "$C/$pkg.test" -test.v -test.count=1 -test.run "$run" > "$L/$pkg-test.log" 2>&1)
		r=$?
		[ $r = 0 ] || rc=$r
		say "$pkg tests exit $r: $(grep -c -- '--- PASS' "$L/$pkg-test.log") passed, $(grep -c -- '--- FAIL' "$L/$pkg-test.log") failed"
	done
fi
for size in ${SIZES:-1M}; do
	"$C/cuzk" setup --circuit "${CIRCUIT:-mimc}" --constraints "$size" --keys /tmp/cuzk-keys --keygen gpu > "$L/setup-$size.log" 2>&1
	say "setup $size exit $?: $(tail -1 "$L/setup-$size.log")"
	T=$(mktemp -d)
	timeout "${BENCH_TIMEOUT:-300}" "$C/cuzk" bench prove --backend gpu --circuit "${CIRCUIT:-mimc}" --sizes "$size" \
		--keys /tmp/cuzk-keys --workers "${WORKERS:-1,2,3}" --vram-limits "${LIMITS:-0,16GiB}" \
		--designs "${DESIGNS:-single,split-devsync,split,budget}" --gnark-runs "${GNARK_RUNS:-1}" --partition-runs "${PARTITION_RUNS:-5}" \
		--trace-dir "$T" > "$L/bench-$size.txt" 2> "$L/bench-$size.err"
	say "bench $size exit $?"
	cat "$L/bench-$size.txt" >> "$L/summary.txt"
	gzip "$T"/*.json 2>/dev/null
	tar czf "$OUT/traces-$size.tgz" -C "$T" .
done
cp "$L/summary.txt" "$OUT/summary.txt"
tar czf "$OUT/logs.tgz" -C "$L" .
cat "$OUT/summary.txt"
exit $rc
