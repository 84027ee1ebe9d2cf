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
// k_dif_group_r (CUZK_NTT_RADIX=4 or 8) runs the same groups with 2 or 3
// stages per shared-memory exchange, the elements in between in registers.
// CUZK_NTT_GROUP_BITS=12 (off by default) cuts 2^24 into 12 + 12 stages, one
// pass over the vector fewer, the groups of 12 in k_dif_group_r's split
// variant; the Fr products stay the same in number (docs/cuda.md).
#pragma once
#include <cuda_runtime.h>
#include "../ff/bls12_381.cuh"
#include "../prof.cuh"

namespace cuzk {
namespace ntt {

constexpr int MAX_LOG_N = 27;
constexpr int MAX_GROUP_BITS = 9;
// CUZK_NTT_GROUP_BITS, the largest group it accepts: 12 cuts 2^24 into
// 12 + 12 stages (k_dif_group_r's split variant below).
constexpr int MAX_GROUP_BITS_KNOB = 12;
inline int group_bits() { return env_int("CUZK_NTT_GROUP_BITS", MAX_GROUP_BITS, 1, MAX_GROUP_BITS_KNOB); }
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

// The Fr product of the transform kernels, by CUZK_NTT_MUL: MV = 0 the
// field's own (operator*), 1 the even/odd one with REDCR (fr_t::mul_eo_lowr,
// ff/mont_eo.cuh). Both give the same bits.
template <int MV>
__device__ __forceinline__ fr_t fmul(const fr_t& a, const fr_t& b) {
#if defined(__CUDA_ARCH__)
    if constexpr (MV == 1) return fr_t::mul_eo_lowr(a, b);
#endif
    return a * b;
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
template <int MV>
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
        if (GL) x = fmul<MV>(x, fmul<MV>(ld(GH + (g >> SPLIT_BITS)), ld(GL + (g & (SPLIT - 1)))));
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
            if (j) y = fmul<MV>(y, roots[j << (k - 1 - lh)]);
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
                x = fmul<MV>(x, w);
            }
        }
        if (final_mode < 0) {
            st(dst + g, x);
        } else {
            const uint64_t nat = __brevll(g) >> (64 - log_n);
            if (final_mode == 1)
                x = fmul<MV>(x, s);
            else if (final_mode == 2)
                x = fmul<MV>(x, fmul<MV>(ld(GIH + (nat >> SPLIT_BITS)), ld(GIL + (nat & (SPLIT - 1)))));
            st(dst + nat, x);
        }
    }
}

// The register-radix variant of k_dif_group (CUZK_NTT_RADIX=4 or 8): the same
// groups, stage order, roots and four-step twiddles, so every value goes
// through the same field operations and the result has the same bits; only
// where the intermediate values live changes. Each thread holds R = 2^RB
// elements of one column in registers and runs up to RB consecutive stages on
// them (a radix-R butterfly built of radix-2 ones) between exchanges through
// shared memory. A group of k stages takes ceil(k / RB) passes of at most RB
// stages; the first loads from global memory and the last stores to it, so a
// group costs ceil(k / RB) - 1 shared-memory round trips and ceil(k / RB)
// barriers where k_dif_group has k + 1 of each: that kernel issues its
// multiplications at about half the rate the SMs allow (docs/benchmarks.md),
// the rest of its time going to those round trips and barriers.
//
// A pass runs stages top..bot (bits of the position ih inside the K-point
// transform). The thread's elements are ih = base | m << low, m < R: a
// window of RB bits [low, low + RB) that holds the pass's stages, low =
// max(0, top + 1 - RB), so a short pass leaves window bits idle. base spreads
// the thread's index `rest` over the other k - RB bits, the bits above the
// window first: the bits below it, which enter every root index, then vary
// between warps rather than within one (where enough bits lie above), and a
// product whose root index is zero is skipped by a whole warp. Stage lh pairs
// m0 and m0 + 2^(lh - low) as k_dif_group pairs i0 and i0 + 2^lh, with the
// same root index j = i0 mod 2^lh = (base mod 2^low) | (m0 mod 2^(lh - low)) << low.
//
// Worked case, n = 16 (one group, k = 4, one column), RB = 3: two threads
// (rest = 0, 1), passes of 2 + 2 stages.
//   pass 0: stages 3, 2; window bits 1..3 (bit 1 idle); base = rest. Thread r
//     holds ih = r + 2m: thread 0 the even positions, thread 1 the odd ones.
//     Stage 3 pairs m, m + 4 = ih, ih + 8 with j = r + 2m = ih mod 8, root
//     w16^j; stage 2 pairs m, m + 2 (m = 0, 1, 4, 5) = ih, ih + 4 with
//     j = ih mod 4, root index 2j: w8^j. The radix-2 kernel's pairs and roots.
//   exchange through the shared tile.
//   pass 1: stages 1, 0; window bits 0..2 (bit 2 idle); base = rest << 3.
//     Thread r holds ih = 8r + m. Stage 1 pairs ih, ih + 2 with j = ih mod 2
//     (root index 4j); stage 0 pairs ih, ih + 1 with j = 0 (no product).
//   store: position ih to natural index bitrev_4(ih).
constexpr int RADIX_THREAD_BITS = 8;  // at most 256 threads per block
constexpr int RADIX_THREADS = 1 << RADIX_THREAD_BITS;
constexpr int SPLIT_THREAD_BITS = 9;  // the split variant: 512 threads, 12 stages at radix 8

