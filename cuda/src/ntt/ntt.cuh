// Number-theoretic transforms over Fr, in place on the device, natural order in
// and out, for every power-of-two size up to 2^27 (the largest 2-adic subgroup
// of Fr is 2^32).
//
// Algorithm: a radix-2 decimation-in-frequency transform whose log2(n) stages
// are cut into groups of at most MAX_GROUP_BITS stages. One kernel runs one
// group: each block gathers 2^k elements of stride S = B/2^k (B the size of
// the sub-transform that the group starts) for a few consecutive offsets, runs
// the k stages in shared memory with the roots of order 2^k, and multiplies
// each result by the twiddle w_B^(offset * bitrev_k(position)) on the way out:
// the "four-step" split, so twiddles from the big table are read once per
// element per group instead of once per butterfly. DIF leaves the output in
// bit-reversed order, so the last group stores each result at its natural
// index (the groups run out of place through the caller's scratch) and applies the
// per-element scale of the inverse (1/n) or of the inverse coset (g^-i / n).
// A forward coset transform multiplies x[i] by g^i as the first group loads.
#pragma once
#include <cuda_runtime.h>
#include "../ff/bls12_381.cuh"
#include "../prof.cuh"

namespace cuzk {
namespace ntt {

constexpr int MAX_LOG_N = 27;
constexpr int MAX_GROUP_BITS = 9;
constexpr int TILE_BITS = 10;  // elements per block: 2^10 * 32 B = 32 KiB of shared memory
constexpr int SPLIT_BITS = 12; // coset powers g^i = hi[i >> 12] * lo[i & 4095]
constexpr int SPLIT = 1 << SPLIT_BITS;

// Domain is the device-resident state for one transform size: the powers of
// the root of unity (and of its inverse) and the split tables of coset powers.
struct domain_t {
    int log_n;
    uint64_t n;
    fr_t* W;     // w^t, t < max(1, n/2)
    fr_t* Winv;  // w^-t
    fr_t* GL;    // g^j, j < 4096
    fr_t* GH;    // g^(4096 j), j < ceil(n / 4096)
    fr_t* GIL;   // g^-j
    fr_t* GIH;   // n^-1 * g^-(4096 j)
    fr_t n_inv;
    fr_t z_inv;  // 1 / (g^n - 1): the vanishing polynomial's inverse on the coset
};

__device__ __forceinline__ fr_t ld(const fr_t* p) {
    fr_t r;
    const uint4* q = reinterpret_cast<const uint4*>(p);
    uint4 a = q[0], b = q[1];
    r.v[0] = a.x; r.v[1] = a.y; r.v[2] = a.z; r.v[3] = a.w;
    r.v[4] = b.x; r.v[5] = b.y; r.v[6] = b.z; r.v[7] = b.w;
    return r;
}
__device__ __forceinline__ void st(fr_t* p, const fr_t& r) {
    uint4* q = reinterpret_cast<uint4*>(p);
    q[0] = make_uint4(r.v[0], r.v[1], r.v[2], r.v[3]);
    q[1] = make_uint4(r.v[4], r.v[5], r.v[6], r.v[7]);
}

// out[j] = scale * base^j
__global__ void k_pow_table(fr_t* out, fr_t base, fr_t scale, uint64_t count) {
    uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= count) return;
    st(out + j, scale * base.pow(j));
}

// out[t] = hi[t >> 12] * lo[t & 4095]
__global__ void k_expand(fr_t* out, const fr_t* hi, const fr_t* lo, uint64_t count) {
    uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count) return;
    st(out + t, ld(hi + (t >> SPLIT_BITS)) * ld(lo + (t & (SPLIT - 1))));
}

__device__ __forceinline__ uint32_t brev_bits(uint32_t x, int bits) {
    return bits ? (__brev(x) >> (32 - bits)) : 0;
}

