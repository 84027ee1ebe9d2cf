#!/bin/sh
# IMAD work per operation, from the SASS of cuda/testdata/imadprobe.cu (K = 2
# chained operations less K = 1), and the fraction of the H200's IMAD peak
# that each measured kernel time reaches (docs/benchmarks.md, "IMAD peak"):
#   cuda/imad_count.sh [extra nvcc flags, e.g. -DCUZK_MUL=0]
# Needs nvcc and cuobjdump, no GPU. Counts depend on the CUDA version.
#
# An IMAD result is one 32-bit multiply-add result, the unit of the CUDA
# programming guide's throughput table (64 per clock per SM on compute 9.0):
# IMAD.WIDE* (a 64-bit product) counts two; IMAD, IMAD.X, IMAD.HI* one, and so
# do IMAD.MOV/IMAD.IADD/IMAD.SHL, moves and adds that ptxas puts on the same
# pipe. IADD3 and the other integer ALU instructions issue elsewhere and are
# listed, not counted.
set -e
cd "$(dirname "$0")/.."
NVCC=${NVCC:-nvcc}
ARCH=${CUDA_ARCH:-sm_90}
SMS=${SMS:-132}
MHZ=${MHZ:-1980}
PER_CLK=${PER_CLK:-64}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$NVCC" -O3 -std=c++17 -cubin -gencode=arch=compute_${ARCH#sm_},code=$ARCH -DCUZK_FP_NOINLINE=0 "$@" \
	-o "$out/probe.cubin" cuda/testdata/imadprobe.cu
