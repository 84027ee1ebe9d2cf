#!/usr/bin/env bash
# The peer harness: builds blst and sppark at the pinned commits (pins.sh)
# with a small driver (peer/driver), builds cuzk's kernel library if it is
# missing, and runs `cuzk bench peer`, which times cuzk and sppark on the same
# inputs and checks both against gnark-crypto. Run from the repository root:
#
#   peer/run.sh SRC OUTDIR
#
# SRC holds sppark.tar.gz and blst.tar.gz (as peer/prepare.sh makes them) or
# checkouts sppark/ and blst/. OUTDIR receives the table, the logs and the
# driver's output (small files only). Large files (sources, objects, inputs of
# about 2.3 GB, results) go to $PEER_WORK (default /tmp/cuzk-peer).
# Environment: NVCC (/usr/local/cuda/bin/nvcc), CUDA_ARCH (sm_90), CUZK (the
# cuzk executable; default SRC/cuzk, then build/cuzk, else built with go),
# RUNS (timed runs per case, 5), PEER_ARGS (more flags for bench peer),
# REBUILD=1 (run make cuda even if build/libcuzkgpu.so exists),
# PEER_BUILD_ONLY=1 (build blst and the driver, then stop: a compile check
# that needs no GPU and skips cuzk's own library).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pins.sh"