// One group of k DIF stages; see the file comment. d is the whole vector.
// src and dst may be the same buffer (every block writes only the positions it
// read) except in the last group, which scatters into natural order: there
// dst must differ from src unless one block holds the whole vector. final_mode
// < 0 marks a group that is not the last; otherwise it is the scale mode of
// k_bitrev_scale, applied at the natural index.
__global__ void k_dif_group(const fr_t* src, fr_t* dst, const fr_t* __restrict__ W, int log_n, int b, int k,
                            int logC, const fr_t* __restrict__ GH, const fr_t* __restrict__ GL, int final_mode,
                            fr_t s, const fr_t* __restrict__ GIH, const fr_t* __restrict__ GIL) {
    extern __shared__ fr_t smem[];
    const int K = 1 << k, C = 1 << logC, tile = K << logC;
    fr_t* roots = smem + tile;
    const int tid = threadIdx.x, nt = blockDim.x;
    for (int t = tid; t < K / 2; t += nt) roots[t] = ld(W + ((uint64_t)t << (log_n - k)));

    const int sb = b - k;  // log2 of the stride S
    const uint64_t S = 1ull << sb;
    // Consecutive threads take consecutive offsets when the stride allows it
    // (coalesced rows of C elements); otherwise consecutive positions.
    const bool cfast = sb >= logC;
    const uint64_t sigma0 = (uint64_t)blockIdx.x << logC;

    for (int e = tid; e < tile; e += nt) {
        int c, ih;
        if (cfast) { c = e & (C - 1); ih = e >> logC; }
        else       { ih = e & (K - 1); c = e >> k; }
        const uint64_t sigma = sigma0 + c;
        const uint64_t g = ((sigma >> sb) << b) + (sigma & (S - 1)) + ((uint64_t)ih << sb);
        fr_t x = ld(src + g);
        if (GL) x = x * (ld(GH + (g >> SPLIT_BITS)) * ld(GL + (g & (SPLIT - 1))));
        smem[ih * C + c] = x;
    }
    __syncthreads();

    for (int lh = k - 1; lh >= 0; lh--) {
        const int h = 1 << lh;
        for (int u = tid; u < (K / 2) << logC; u += nt) {
            const int c = u & (C - 1), q = u >> logC;
            const int j = q & (h - 1);
            const int i0 = ((q >> lh) << (lh + 1)) + j, i1 = i0 + h;
            const fr_t x0 = smem[i0 * C + c], x1 = smem[i1 * C + c];
            smem[i0 * C + c] = x0 + x1;
            fr_t y = x0 - x1;
            if (j) y = y * roots[j << (k - 1 - lh)];
            smem[i1 * C + c] = y;
        }
        __syncthreads();
    }

    const uint64_t half = 1ull << (log_n - 1);
    for (int e = tid; e < tile; e += nt) {
        int c, ih;
        if (cfast) { c = e & (C - 1); ih = e >> logC; }
        else       { ih = e & (K - 1); c = e >> k; }
        const uint64_t sigma = sigma0 + c;
        const uint64_t ilo = sigma & (S - 1);
        const uint64_t g = ((sigma >> sb) << b) + ilo + ((uint64_t)ih << sb);
        fr_t x = smem[ih * C + c];
        if (sb > 0) {
            const uint64_t E = (ilo * brev_bits(ih, k)) << (log_n - b);
            if (E) {
                // w^(n/2) = -1 halves the table.
                fr_t w = E >= half ? ld(W + (E - half)).neg() : ld(W + E);
                x = x * w;
            }
        }
        if (final_mode < 0) {
            st(dst + g, x);
        } else {
            const uint64_t nat = __brevll(g) >> (64 - log_n);
            if (final_mode == 1)
                x = x * s;
            else if (final_mode == 2)
                x = x * (ld(GIH + (nat >> SPLIT_BITS)) * ld(GIL + (nat & (SPLIT - 1))));
            st(dst + nat, x);
        }
    }
}

// In-place bit reversal with the final scale. mode 0: none; 1: times s;
// 2: times GIH[i >> 12] * GIL[i & 4095].
__global__ void k_bitrev_scale(fr_t* d, int log_n, int mode, fr_t s, const fr_t* __restrict__ GIH,
                               const fr_t* __restrict__ GIL) {
    const uint64_t n = 1ull << log_n;
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint64_t r = brev_bits((uint32_t)i, log_n);
    if (r < i) return;
    fr_t x = ld(d + i), y = ld(d + r);
    if (mode == 1) {
        x = x * s;
        y = y * s;
    } else if (mode == 2) {
        y = y * (ld(GIH + (i >> SPLIT_BITS)) * ld(GIL + (i & (SPLIT - 1))));
        x = x * (ld(GIH + (r >> SPLIT_BITS)) * ld(GIL + (r & (SPLIT - 1))));
    }
    st(d + i, y);
    if (r != i) st(d + r, x);
}

// a[i] = (a[i] * b[i] - c[i]) * z_inv: the quotient by the vanishing
// polynomial, which is the constant g^n - 1 on the coset.
__global__ void k_groth16_h(fr_t* a, const fr_t* __restrict__ b, const fr_t* __restrict__ c, fr_t z_inv,
                            uint64_t n) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    st(a + i, (ld(a + i) * ld(b + i) - ld(c + i)) * z_inv);
}

