#!/bin/sh
# SASS instructions per field product of the device multiplication, from
# mulprobe.cu (K = 2 chained products less K = 1), with the multiply inline:
#   cuda/testdata/sass_count.sh                  # the default multiplication
#   cuda/testdata/sass_count.sh -DCUZK_MUL=2     # the even/odd one
# Needs nvcc and cuobjdump (no GPU). Counts depend on the CUDA version.
set -e
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-nvcc}
ARCH=${CUDA_ARCH:-sm_90}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$NVCC" -O3 -std=c++17 -cubin -gencode=arch=compute_${ARCH#sm_},code=$ARCH -DCUZK_FP_NOINLINE=0 "$@" \
	-o "$out/probe.cubin" cuda/testdata/mulprobe.cu
cuobjdump -sass "$out/probe.cubin" | awk '
	/Function :/ { f = $3; next }
	/^ +\/\*[0-9a-f]+\*\/ / {
		op = $2; if (op ~ /^@/) op = $3
		if (op ~ /^NOP/) next
		k = (f ~ /fr_params/ ? "fr" : "fp") (f ~ /Li2E/ ? 2 : 1)
		n[k]++
		if (op ~ /^IMAD\.WIDE/) w[k]++
		else if (op ~ /^IMAD/) m[k]++
		else if (op ~ /^IADD3/) a[k]++
	}
	END {
		split("fr fp", fs, " ")
		for (i = 1; i <= 2; i++) {
			x = fs[i]
			printf "%s: %d instructions per product (IMAD.WIDE* %d, other IMAD* %d, IADD3* %d, rest %d)\n", x,
				n[x 2] - n[x 1], w[x 2] - w[x 1], m[x 2] - m[x 1], a[x 2] - a[x 1],
				(n[x 2] - n[x 1]) - (w[x 2] - w[x 1]) - (m[x 2] - m[x 1]) - (a[x 2] - a[x 1])
		}
	}'