// Shared-memory slot of tile element (ih, c). The tile is two planes of
// 16-byte halves, so that a quarter warp's 128-bit accesses to 8 consecutive
// columns meet 8 different groups of banks; with 4 columns the quarter warp's
// two halves differ in one bit of ih, which flipping bit 2 by the parity of
// bits 3 and up separates (a bijection: those bits stay).
__device__ __forceinline__ int rslot(int ih, int c, int logC) {
    const int e = (ih << logC) | c;
    return e ^ ((__popc(e >> 3) & 1) << 2);
}
__device__ __forceinline__ void sts_planes(uint4* p, int tile, int e, const fr_t& x) {
    p[e] = make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]);
    p[tile + e] = make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]);
}
__device__ __forceinline__ fr_t lds_planes(const uint4* p, int tile, int e) {
    const uint4 a = p[e], q = p[tile + e];
    fr_t r;
    r.v[0] = a.x; r.v[1] = a.y; r.v[2] = a.z; r.v[3] = a.w;
    r.v[4] = q.x; r.v[5] = q.y; r.v[6] = q.z; r.v[7] = q.w;
    return r;
}

// The slot of position ih in the split variant's tile (one column, 2^12
// positions): the low 3 bits flipped by the XOR of the three 3-bit fields
// above them. In its four passes the 8 threads of a quarter warp differ in
// ih bits 0..2, 9..11, 6..8 and 3..5 (see k_dif_group_r), so in every pass
// they meet 8 different 16-byte groups of banks; rslot's parity flip leaves
// 4-way conflicts with one column.
__device__ __forceinline__ int fslot(int ih) { return ih ^ (((ih >> 3) ^ (ih >> 6) ^ (ih >> 9)) & 7); }

// 16 bytes from global to shared memory without a register (cp.async, sm_80
// and up), through L2 only; visible to the issuing thread after cp_wait_all.
__device__ __forceinline__ void cp_async16(void* s, const void* g) {
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(s);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
__device__ __forceinline__ void prefetch_l2(const void* g) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(g));
}
__device__ __forceinline__ uint32_t nsmid() {
    uint32_t r;
    asm("mov.u32 %0, %%nsmid;" : "=r"(r));
    return r;
}

// The stages top..bot of one pass on the thread's elements (see above).
template <int RB, int MV>
__device__ __forceinline__ void dif_reg_stages(fr_t (&x)[1 << RB], int base, int low, int top, int bot, int k,
                                               const fr_t* roots) {
    constexpr int R = 1 << RB;
    const int jlo = base & ((1 << low) - 1);
#pragma unroll
    for (int hb = RB - 1; hb >= 0; hb--) {
        const int lh = low + hb;
        if (lh > top || lh < bot) continue;
        const int h = 1 << hb;
#pragma unroll
        for (int m0 = 0; m0 < R; m0++) {
            if (m0 & h) continue;
            const int mj = m0 & (h - 1);
            const fr_t a = x[m0], d = x[m0 | h];
            x[m0] = a + d;
            fr_t y = a - d;
            if (mj || jlo) y = fmul<MV>(y, roots[(jlo | mj << low) << (k - 1 - lh)]);
            x[m0 | h] = y;
        }
    }
}