inline unsigned blocks_for(uint64_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

// Builds a domain. omega is a primitive 2^log_n-th root of unity, g the coset
// shift; all values in Montgomery form.
inline cudaError_t domain_create(domain_t* dom, int log_n, fr_t omega, fr_t omega_inv, fr_t n_inv, fr_t g,
                                 fr_t g_inv, fr_t z_inv, cudaStream_t st) {
    if (log_n < 0 || log_n > MAX_LOG_N) return cudaErrorInvalidValue;
    *dom = domain_t{};
    dom->log_n = log_n;
    dom->n = 1ull << log_n;
    dom->n_inv = n_inv;
    dom->z_inv = z_inv;
    const uint64_t nw = dom->n > 1 ? dom->n / 2 : 1;
    const uint64_t nh = (dom->n + SPLIT - 1) / SPLIT;
    fr_t *lo = nullptr, *hi = nullptr;
    cudaError_t err;
#define CUZK_TRY(x) do { if ((err = (x)) != cudaSuccess) goto fail; } while (0)
    CUZK_TRY(cudaMalloc(&dom->W, nw * sizeof(fr_t)));
    CUZK_TRY(cudaMalloc(&dom->Winv, nw * sizeof(fr_t)));
    CUZK_TRY(cudaMalloc(&dom->GL, SPLIT * sizeof(fr_t)));
    CUZK_TRY(cudaMalloc(&dom->GIL, SPLIT * sizeof(fr_t)));
    CUZK_TRY(cudaMalloc(&dom->GH, nh * sizeof(fr_t)));
    CUZK_TRY(cudaMalloc(&dom->GIH, nh * sizeof(fr_t)));
    CUZK_TRY(cudaMalloc(&lo, SPLIT * sizeof(fr_t)));
    CUZK_TRY(cudaMalloc(&hi, ((nw + SPLIT - 1) / SPLIT) * sizeof(fr_t)));
    {
        const fr_t one = fr_t::one();
        const uint64_t nhw = (nw + SPLIT - 1) / SPLIT;
        const fr_t roots[2] = {omega, omega_inv};
        fr_t* tables[2] = {dom->W, dom->Winv};
        for (int t = 0; t < 2; t++) {
            k_pow_table<<<blocks_for(SPLIT, 256), 256, 0, st>>>(lo, roots[t], one, SPLIT);
            k_pow_table<<<blocks_for(nhw, 256), 256, 0, st>>>(hi, roots[t].pow(SPLIT), one, nhw);
            k_expand<<<blocks_for(nw, 256), 256, 0, st>>>(tables[t], hi, lo, nw);
        }
        k_pow_table<<<blocks_for(SPLIT, 256), 256, 0, st>>>(dom->GL, g, one, SPLIT);
        k_pow_table<<<blocks_for(nh, 256), 256, 0, st>>>(dom->GH, g.pow(SPLIT), one, nh);
        k_pow_table<<<blocks_for(SPLIT, 256), 256, 0, st>>>(dom->GIL, g_inv, one, SPLIT);
        k_pow_table<<<blocks_for(nh, 256), 256, 0, st>>>(dom->GIH, g_inv.pow(SPLIT), n_inv, nh);
    }
    CUZK_TRY(cudaGetLastError());
    CUZK_TRY(cudaStreamSynchronize(st));
    cudaFree(lo);
    cudaFree(hi);
    return cudaSuccess;
fail:
    cudaFree(lo);
    cudaFree(hi);
    cudaFree(dom->W);
    cudaFree(dom->Winv);
    cudaFree(dom->GL);
    cudaFree(dom->GIL);
    cudaFree(dom->GH);
    cudaFree(dom->GIH);
    *dom = domain_t{};
    return err;
#undef CUZK_TRY
}

inline void domain_destroy(domain_t* dom) {
    cudaFree(dom->W);
    cudaFree(dom->Winv);
    cudaFree(dom->GL);
    cudaFree(dom->GIL);
    cudaFree(dom->GH);
    cudaFree(dom->GIH);
    *dom = domain_t{};
}

// The scratch a transform of 2^log_n elements takes: one vector when its
// stages take more than one group (see transform), else none.
inline uint64_t scratch_bytes(int log_n) {
    const int max_group = env_int("CUZK_NTT_GROUP_BITS", MAX_GROUP_BITS, 1, 10);
    const int groups = (log_n + max_group - 1) / max_group;
    return groups > 1 ? (1ull << log_n) * sizeof(fr_t) : 0;
}

// The device memory domain_create takes with cudaMalloc: the tables it
// keeps and the two it frees before returning, each rounded to the 2 MiB
// granularity of device allocations.
inline uint64_t domain_bytes(int log_n) {
    const uint64_t n = 1ull << log_n;
    const uint64_t nw = n > 1 ? n / 2 : 1;
    const uint64_t nh = (n + SPLIT - 1) / SPLIT;
    const uint64_t elems[] = {nw, nw, SPLIT, SPLIT, nh, nh, SPLIT, (nw + SPLIT - 1) / SPLIT};
    const uint64_t gran = 2ull << 20;
    uint64_t b = 0;
    for (uint64_t e : elems) b += (e * sizeof(fr_t) + gran - 1) / gran * gran;
    return b;
}

// Transforms d (n elements, natural order) in place. inverse selects w^-1 and
// the 1/n scale; coset evaluates on (inverse: interpolates from) g*<w>, with
// gnark-crypto's conventions: forward coset = FFT(x[i] * g^i), inverse coset =
// IFFT(x)[i] * g^-i. scratch (device, scratch_len bytes) must hold
// scratch_bytes(log_n) bytes; the transform returns once queued, so the
// caller keeps it until the stream has run.
inline cudaError_t transform(const domain_t& dom, fr_t* d, bool inverse, bool coset, fr_t* scratch_buf,
                             uint64_t scratch_len, cudaStream_t st) {
    const int L = dom.log_n;
    const fr_t* W = inverse ? dom.Winv : dom.W;
    const int mode = inverse ? (coset ? 2 : 1) : 0;
    if (L == 0) {
        if (mode != 0)
            k_bitrev_scale<<<1, 32, 0, st>>>(d, 0, mode, dom.n_inv, dom.GIH, dom.GIL);
        return cudaGetLastError();
    }
    phase_timer prof(st);
    // Knobs for tuning experiments (defaults: the measured best).
    const int max_group = env_int("CUZK_NTT_GROUP_BITS", MAX_GROUP_BITS, 1, 10);
    const int tile_bits = env_int("CUZK_NTT_TILE_BITS", TILE_BITS, 6, 11);
    const unsigned max_threads = (unsigned)env_int("CUZK_NTT_THREADS", 256, 32, 1024);
    const int groups = (L + max_group - 1) / max_group;
    // Several groups run out of place through the caller's scratch so that
    // the last one can scatter straight into natural order in d: no separate
    // bit-reversal pass.
    fr_t* scratch = d;
    if (groups > 1) {
        if (!scratch_buf) return cudaErrorInvalidValue;
        if (scratch_len < dom.n * sizeof(fr_t)) return cudaErrorMemoryAllocation;
        scratch = scratch_buf;
    }
    int b = L;
    for (int gi = 0; gi < groups; gi++) {
        const int k = L / groups + (gi < L % groups ? 1 : 0);
        int logC = tile_bits - k;
        if (logC > L - k) logC = L - k;
        if (logC < 0) logC = 0;
        const int tile = 1 << (k + logC);
        const unsigned threads = tile / 2 < (int)max_threads ? (tile / 2 < 32 ? 32 : tile / 2) : max_threads;
        const unsigned grid = (unsigned)(dom.n >> (k + logC));
        const size_t shmem = (size_t)(tile + (1 << (k - 1))) * sizeof(fr_t);
        const bool pre = coset && !inverse && gi == 0;
        const bool last = gi == groups - 1;
        const fr_t* src = gi == 0 ? d : scratch;
        fr_t* dst = last ? d : scratch;
        if (shmem > 48 * 1024) {
            cudaError_t e = cudaFuncSetAttribute(k_dif_group, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shmem);
            if (e != cudaSuccess) return e;
        }
        k_dif_group<<<grid, threads, shmem, st>>>(src, dst, W, L, b, k, logC, pre ? dom.GH : nullptr,
                                                  pre ? dom.GL : nullptr, last ? mode : -1, dom.n_inv, dom.GIH,
                                                  dom.GIL);
        prof.mark(gi == 0 ? "group0" : gi == 1 ? "group1" : "group2+");
        b -= k;
    }
    cudaError_t e = cudaGetLastError();
    prof.report(inverse ? "intt" : "ntt", dom.n, L);
    return e;
}

inline cudaError_t groth16_h(const domain_t& dom, fr_t* a, const fr_t* b, const fr_t* c, cudaStream_t st) {
    k_groth16_h<<<blocks_for(dom.n, 256), 256, 0, st>>>(a, b, c, dom.z_inv, dom.n);
    return cudaGetLastError();
}

}  // namespace ntt
}  // namespace cuzk