cuobjdump -sass "$out/probe.cubin" | awk -v sms="$SMS" -v mhz="$MHZ" -v perclk="$PER_CLK" '
	/Function :/ {
		f = $3
		mulv = match(f, /^_Z4(madd|xadd)ILi[0-9]E/) ? substr(f, RLENGTH - 1, 1) : ""
		if (mulv == "" && match(f, /^_Z6g2(madd|xadd)ILi[0-9]E/)) mulv = substr(f, RLENGTH - 1, 1)
		k = (f ~ /^_Z9fp2_lazy2/ ? "fp2m" : f ~ /^_Z8fp2_lazy/ ? "fp2l" : f ~ /^_Z6g2madd/ ? "g2madd" mulv : f ~ /^_Z6g2xadd/ ? "g2xadd" mulv : f ~ /^_Z10mul2_fused/ ? "fpm" : f ~ /^_Z8sqr_rows/ ? "fps" : f ~ /^_Z4madd/ ? "madd" mulv : f ~ /^_Z4xadd/ ? "xadd" mulv : f ~ /butterfly_lowr/ ? "bflyr" : f ~ /butterfly/ ? "bfly" : f ~ /mul_lowr/ ? "frr" : f ~ /fp2_t/ ? "fp2" : f ~ /fp_params/ ? "fp" : "fr")
		k = k (f ~ /Li2EE/ ? 2 : 1)
		next
	}
	/^ +\/\*[0-9a-f]+\*\/ / {
		op = $2; if (op ~ /^@/) op = $3
		if (op ~ /^NOP/) next
		n[k]++
		if (op ~ /^IMAD\.WIDE/) { w[k]++; r[k] += 2 }
		else if (op ~ /^IMAD\.(MOV|IADD|SHL)/) { mv[k]++; r[k]++ }
		else if (op ~ /^IMAD/) { m[k]++; r[k]++ }
		else if (op ~ /^IADD3/) a[k]++
	}
	function d(arr, x) { return arr[x 2] - arr[x 1] }
	END {
		split("fr bfly frr bflyr fp fp2", ks, " ")
		split("Fr product|Fr butterfly (add, sub, product)|Fr product, REDCR (CUZK_NTT_MUL=1)|Fr butterfly, REDCR|Fp product|Fp2 product (3 Fp)", names, "|")
		printf "| operation | SASS instructions | IMAD.WIDE* | other IMAD* | IMAD as move/add | IADD3* | IMAD results |\n"
		printf "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n"
		for (i = 1; i <= 6; i++) {
			x = ks[i]
			res[x] = d(r, x)
			printf "| %s | %d | %d | %d | %d | %d | %d |\n", names[i], d(n, x), d(w, x), d(m, x), d(mv, x), d(a, x), res[x]
		}
		# The variants of the MSM (CUZK_MSM_MUL): the fused sum of two products
		# and the squaring by rows, then the point additions built from them.
		# The code of the additions includes the doubling branch, which does not
		# change with MUL: their differences are what MUL saves; the hot
		# path of each is given from the field operations it runs.
		split("fpm fps madd0 madd1 madd3 xadd0 xadd1 xadd3", ks2, " ")
		split("Fp a b + c d, fused (CUZK_MSM_MUL bit 1)|Fp square by rows (bit 2)|XYZZ mixed addition, MUL=0, with doubling branch|XYZZ mixed addition, MUL=1, with doubling branch|XYZZ mixed addition, MUL=3, with doubling branch|XYZZ addition, MUL=0, with doubling branch|XYZZ addition, MUL=1, with doubling branch|XYZZ addition, MUL=3, with doubling branch", names2, "|")
		for (i = 1; i <= 8; i++) {
			x = ks2[i]
			res[x] = d(r, x)
			printf "| %s | %d | %d | %d | %d | %d | %d |\n", names2[i], d(n, x), d(w, x), d(m, x), d(mv, x), d(a, x), res[x]
		}
		hot["madd0"] = 10 * res["fp"]; hot["madd1"] = 8 * res["fp"] + res["fpm"]; hot["madd3"] = 6 * res["fp"] + res["fpm"] + 2 * res["fps"]
		hot["xadd0"] = 14 * res["fp"]; hot["xadd1"] = 8 * res["fp"] + 3 * res["fpm"]; hot["xadd3"] = 6 * res["fp"] + 3 * res["fpm"] + 2 * res["fps"]
		printf "\nhot path, IMAD results: mixed addition %d / %d / %d, addition %d / %d / %d (MUL = 0 / 1 / 3)\n", hot["madd0"], hot["madd1"], hot["madd3"], hot["xadd0"], hot["xadd1"], hot["xadd3"]
		# G2 (CUZK_MSM_G2_MUL): the Fp2 product with lazy reduction, and the
		# additions over Fp2 with plain (MUL 0) and lazy (MUL 4) products;
		# the hot paths from the field operations (an Fp2 square is two Fp
		# products either way; mixed: 8 products and 2 squares, full: 12 and 2).
		split("fp2l fp2m g2madd0 g2madd4 g2madd5 g2xadd0 g2xadd4 g2xadd5", ks3, " ")
		split("Fp2 product, lazy reduction (CUZK_MSM_G2_MUL=1)|Fp2 a b + c d, lazy (CUZK_MSM_G2_MUL=2)|G2 XYZZ mixed addition, MUL=0, with doubling branch|G2 XYZZ mixed addition, lazy (MUL=4), with doubling branch|G2 XYZZ mixed addition, lazy fused (MUL=5), with doubling branch|G2 XYZZ addition, MUL=0, with doubling branch|G2 XYZZ addition, lazy (MUL=4), with doubling branch|G2 XYZZ addition, lazy fused (MUL=5), with doubling branch", names3, "|")
		printf "\n| operation | SASS instructions | IMAD.WIDE* | other IMAD* | IMAD as move/add | IADD3* | IMAD results |\n"
		printf "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n"
		for (i = 1; i <= 8; i++) {
			x = ks3[i]
			res[x] = d(r, x)
			printf "| %s | %d | %d | %d | %d | %d | %d |\n", names3[i], d(n, x), d(w, x), d(m, x), d(mv, x), d(a, x), res[x]
		}
		hot["g2madd0"] = 8 * res["fp2"] + 4 * res["fp"]; hot["g2madd4"] = 8 * res["fp2l"] + 4 * res["fp"]
		hot["g2xadd0"] = 12 * res["fp2"] + 4 * res["fp"]; hot["g2xadd4"] = 12 * res["fp2l"] + 4 * res["fp"]
		# =2: Y3 of the mixed addition one fused sum (6 products, 1 sum), the
		# full one regrouped as with G1 MUL_FUSED (6 products, 3 sums).
		hot["g2madd5"] = 6 * res["fp2l"] + res["fp2m"] + 4 * res["fp"]; hot["g2xadd5"] = 6 * res["fp2l"] + 3 * res["fp2m"] + 4 * res["fp"]
		printf "\nG2 hot path, IMAD results: mixed addition %d / %d / %d, addition %d / %d / %d (CUZK_MSM_G2_MUL = 0 / 1 / 2)\n", hot["g2madd0"], hot["g2madd4"], hot["g2madd5"], hot["g2xadd0"], hot["g2xadd4"], hot["g2xadd5"]
		peak = sms * perclk * mhz * 1e6
		printf "\npeak: %d SMs x %d IMAD results/clock x %d MHz = %.2f x 10^12 per second\n\n", sms, perclk, mhz, peak / 1e12
		# Fr NTT, 2^L: groups of stages as ntt.cuh cuts them (at most 9 per
		# group); a product per butterfly whose root index is not zero, one
		# per element between groups whose twiddle exponent is not zero.
		printf "| kernel call | products | IMAD results | at peak ms | measured ms | fraction of peak |\n"
		printf "| --- | ---: | ---: | ---: | ---: | ---: |\n"
		L = 24; G = int((L + 8) / 9); b = L; prods = 0
		for (g = 0; g < G; g++) {
			k = int(L / G) + (g < L % G ? 1 : 0)
			gp = 0
			for (lh = 0; lh < k; lh++) gp += 2 ^ (L - 1) * (1 - 2 ^ -lh)
			sb = b - k
			if (sb > 0) gp += 2 ^ L * (1 - 2 ^ -sb) * (1 - 2 ^ -k)
			pass[g] = sprintf("| Fr NTT 2^%d forward, pass %d (%d stages%s) | %.1f M Fr | %.2f G | %.2f | | |", L, g, k,
				sb > 0 ? ", twiddles" : ", no twiddles", gp / 1e6, gp * res["fr"] / 1e9, gp * res["fr"] / peak * 1e3)
			prods += gp
			b -= k
		}
		for (g = 0; g < G; g++) print pass[g]
		ntt(sprintf("Fr NTT 2^%d forward (radix 4)", L), prods, 4.68)
		# REDCR: the measured time scaled by the IMAD results, as if the
		# kernel stayed at the same fraction of the peak (an estimate).
		rr = prods * res["frr"]
		printf "| Fr NTT 2^%d forward (radix 4, CUZK_NTT_MUL=1) | %.1f M Fr | %.2f G | %.2f | (%.2f if at the same fraction) | |\n", L, prods / 1e6, rr / 1e9, rr / peak * 1e3, 4.68 * res["frr"] / res["fr"]
		# The inverse coset scales each output by GIH[i >> 12] * GIL[i & 4095]: two more.
		ntt(sprintf("Fr NTT 2^%d inverse coset", L), prods + 2 * 2 ^ L, 5.32)
		# MSM: the bucket accumulation alone, one mixed XYZZ addition
		# (madd-2008-s, 8M + 2S, squarings as products) per point and window;
		# against the whole call, so a lower bound for that kernel.
		msm("G1 MSM 2^24, c = 20 (13 windows), accumulation", 13 * 2 ^ 24 * 10, "fp", 117.94)
		msm("G1 MSM 2^20, c = 16 (16 windows), accumulation", 16 * 2 ^ 20 * 10, "fp", 11.72)
		msm("G2 MSM 2^20, c = 16 (16 windows), accumulation", 16 * 2 ^ 20 * (8 * 3 + 2 * 2), "fp", 34.16)
		# With CUZK_MSM_MUL=3: the hot path of the mixed addition, not timed yet.
		rr = 13 * 2 ^ 24 * hot["madd3"]
		printf "| G1 MSM 2^24, c = 20, accumulation, CUZK_MSM_MUL=3 | %.0f M additions | %.1f G | %.1f | | |\n", 13 * 2 ^ 24 / 1e6, rr / 1e9, rr / peak * 1e3
	}
	function ntt(name, p, ms,   rr) {
		rr = p * res["fr"]
		printf "| %s | %.1f M Fr | %.2f G | %.2f | %.2f | %.0f %% |\n", name, p / 1e6, rr / 1e9, rr / peak * 1e3, ms, rr / peak * 1e3 / ms * 100
	}
	function msm(name, p, f, ms,   rr) {
		rr = p * res[f]
		printf "| %s | %.0f M Fp | %.1f G | %.1f | %.2f | %.0f %% |\n", name, p / 1e6, rr / 1e9, rr / peak * 1e3, ms, rr / peak * 1e3 / ms * 100
	}'