// The sub-transform (column) of thread tid of block blk: in the last group
// (sb = 0) a block's columns are sigma = blk + c * 2^(log_n - k - logC),
// whose natural indices bitrev(sigma) are C consecutive ones, so each store
// of a warp fills runs of C elements; earlier groups take C consecutive
// offsets, adjacent in memory.
__device__ __forceinline__ uint32_t column_sigma(uint32_t tid, uint32_t blk, int log_n, int k, int logC, int sb) {
    const uint32_t c = tid & ((1u << logC) - 1);
    return sb == 0 ? blk + (c << (log_n - k - logC)) : (blk << logC) + c;
}
// The thread and block index, read from the special registers where the
// asm stands (volatile: not merged with an earlier read).
__device__ __forceinline__ uint32_t tid_reread() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(r));
    return r;
}
__device__ __forceinline__ uint32_t ctaid_reread() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(r));
    return r;
}

// One group of k DIF stages, RB at a time in registers; the arguments and
// their meaning are k_dif_group's. The block has 2^(k + logC - RB) threads.
// Two blocks of 256 threads per SM bound it to 128 registers. With nvcc 11.8
// (-Xptxas -v) radix 4 fits them without spilling and radix 8 spills one word,
// stored once and loaded once per thread; both once spilled more (radix 4:
// 8 bytes stored, 32 loaded, 64-bit element indices and k % np kept through
// the passes).
//
// The split variant (TB = SPLIT_THREAD_BITS, CUZK_NTT_GROUP_BITS=12): groups
// of exactly 12 stages, one column (k and logC fixed at compile time), 512
// threads at radix 8, four passes of 3 stages. Its tile is 2^12 elements,
// 128 KiB, and the 2^11 roots another 64 KiB, so one block per SM: 512
// threads bounded to 128 registers, the budget of two 256-thread blocks.
// Two things make up for the other block that no longer hides this one's
// global-memory waits: the twiddles of a group that has them (sb > 0) are
// copied by cp.async into the thread's own tile slots as soon as the last
// pass has read them into registers, so their loads overlap the last pass's
// 3 stages instead of stalling the stores; and the last group, whose tiles
// are contiguous, prefetches into L2 the tile of the block nsmid further on,
// the one likely to start when a block of this wave ends.
template <int RB, int MV, int TB = RADIX_THREAD_BITS, int AH = 0>
__global__ void __launch_bounds__(1 << TB, TB > RADIX_THREAD_BITS ? 1 : RB == 1 ? 3 : 2)
k_dif_group_r(const fr_t* src, fr_t* dst, const fr_t* __restrict__ W, int log_n, int b, int k_arg, int logC_arg,
              const fr_t* __restrict__ GH, const fr_t* __restrict__ GL, int final_mode, fr_t s,
              const fr_t* __restrict__ GIH, const fr_t* __restrict__ GIL) {
    constexpr int R = 1 << RB;
    constexpr bool SPLIT_V = TB > RADIX_THREAD_BITS;
    static_assert(!SPLIT_V || (RB == 3 && TB + RB == 12), "the split variant runs 12 stages at radix 8");
    const int k = SPLIT_V ? TB + RB : k_arg, logC = SPLIT_V ? 0 : logC_arg;
    extern __shared__ uint4 rsm[];
    const int K = 1 << k, tile = K << logC;
    fr_t* const roots = reinterpret_cast<fr_t*>(rsm + 2 * tile);
    const int tid = threadIdx.x;
    const int c = tid & ((1 << logC) - 1), rest = tid >> logC;

    const int sb = b - k;  // log2 of the stride S
    // Indices in 32 bits (n <= 2^MAX_LOG_N): with 64-bit ones ptxas kept g0
    // and ilo in local memory across the passes at radix 4 and 8.
    static_assert(MAX_LOG_N < 32, "element indices must fit 32 bits");
    const uint32_t S = 1u << sb;
    const uint32_t sigma = column_sigma(tid, blockIdx.x, log_n, k, logC, sb);
    const uint32_t g0 = ((sigma >> sb) << b) + (sigma & (S - 1));  // position ih is element g0 + ih * S

    const int np = (k + RB - 1) / RB;
    // The last pass's twiddles through shared memory (cp.async, see above):
    // always in the split variant, by CUZK_NTT_AHEAD bit 0 (AH) in the
    // others; AH bit 1 adds the split variant's L2 prefetch of the next tile.
    const bool tw_smem = (SPLIT_V || (AH & 1)) && sb > 0 && np > 1;
    constexpr bool prefetch = SPLIT_V || (AH & 2);
    fr_t x[R];
    int top = k - 1, low = 0, base = 0;
    for (int pass = 0; pass < np; pass++) {
        // The top + 1 stages left, spread evenly over the np - pass passes
        // left, the longer first: k / np + 1 stages in the first k % np
        // passes, k / np in the rest (k % np, kept, was spilled at radix 4).
        // The split variant's passes are stages 11..9, 8..6, 5..3, 2..0: the
        // same as below, in closed form (with the general one ptxas spilled 3
        // words at CUZK_NTT_MUL=1).
        const int bot = SPLIT_V ? 9 - 3 * pass : top + 1 - (top + np - pass) / (np - pass);
        if (SPLIT_V) top = bot + 2;
        low = SPLIT_V ? bot : top + 1 - RB > 0 ? top + 1 - RB : 0;
        const int nhi = SPLIT_V ? 3 * pass : k - low - RB;  // bits of ih above the window
        base = (rest >> nhi) | ((rest & ((1 << nhi) - 1)) << (low + RB));
        if (pass == 0) {
#pragma unroll
            for (int m = 0; m < R; m++) x[m] = ld(src + (g0 + ((uint32_t)(base | m << low) << sb)));
            if (GL) {
#pragma unroll
                for (int m = 0; m < R; m++) {
                    const uint32_t g = g0 + ((uint32_t)(base | m << low) << sb);
                    x[m] = fmul<MV>(x[m], fmul<MV>(ld(GH + (g >> SPLIT_BITS)), ld(GL + (g & (SPLIT - 1)))));
                }
            }
            // Queued behind the data loads so that their latencies overlap.
            for (int t = tid; t < K / 2; t += blockDim.x) roots[t] = ld(W + ((uint64_t)t << (log_n - k)));
            // Also puts every global read of the block before its first global
            // write: a one-group transform works in place.
            __syncthreads();
        } else {
            __syncthreads();
#pragma unroll
            for (int m = 0; m < R; m++)
                x[m] = lds_planes(rsm, tile, SPLIT_V ? fslot(base | m << low) : rslot(base | m << low, c, logC));
            if (prefetch && pass == np - 1) {
                const uint32_t next = ctaid_reread() + nsmid();
                if (next < gridDim.x) {
                    const uint32_t t = tid_reread();
                    if (sb > 0) {
                        // The next tile's columns, strided: a 128-byte line
                        // holds the elements of 4 consecutive columns, which
                        // the same block (C >= 4) or 4 blocks of one wave
                        // read, so the line's other 96 bytes are used too
                        // (L2 hits) rather than fetched in vain. Thread t
                        // takes positions (t >> logC) | m << (k - RB) of
                        // column t mod C: every position of every column.
                        const uint32_t sn = (next << logC) + (t & ((1u << logC) - 1));
                        const uint32_t gn = ((sn >> sb) << b) + (sn & (S - 1));
#pragma unroll
                        for (int m = 0; m < R; m++)
                            prefetch_l2(src + gn + ((uint32_t)((t >> logC) | m << (k - RB)) << sb));
                    } else if (R >= 4 && k >= 2) {
                        // Column sigma is elements sigma * K .. + K - 1: the
                        // tile is C runs of K * 32 bytes, R / 4 of its
                        // 128-byte lines a thread (R elements a thread).
                        const uint32_t lines_per_col = (1u << k) / 4;
#pragma unroll
                        for (int h = 0; h < R / 4; h++) {
                            const uint32_t l = (R / 4) * t + h, col = l / lines_per_col;
                            const uint32_t sn = next + (col << (log_n - k - logC));
                            prefetch_l2(src + ((sn << k) + (l % lines_per_col) * 4));
                        }
                    }
                }
            }
            if (pass == np - 1 && tw_smem) {
                // The slots just read are the thread's until the block ends.
                const uint32_t half = 1u << (log_n - 1);
                const uint32_t t = tid_reread();
                const uint32_t ilo = column_sigma(t, ctaid_reread(), log_n, k, logC, sb) & (S - 1);
                const int cc = (int)(t & ((1u << logC) - 1));
#pragma unroll
                for (int m = 0; m < R; m++) {
                    const int ih = base | m << low;
                    const uint32_t E = (ilo * brev_bits(ih, k)) << (log_n - b);
                    if (E) {
                        const uint4* w = reinterpret_cast<const uint4*>(W + (E >= half ? E - half : E));
                        const int sl = SPLIT_V ? fslot(ih) : rslot(ih, cc, logC);
                        cp_async16(rsm + sl, w);
                        cp_async16(rsm + tile + sl, w + 1);
                    }
                }
            }
        }
        dif_reg_stages<RB, MV>(x, base, low, top, bot, k, roots);
        // Each slot belongs to one thread in every pass, so a pass overwrites
        // only what it read itself: one barrier per exchange.
        if (pass + 1 < np) {
#pragma unroll
            for (int m = 0; m < R; m++)
                sts_planes(rsm, tile, SPLIT_V ? fslot(base | m << low) : rslot(base | m << low, c, logC), x[m]);
        }
        top = bot - 1;
    }

    const uint32_t half = 1u << (log_n - 1);
    // Read again rather than kept through the passes: kept, it was the one
    // value ptxas spilled to local memory at radix 4.
    const uint32_t ilo = column_sigma(tid_reread(), ctaid_reread(), log_n, k, logC, sb) & (S - 1);
    if (tw_smem) cp_wait_all();
    const int cc = SPLIT_V || !(AH & 1) ? 0 : (int)(tid_reread() & ((1u << logC) - 1));
#pragma unroll
    for (int m = 0; m < R; m++) {
        const int ih = base | m << low;
        const uint32_t g = g0 + ((uint32_t)ih << sb);
        fr_t v = x[m];
        if (sb > 0) {
            const uint32_t E = (ilo * brev_bits(ih, k)) << (log_n - b);
            if (tw_smem) {
                if (E) {
                    fr_t w = lds_planes(rsm, tile, SPLIT_V ? fslot(ih) : rslot(ih, cc, logC));
                    if (E >= half) w = w.neg();
                    v = fmul<MV>(v, w);
                }
            } else if (E) {
                v = fmul<MV>(v, E >= half ? ld(W + (E - half)).neg() : ld(W + E));
            }
        }
        if (final_mode < 0) {
            st(dst + g, v);
        } else {
            const uint32_t nat = __brev(g) >> (32 - log_n);
            if (final_mode == 1)
                v = fmul<MV>(v, s);
            else if (final_mode == 2)
                v = fmul<MV>(v, fmul<MV>(ld(GIH + (nat >> SPLIT_BITS)), ld(GIL + (nat & (SPLIT - 1)))));
            st(dst + nat, v);
        }
    }
}