die() { echo "peer: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: $0 SRC OUTDIR"
src=$(cd "$1" 2>/dev/null && pwd) || die "SRC $1 is not a directory"
mkdir -p "$2" || die "cannot create OUTDIR $2"
out=$(cd "$2" && pwd)
work=${PEER_WORK:-/tmp/cuzk-peer}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
arch=${CUDA_ARCH:-sm_90}
[ -f go.mod ] && [ -d peer/driver ] || die "run me from the cuzk repository root (no go.mod or peer/driver here)"
[ -x "$nvcc" ] || command -v "$nvcc" >/dev/null || die "no nvcc at $nvcc (set NVCC)"
rm -rf "$work/src" "$work/obj" && mkdir -p "$work/src" "$work/obj" "$work/inputs" || die "cannot create $work"
start=$(date +%s)
# The cuzk executable, found before anything is built.
cuzk=${CUZK:-}
if [ "${PEER_BUILD_ONLY:-0}" = 1 ]; then
	cuzk=/bin/true
elif [ -z "$cuzk" ]; then
	if [ -x "$src/cuzk" ]; then cuzk=$src/cuzk
	elif [ -x build/cuzk ]; then cuzk=build/cuzk
	elif command -v go >/dev/null; then cuzk="(go build)"
	else die "no cuzk executable: none in $src/cuzk or build/cuzk, and no go to build one (peer/prepare.sh puts one in SRC)"
	fi
elif [ ! -x "$cuzk" ]; then
	die "CUZK=$cuzk is not an executable file"
fi
echo "peer: sources from $src, work in $work, results in $out"

# unpack NAME COMMIT: $work/src/NAME from SRC/NAME.tar.gz or SRC/NAME/.
unpack() {
	local name=$1 want=$2 got=
	if [ -f "$src/$name.tar.gz" ]; then
		if command -v git >/dev/null; then
			got=$(gzip -dc "$src/$name.tar.gz" | git get-tar-commit-id 2>/dev/null)
		fi
		tar -xzf "$src/$name.tar.gz" -C "$work/src" || die "cannot unpack $src/$name.tar.gz"
		[ -d "$work/src/$name" ] || die "$src/$name.tar.gz has no $name/ directory (make it with peer/prepare.sh)"
	elif [ -d "$src/$name" ]; then
		if command -v git >/dev/null && [ -e "$src/$name/.git" ]; then
			got=$(git -C "$src/$name" rev-parse HEAD 2>/dev/null)
			[ -z "$(git -C "$src/$name" status --porcelain 2>/dev/null)" ] || die "$src/$name has local changes"
		fi
		cp -r "$src/$name" "$work/src/$name" || die "cannot copy $src/$name"
	else
		die "neither $src/$name.tar.gz nor $src/$name/ exists"
	fi
	if [ -z "$got" ]; then
		echo "peer: $name: cannot read its commit here (no git or no commit id); the pin is $want"
	elif [ "$got" != "$want" ]; then
		die "$name is at $got, the pinned commit is $want (peer/pins.sh)"
	else
		echo "peer: $name at $want"
	fi
	echo "$name ${got:-unverified}" >> "$out/commits.txt"
}
: > "$out/commits.txt"
unpack sppark "$SPPARK_COMMIT"
unpack blst "$BLST_COMMIT"
"$nvcc" --version > "$out/nvcc-version.txt" 2>&1
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || echo "peer: nvidia-smi failed (see $out/nvidia-smi.txt)"

# The builds run side by side; each logs to OUTDIR and leaves a status file.
build() {
	local name=$1; shift
	if "$@" > "$out/build-$name.log" 2>&1; then echo 0 > "$work/obj/$name.rc"; else echo 1 > "$work/obj/$name.rc"; fi
}
check() {
	[ "$(cat "$work/obj/$1.rc" 2>/dev/null)" = 0 ] && return 0
	echo "peer: building $1 failed; the end of $out/build-$1.log:" >&2
	tail -30 "$out/build-$1.log" >&2
	exit 1
}
sp=$work/src/sppark
bl=$work/src/blst
flags=(-O3 -std=c++17 -arch="$arch" -DFEATURE_BLS12_381 -D__BLST_PORTABLE__
	-DTAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE -I"$sp" -I"$bl/src" -I"$here/driver"
	-Xcompiler -Wno-unused-function)
build blst sh -c "cd '$bl' && sh build.sh -D__BLST_PORTABLE__" &
build msm "$nvcc" "${flags[@]}" -c "$here/driver/msm.cu" -o "$work/obj/msm.o" &
build ntt "$nvcc" "${flags[@]}" -c "$here/driver/ntt.cu" -o "$work/obj/ntt.o" &
build main "$nvcc" "${flags[@]}" -c "$here/driver/main.cu" -o "$work/obj/main.o" &
build all_gpus "$nvcc" "${flags[@]}" -c "$sp/util/all_gpus.cpp" -o "$work/obj/all_gpus.o" &
if [ "${PEER_BUILD_ONLY:-0}" = 1 ]; then
	echo 0 > "$work/obj/cuzkgpu.rc"
elif [ ! -f build/libcuzkgpu.so ] || [ "${REBUILD:-0}" = 1 ]; then
	build cuzkgpu make cuda NVCC="$nvcc" CUDA_ARCH="$arch" &
else
	echo 0 > "$work/obj/cuzkgpu.rc"
	echo "peer: using the kernel library already in build/libcuzkgpu.so"
fi
if [ "$cuzk" = "(go build)" ]; then
	cuzk=$work/cuzk
	build cuzk go build -o "$cuzk" ./cmd/cuzk &
fi
wait
for b in blst msm ntt main all_gpus cuzkgpu; do check $b; done
[ -f "$work/obj/cuzk.rc" ] && check cuzk
[ -x "$cuzk" ] || die "cuzk executable $cuzk is missing"
"$cuzk" version > "$out/cuzk-version.txt" 2>&1
build link "$nvcc" -arch="$arch" -o "$work/peer-driver" "$work/obj/main.o" "$work/obj/msm.o" \
	"$work/obj/ntt.o" "$work/obj/all_gpus.o" "$bl/libblst.a" -lpthread
check link
echo "peer: built in $(( $(date +%s) - start )) s"
[ "${PEER_BUILD_ONLY:-0}" = 1 ] && exit 0

"$cuzk" bench peer --driver "$work/peer-driver" --inputs "$work/inputs" --out "$out" \
	--runs "${RUNS:-5}" --gpu-lib build/libcuzkgpu.so ${PEER_ARGS:-} 2>&1 | tee "$out/table.txt"
rc=${PIPESTATUS[0]}
echo "peer: bench peer exit $rc after $(( $(date +%s) - start )) s in all"
exit "$rc"