// Launch shape of k_dif_group_r for a group of k stages of a 2^L transform:
// radix 2^rb (fewer bits for a group of fewer stages) and 2^logC columns,
// aiming at tiles of 2^tile_bits elements within RADIX_THREADS threads.
// Groups of more stages than RADIX_THREADS threads hold at radix 2^rb (only
// with CUZK_NTT_GROUP_BITS above 10) run at radix 8, those of 12 stages in
// the split variant (split set).
struct rshape {
    int rb, logC;
    bool split;
    unsigned threads;
    size_t shmem;  // the tile's two planes and the K/2 roots
};
inline rshape radix_shape(int L, int k, int rb, int tile_bits) {
    rshape r;
    r.split = k == SPLIT_THREAD_BITS + 3;
    if (k > RADIX_THREAD_BITS + rb) rb = 3;
    if (r.split) {
        r.rb = 3;
        r.logC = 0;
        r.threads = 1u << SPLIT_THREAD_BITS;
        r.shmem = ((size_t)2 << k) * sizeof(uint4) + ((size_t)1 << (k - 1)) * sizeof(fr_t);
        return r;
    }
    r.rb = k < rb ? k : rb;
    int logC = tile_bits - k;
    if (logC > RADIX_THREAD_BITS + r.rb - k) logC = RADIX_THREAD_BITS + r.rb - k;
    if (logC > L - k) logC = L - k;
    if (logC < 0) logC = 0;
    r.logC = logC;
    r.threads = 1u << (k + logC - r.rb);
    r.shmem = ((size_t)2 << (k + logC)) * sizeof(uint4) + ((size_t)1 << (k - 1)) * sizeof(fr_t);
    return r;
}

// In-place bit reversal with the final scale. mode 0: none; 1: times s;
// 2: times GIH[i >> 12] * GIL[i & 4095].
template <int MV>
__global__ void k_bitrev_scale(fr_t* d, int log_n, int mode, fr_t s, const fr_t* __restrict__ GIH,
                               const fr_t* __restrict__ GIL) {
    const uint64_t n = 1ull << log_n;
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint64_t r = brev_bits((uint32_t)i, log_n);
    if (r < i) return;
    fr_t x = ld(d + i), y = ld(d + r);
    if (mode == 1) {
        x = fmul<MV>(x, s);
        y = fmul<MV>(y, s);
    } else if (mode == 2) {
        y = fmul<MV>(y, fmul<MV>(ld(GIH + (i >> SPLIT_BITS)), ld(GIL + (i & (SPLIT - 1)))));
        x = fmul<MV>(x, fmul<MV>(ld(GIH + (r >> SPLIT_BITS)), ld(GIL + (r & (SPLIT - 1)))));
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

// The stages of a 2^L transform cut into groups of at most max_group: the
// fewest groups, the longer ones first, sizes within one of each other;
// from 2^24 up with the default groups of at most 9, every group but the
// last of 9 stages and the rest last (2^24: 9 + 9 + 6, one register pass
// fewer than 8 + 8 + 8 at radix 8; on the H200 4.09 ms forward against
// 4.22, and 3.88 with tiles of 2^10, tile_bits_default). Or, for
// experiments, CUZK_NTT_SPLIT: group sizes first to last ("9,9,6"),
// used for the sizes they add up to when that takes as many groups as the
// default, each of 1..MAX_GROUP_BITS stages (k_dif_group_r's general
// shapes). Writes the sizes to out and returns their count.
inline int group_split(int L, int max_group, int* out) {
    const int groups = L > 0 ? (L + max_group - 1) / max_group : 1;
    for (int gi = 0; gi < groups; gi++) out[gi] = L / groups + (gi < L % groups ? 1 : 0);
    if (max_group == MAX_GROUP_BITS && L >= 24) {
        for (int gi = 0; gi + 1 < groups; gi++) out[gi] = MAX_GROUP_BITS;
        out[groups - 1] = L - MAX_GROUP_BITS * (groups - 1);
    }
    const char* e = getenv("CUZK_NTT_SPLIT");
    if (!e || !*e || groups < 2) return groups;
    int v[MAX_LOG_N], n = 0, sum = 0;
    for (const char* p = e; *p;) {
        char* end;
        const long x = strtol(p, &end, 10);
        if (end == p || x < 1 || x > MAX_GROUP_BITS || n == MAX_LOG_N) return groups;
        v[n++] = (int)x;
        sum += (int)x;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return groups;
    }
    if (sum != L || n != groups) return groups;
    for (int gi = 0; gi < n; gi++) out[gi] = v[gi];
    return n;
}

// Tile size of the group kernels by default: 2^10 elements for k_dif_group;
// for k_dif_group_r, 2^(RADIX_THREAD_BITS + rb), a block's full 256 threads,
// except at 2^24 at radix 8, where tiles of 2^10 (blocks of 128 threads, 4
// a multiprocessor) were the fastest on the H200 with the 9 + 9 + 6 groups:
// 3.88 ms forward against 4.09 with 2^11 and 5.20 with 2^9 (inverse coset
// 4.51, 4.72, 5.87; docs/benchmarks.md). Other sizes keep 2^11: with the
// balanced groups at 2^24 tiles of 2^10 were slower (4.26 against 4.22).
inline int tile_bits_default(int L, int rb) {
    if (!rb) return TILE_BITS;
    return rb == 3 && L == 24 ? 10 : RADIX_THREAD_BITS + rb;
}

// The scratch a transform of 2^log_n elements takes: one vector when its
// stages take more than one group (see transform), else none. Both group
// kernels cut the stages alike, so this holds whichever CUZK_NTT_RADIX picks.
inline uint64_t scratch_bytes(int log_n) {
    int split[MAX_LOG_N];
    return group_split(log_n, group_bits(), split) > 1 ? (1ull << log_n) * sizeof(fr_t) : 0;
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

// Queues k_dif_group_r for one group; the arguments are k_dif_group's.
template <int MV>
inline cudaError_t launch_dif_r(const rshape& r, unsigned grid, cudaStream_t st, const fr_t* src, fr_t* dst,
                                const fr_t* W, int log_n, int b, int k, const fr_t* GH, const fr_t* GL,
                                int final_mode, fr_t s, const fr_t* GIH, const fr_t* GIL, int ahead) {
    auto kern = r.split     ? k_dif_group_r<3, MV, SPLIT_THREAD_BITS>
                : r.rb == 3 ? (ahead == 1   ? k_dif_group_r<3, MV, RADIX_THREAD_BITS, 1>
                               : ahead == 2 ? k_dif_group_r<3, MV, RADIX_THREAD_BITS, 2>
                               : ahead == 3 ? k_dif_group_r<3, MV, RADIX_THREAD_BITS, 3>
                                            : k_dif_group_r<3, MV>)
                : r.rb == 2 ? k_dif_group_r<2, MV>
                            : k_dif_group_r<1, MV>;
    if (r.shmem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)r.shmem);
        if (e != cudaSuccess) return e;
    }
    kern<<<grid, r.threads, r.shmem, st>>>(src, dst, W, log_n, b, k, r.logC, GH, GL, final_mode, s, GIH, GIL);
    return cudaSuccess;
}

// Transforms d (n elements, natural order) in place. inverse selects w^-1 and
// the 1/n scale; coset evaluates on (inverse: interpolates from) g*<w>, with
// gnark-crypto's conventions: forward coset = FFT(x[i] * g^i), inverse coset =
// IFFT(x)[i] * g^-i. scratch (device, scratch_len bytes) must hold
// scratch_bytes(log_n) bytes; the transform returns once queued, so the
// caller keeps it until the stream has run. Without scratch (nullptr) it
// runs in place, with a bit-reversal pass at the end.
template <int MV>
inline cudaError_t transform_mv(const domain_t& dom, fr_t* d, bool inverse, bool coset, fr_t* scratch_buf,
                                uint64_t scratch_len, cudaStream_t st) {
    const int L = dom.log_n;
    const fr_t* W = inverse ? dom.Winv : dom.W;
    const int mode = inverse ? (coset ? 2 : 1) : 0;
    if (L == 0) {
        if (mode != 0)
            k_bitrev_scale<MV><<<1, 32, 0, st>>>(d, 0, mode, dom.n_inv, dom.GIH, dom.GIL);
        return cudaGetLastError();
    }
    phase_timer prof(st);
    // Knobs for tuning experiments (defaults: the measured best).
    // CUZK_NTT_GROUP_BITS: at most 9 stages a group by default; 11 or 12 run
    // groups of 11 (radix 8, one column) and 12 (the split variant).
    const int max_group = group_bits();
    // CUZK_NTT_RADIX=8 (the default) or 4: the groups run k_dif_group_r, 3
    // or 2 stages per shared-memory round trip, its tiles full blocks; 2:
    // k_dif_group, one stage per round trip. With REDCR (CUZK_NTT_MUL=1),
    // radix 8 was the fastest on the H200 (2^24 forward: 4.22 ms against 4.28
    // at radix 4 and 4.54 at radix 2; inverse coset 4.73, 4.84, 4.97).
    const int radix = env_int("CUZK_NTT_RADIX", 8, 2, 8);
    const int rb = radix == 8 ? 3 : radix == 4 ? 2 : 0;
    const int tile_bits = env_int("CUZK_NTT_TILE_BITS", tile_bits_default(L, rb), 6, 11);
    const unsigned max_threads = (unsigned)env_int("CUZK_NTT_THREADS", 256, 32, 1024);
    // CUZK_NTT_AHEAD (bits, default 0): 1 copies the last pass's twiddles
    // into shared memory by cp.async while it runs its stages, as the split
    // variant does; 2 prefetches the next tile into L2. Same bits either way.
    const int ahead = env_int("CUZK_NTT_AHEAD", 0, 0, 3);
    int split[MAX_LOG_N];
    const int groups = group_split(L, max_group, split);
    // Several groups run out of place through the caller's scratch so that
    // the last one can scatter straight into natural order in d: no separate
    // bit-reversal pass. Without scratch they run in place, every group
    // writing where it read (the last one too, so the result is
    // bit-reversed), and a bit-reversal pass that also applies the inverse's
    // scale puts it in natural order: one more pass over d, for no scratch.
    fr_t* scratch = d;
    const bool in_place = groups > 1 && !scratch_buf;
    if (groups > 1 && !in_place) {
        if (scratch_len < dom.n * sizeof(fr_t)) return cudaErrorMemoryAllocation;
        scratch = scratch_buf;
    }
    int b = L;
    for (int gi = 0; gi < groups; gi++) {
        const int k = split[gi];
        const bool pre = coset && !inverse && gi == 0;
        const bool last = gi == groups - 1 && !in_place;
        const fr_t* src = gi == 0 ? d : scratch;
        fr_t* dst = last ? d : scratch;
        // The register-radix kernel lays its last group out for the scatter
        // into natural order; in place the radix-2 kernel does every group.
        if (rb && !in_place) {
            const rshape r = radix_shape(L, k, rb, tile_bits);
            cudaError_t e = launch_dif_r<MV>(r, (unsigned)(dom.n >> (k + r.logC)), st, src, dst, W, L, b, k,
                                         pre ? dom.GH : nullptr, pre ? dom.GL : nullptr, last ? mode : -1,
                                         dom.n_inv, dom.GIH, dom.GIL, ahead);
            if (e != cudaSuccess) return e;
            prof.mark(gi == 0 ? "group0" : gi == 1 ? "group1" : "group2+");
            b -= k;
            continue;
        }
        int logC = tile_bits - k;
        if (logC > L - k) logC = L - k;
        if (logC < 0) logC = 0;
        const int tile = 1 << (k + logC);
        const unsigned threads = tile / 2 < (int)max_threads ? (tile / 2 < 32 ? 32 : tile / 2) : max_threads;
        const unsigned grid = (unsigned)(dom.n >> (k + logC));
        const size_t shmem = (size_t)(tile + (1 << (k - 1))) * sizeof(fr_t);
        if (shmem > 48 * 1024) {
            cudaError_t e = cudaFuncSetAttribute(k_dif_group<MV>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shmem);
            if (e != cudaSuccess) return e;
        }
        k_dif_group<MV><<<grid, threads, shmem, st>>>(src, dst, W, L, b, k, logC, pre ? dom.GH : nullptr,
                                                  pre ? dom.GL : nullptr, last ? mode : -1, dom.n_inv, dom.GIH,
                                                  dom.GIL);
        prof.mark(gi == 0 ? "group0" : gi == 1 ? "group1" : "group2+");
        b -= k;
    }
    if (in_place) {
        k_bitrev_scale<MV><<<blocks_for(dom.n, 256), 256, 0, st>>>(d, L, mode, dom.n_inv, dom.GIH, dom.GIL);
        prof.mark("bitrev");
    }
    cudaError_t e = cudaGetLastError();
    prof.report(inverse ? "intt" : "ntt", dom.n, L);
    return e;
}

// CUZK_NTT_MUL picks the Fr product of every kernel of the transform: 1
// (the default) the even/odd product with REDCR (ff/mont_eo.cuh), 16 fewer
// IMAD results per product, 0 the field's own. Same bits either way. On the
// H200 REDCR took the 2^24 forward transform from 4.74 to 4.28 ms at radix 4
// and from 4.75 to 4.22 at radix 8.
inline cudaError_t transform(const domain_t& dom, fr_t* d, bool inverse, bool coset, fr_t* scratch_buf,
                             uint64_t scratch_len, cudaStream_t st) {
    if (env_int("CUZK_NTT_MUL", 1, 0, 1) == 1)
        return transform_mv<1>(dom, d, inverse, coset, scratch_buf, scratch_len, st);
    return transform_mv<0>(dom, d, inverse, coset, scratch_buf, scratch_len, st);
}

inline cudaError_t groth16_h(const domain_t& dom, fr_t* a, const fr_t* b, const fr_t* c, cudaStream_t st) {
    k_groth16_h<<<blocks_for(dom.n, 256), 256, 0, st>>>(a, b, c, dom.z_inv, dom.n);
    return cudaGetLastError();
}

}  // namespace ntt
}  // namespace cuzk
