// Multi-scalar multiplication on G1 and G2 (one template over the coordinate
// field: fp_t for G1, fp2_t for G2): Pippenger's bucket method with signed
// c-bit digits (buckets 1..2^(c-1), a negative digit adds the negated point),
// c chosen from the size.
//
// For a batch of windows: (1) one thread per scalar computes its signed
// digits; (2) each window's (digit, point index) pairs are radix-sorted by
// digit on the device (CUB), so every bucket is a contiguous run; (3) the
// sorted array is cut into equal chunks, one thread per chunk adding its
// points into XYZZ accumulators: runs that start and end inside the chunk are
// complete buckets and are written directly, a run cut by a chunk boundary
// leaves a partial sum in a slot, and (4) a tree of fixup levels adds the
// partials of each such bucket. Equal chunks keep the work balanced however skewed the
// scalars are (all equal, mostly zero). Then (5) each window's sum
// sum_j j*B_j is computed by segments (running sums inside a segment plus the
// segment offset times the segment total), (6) the segment results are added
// in a tree, and (7) the host combines the window sums by doubling.
//
// With the split option (run_split), the scalars are first classified after
// reduction mod r: zero scalars are dropped, the points whose scalar is one
// are summed with plain additions, and only the other scalars go through the
// steps above, reading their points through an index array.
//
// Built with CUZK_MSM_AFFINE=1, step (3) adds in affine coordinates with
// batched inversions instead (msm/affine.cuh, k_accumulate_affine): the same
// chunks, slots and fixup, with chunks of 256 entries and a list per resident
// thread taken from the scratch.
#pragma once
#include <cuda_runtime.h>
#include <cub/device/device_partition.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/reverse_iterator.h>
#include "../ff/bls12_381.cuh"
#include "../ff/fp2.cuh"
#include "../ec/xyzz.cuh"
#include "../arena.cuh"
#include "../prof.cuh"

// 1: bucket accumulation in affine coordinates with batched inversions
// (msm/affine.cuh); 0 (the default): mixed XYZZ additions (k_accumulate).
#ifndef CUZK_MSM_AFFINE
#define CUZK_MSM_AFFINE 0
#endif
#if CUZK_MSM_AFFINE
#include "affine.cuh"
#endif

namespace cuzk {
namespace msm {

typedef affine_t<fp_t> g1_affine;
typedef xyzz_t<fp_t> g1_xyzz;
typedef jacobian_t<fp_t> g1_jacobian;
typedef affine_t<fp2_t> g2_affine;
typedef xyzz_t<fp2_t> g2_xyzz;
typedef jacobian_t<fp2_t> g2_jacobian;

constexpr uint32_t FIXUP_FANIN = 16;  // slots per thread in a fixup level
constexpr int MAX_FIXUP_LEVELS = 64;

// Blocks per multiprocessor the point kernels ask the compiler for (a
// register cap); 0 leaves registers uncapped.
#ifndef CUZK_MSM_MIN_BLOCKS
#define CUZK_MSM_MIN_BLOCKS 3
#endif
// G2 points are twice as wide: by default its kernels keep the compiler's
// full register budget.
#ifndef CUZK_MSM_G2_MIN_BLOCKS
#define CUZK_MSM_G2_MIN_BLOCKS 1
#endif
template <class F>
struct min_blocks {
    static constexpr int value = CUZK_MSM_MIN_BLOCKS;
};
template <>
struct min_blocks<fp2_t> {
    static constexpr int value = CUZK_MSM_G2_MIN_BLOCKS;
};
#if CUZK_MSM_MIN_BLOCKS > 0
#define CUZK_MSM_BOUNDS __launch_bounds__(128, min_blocks<F>::value)
#else
#define CUZK_MSM_BOUNDS
#endif
#if CUZK_MSM_AFFINE
// The affine accumulation's own register cap on G1 (G2 keeps
// CUZK_MSM_G2_MIN_BLOCKS): at 3 blocks (168 registers) its XYZZ tail spills
// its accumulator around the products, at 2 (222 registers) nothing spills
// but fewer warps hide the latencies; the card decides.
#ifndef CUZK_MSM_AFFINE_MIN_BLOCKS
#define CUZK_MSM_AFFINE_MIN_BLOCKS CUZK_MSM_MIN_BLOCKS
#endif
template <class F>
struct affine_min_blocks {
    static constexpr int value = CUZK_MSM_AFFINE_MIN_BLOCKS;
};
template <>
struct affine_min_blocks<fp2_t> {
    static constexpr int value = CUZK_MSM_G2_MIN_BLOCKS;
};
#if CUZK_MSM_AFFINE_MIN_BLOCKS > 0
#define CUZK_MSM_AFFINE_BOUNDS __launch_bounds__(128, affine_min_blocks<F>::value)
#else
#define CUZK_MSM_AFFINE_BOUNDS
#endif
#endif
constexpr int CHUNK = 128;            // sorted entries per accumulating thread (default)
constexpr uint64_t BATCH_ENTRIES = 1ull << 28;  // digits sorted at once (4 arrays of 4 B each)

__device__ __forceinline__ uint32_t window_bits(const uint32_t s[8], int pos, int c) {
    if (pos >= 256) return 0;
    const int wi = pos >> 5, sh = pos & 31;
    uint64_t w = s[wi];
    if (wi + 1 < 8) w |= (uint64_t)s[wi + 1] << 32;
    return (uint32_t)(w >> sh) & ((1u << c) - 1);
}

// The scalar as an integer below r: out of Montgomery form if mont, else
// reduced. Both the split's classification and the digits read scalars
// through this, so a scalar is "one" exactly when its digits would be 1.
__device__ __forceinline__ fr_t canonical_scalar(fr_t s, int mont) {
    if (mont) {
        // s * 1 * R^-1, fully reduced.
        fr_t raw_one = fr_t::zero();
        raw_one.v[0] = 1;
        return s * raw_one;
    }
    // Canonical input may be any 256-bit value; 2^256 < 3r.
    while (s.geq_mod()) s.sub_mod_raw();
    return s;
}

// Signed digits of windows [w0, w0+wc) of n scalars: keys = |digit|,
// vals = point index | sign << 31, laid out window-major. Entry i is scalar
// idx[i] (i without idx), and its value is that index, so the points are read
// where they lie, never gathered.
//
// Over a table of t copies (t > 1, msm/table.cuh: row k of `rows` points is
// 2^(c·g·k) times the points, g the windows a copy covers), scalar window
// w = k·g + l is virtual window l's digit for row k: virtual window l has
// t·n entries, (l - w0)·t·n + k·n + i holding point k·rows + j. Windows at
// and above nw have digit 0 (the top window takes the last carry), so a t·g
// beyond nw costs zero entries only. t = 1 is the plain MSM (g = nw).
__global__ void k_digits(const fr_t* __restrict__ scalars, const uint32_t* __restrict__ idx, uint64_t n, int c,
                         int w0, int wc, int mont, uint32_t* keys, uint32_t* vals, int t, int g, uint64_t rows) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint32_t j = idx ? idx[i] : (uint32_t)i;
    const fr_t s = canonical_scalar(scalars[j], mont);
    const uint32_t half = 1u << (c - 1);
    uint32_t carry = 0;
    const int W = t == 1 ? w0 + wc : t * g;
    int k = 0, l = 0;  // w = k·g + l
    for (int w = 0; w < W; w++) {
        const uint32_t v = window_bits(s.v, w * c, c) + carry;
        uint32_t mag = v, neg = 0;
        if (v > half) {
            mag = (1u << c) - v;
            neg = 1;
            carry = 1;
        } else {
            carry = 0;
        }
        if (l >= w0 && l < w0 + wc) {
            const uint64_t e = ((uint64_t)(l - w0) * t + k) * n + i;
            keys[e] = mag;
            vals[e] = (uint32_t)((uint64_t)k * rows + j) | (neg << 31);
        }
        if (++l == g) {
            l = 0;
            k++;
        }
    }
}

__device__ __forceinline__ g1_affine load_point(const g1_affine* p) {
    g1_affine r;
    const uint4* q = reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int i = 0; i < 3; i++) {
        uint4 a = q[i];
        r.x.v[4 * i] = a.x; r.x.v[4 * i + 1] = a.y; r.x.v[4 * i + 2] = a.z; r.x.v[4 * i + 3] = a.w;
    }
#pragma unroll
    for (int i = 0; i < 3; i++) {
        uint4 a = q[3 + i];
        r.y.v[4 * i] = a.x; r.y.v[4 * i + 1] = a.y; r.y.v[4 * i + 2] = a.z; r.y.v[4 * i + 3] = a.w;
    }
    return r;
}

__device__ __forceinline__ void load_fp(fp_t& x, const uint4* q) {
#pragma unroll
    for (int i = 0; i < 3; i++) {
        uint4 a = q[i];
        x.v[4 * i] = a.x; x.v[4 * i + 1] = a.y; x.v[4 * i + 2] = a.z; x.v[4 * i + 3] = a.w;
    }
}

// G2: x = (x.c0, x.c1), y = (y.c0, y.c1), 192 bytes.
__device__ __forceinline__ g2_affine load_point(const g2_affine* p) {
    g2_affine r;
    const uint4* q = reinterpret_cast<const uint4*>(p);
    load_fp(r.x.c0, q);
    load_fp(r.x.c1, q + 3);
    load_fp(r.y.c0, q + 6);
    load_fp(r.y.c1, q + 9);
    return r;
}

// Starts a point's 96 (G2: 192) bytes towards L2.
template <class F>
__device__ __forceinline__ void prefetch_point(const affine_t<F>* p) {
    const char* q = reinterpret_cast<const char*>(p);
    constexpr int PB = (int)sizeof(affine_t<F>);
    asm volatile("prefetch.global.L2 [%0];" ::"l"(q));
    if (PB > 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(q + 128));
    asm volatile("prefetch.global.L2 [%0];" ::"l"(q + PB - 1));
}

// Global bucket id of sorted entry p: window (w0 + p / n), digit keys[p].
struct entry_cursor {
    uint64_t n, next_boundary;
    uint32_t base, Bw;
    __device__ void init(uint64_t p, uint64_t n_, int w0, uint32_t Bw_) {
        n = n_;
        Bw = Bw_;
        const uint64_t wl = p / n;
        base = (uint32_t)((w0 + wl) * Bw);
        next_boundary = (wl + 1) * n;
    }
    __device__ uint32_t key(uint64_t p, const uint32_t* keys) {
        while (p >= next_boundary) {
            next_boundary += n;
            base += Bw;
        }
        return base + keys[p];
    }
};

template <class F, int MUL>
__global__ void CUZK_MSM_BOUNDS k_accumulate(const uint32_t* __restrict__ keys, const uint32_t* __restrict__ vals, uint64_t M,
                             uint64_t n, int w0, uint32_t Bw, const affine_t<F>* __restrict__ points,
                             xyzz_t<F>* buckets, uint32_t* slot_keys, xyzz_t<F>* slots, uint64_t nthreads,
                             uint32_t chunk) {
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nthreads) return;
    const uint64_t p0 = t * chunk;
    const uint64_t p1 = p0 + chunk < M ? p0 + chunk : M;

    entry_cursor cur, edge;
    cur.init(p0, n, w0, Bw);
    const uint32_t first_key = cur.key(p0, keys);
    bool head_open = false, tail_open = false;
    if (p0 > 0) {
        edge.init(p0 - 1, n, w0, Bw);
        head_open = edge.key(p0 - 1, keys) == first_key;
    }
    if (p1 < M) {
        edge.init(p1 - 1, n, w0, Bw);
        const uint32_t last_key = edge.key(p1 - 1, keys);
        tail_open = edge.key(p1, keys) == last_key;
    }
    uint32_t run = first_key;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    bool first = true, head_done = false;
    // Slots are written as soon as they are known: holding them in
    // registers would cost occupancy.
    for (uint64_t p = p0; p < p1; p++) {
        // The point of the next entry is a random 96-byte (G2: 192-byte) read: start it
        // towards L2 before this entry's addition.
        if (p + 1 < p1) prefetch_point(points + (vals[p + 1] & 0x7fffffffu));
        const uint32_t k = cur.key(p, keys);
        if (k != run) {
            if (first && head_open) {
                slots[2 * t] = acc;
                head_done = true;
            } else {
                buckets[run] = acc;  // complete in this chunk: the only writer
            }
            first = false;
            run = k;
            acc = xyzz_t<F>::inf();
        }
        if (keys[p] != 0) {
            const uint32_t v = vals[p];
            const affine_t<F> P = load_point(points + (v & 0x7fffffffu));
            if (!P.is_inf()) acc.template add_affine<MUL>(P.x, (v >> 31) ? P.y.neg() : P.y);
        }
    }
    // Two slots per chunk, always with keys (infinity where nothing is
    // open), so the slot array stays sorted with no gaps.
    slot_keys[2 * t] = first_key;
    slot_keys[2 * t + 1] = run;
    if (first && (head_open || tail_open)) {
        slots[2 * t] = acc;
        slots[2 * t + 1] = xyzz_t<F>::inf();
    } else {
        if (!head_done) slots[2 * t] = xyzz_t<F>::inf();
        if (tail_open) {
            slots[2 * t + 1] = acc;
        } else {
            buckets[run] = acc;
            slots[2 * t + 1] = xyzz_t<F>::inf();
        }
    }
}

#if CUZK_MSM_AFFINE
// k_accumulate's work by affine additions with batched inversions: G
// resident threads, each taking chunks s, s + G, ... with its own list
// (msm/affine.cuh). The same outputs: buckets of the runs inside a chunk, two
// slots a chunk.
template <class F>
__global__ void CUZK_MSM_AFFINE_BOUNDS k_accumulate_affine(const __grid_constant__ affine::job<F> J, uint64_t nchunks) {
    const uint64_t s = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= J.G) return;
    for (uint64_t t = s; t < nchunks; t += J.G) affine::chunk(J, t, s);
}
#endif

// Adds up partial sums of buckets whose runs crossed chunk boundaries, one
// level of a tree: the input is m (key, partial) pairs sorted by key with no
// gaps (a chunk with nothing open emits a key with the point at infinity);
// each thread takes g consecutive pairs, adds a run that lies wholly in its
// chunk into the bucket, and passes the runs open at either end of its chunk
// to the next level, in the same two-slots-per-thread form. A run is complete
// at the level where it first fits in one chunk, so each bucket gets exactly
// one addition here, after k_accumulate wrote or skipped it. Levels with
// nothing open return at once (flag_in clear), so random scalars pay for one
// level, and one bucket as large as the whole input (equal scalars, a short
// top window) for log_{g/2}(m) levels of g additions each.
template <class F>
__global__ void CUZK_MSM_BOUNDS k_fixup_level(const uint32_t* __restrict__ in_keys, const xyzz_t<F>* __restrict__ in_vals, uint64_t m,
                              uint32_t g, uint32_t* out_keys, xyzz_t<F>* out_vals, xyzz_t<F>* buckets,
                              const int* flag_in, int* flag_out) {
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t nthr = (m + g - 1) / g;
    if (t >= nthr) return;
    if (flag_in && *flag_in == 0) return;
    const uint64_t p0 = t * g;
    const uint64_t p1 = p0 + g < m ? p0 + g : m;
    uint32_t run = in_keys[p0];
    const bool head_open = p0 > 0 && in_keys[p0 - 1] == run;
    const bool tail_open = p1 < m && in_keys[p1] == in_keys[p1 - 1];
    xyzz_t<F> acc = xyzz_t<F>::inf();
    bool first = true, head_done = false;
    for (uint64_t p = p0; p < p1; p++) {
        const uint32_t k = in_keys[p];
        if (k != run) {
            if (first && head_open) {
                out_vals[2 * t] = acc;
                head_done = true;
            } else {
                buckets[run].add(acc);
            }
            first = false;
            run = k;
            acc = xyzz_t<F>::inf();
        }
        acc.add(in_vals[p]);
    }
    out_keys[2 * t] = in_keys[p0];
    out_keys[2 * t + 1] = run;
    if (first && (head_open || tail_open)) {
        out_vals[2 * t] = acc;
        out_vals[2 * t + 1] = xyzz_t<F>::inf();
    } else {
        if (!head_done) out_vals[2 * t] = xyzz_t<F>::inf();
        if (tail_open) {
            out_vals[2 * t + 1] = acc;
        } else {
            buckets[run].add(acc);
            out_vals[2 * t + 1] = xyzz_t<F>::inf();
        }
    }
    if (head_open || tail_open) *flag_out = 1;
}

// One thread per (window, segment of 2^logLs buckets): the segment's running
// sums, total = sum_j (j - lo + 1) * B_j and running = sum_j B_j. Three points
// live across the additions: at MINB = 3 blocks a multiprocessor (168
// registers) ptxas spills 648 bytes a thread (nvcc 11.8), at 2 (255) 172,
// with fewer warps to hide latencies (CUZK_MSM_REDUCE_BLOCKS picks, 3 by
// default; G2 keeps its own cap).
template <class F, int MUL, int MINB>
__global__ void __launch_bounds__(128, MINB) k_bucket_reduce(const xyzz_t<F>* __restrict__ buckets, uint32_t Bw, int nw, int logLs,
                                                uint32_t nseg, xyzz_t<F>* out_total, xyzz_t<F>* out_running) {
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (uint64_t)nw * nseg) return;
    const uint32_t w = (uint32_t)(t / nseg), s = (uint32_t)(t % nseg);
    const uint32_t lo = (s << logLs) + 1, hi = (s << logLs) + (1u << logLs);
    const xyzz_t<F>* B = buckets + (uint64_t)w * Bw;
    xyzz_t<F> running = xyzz_t<F>::inf(), total = xyzz_t<F>::inf();
    for (uint32_t j = hi; j >= lo; j--) {
        running.template add<MUL>(B[j]);
        total.template add<MUL>(running);
    }
    out_total[t] = total;
    out_running[t] = running;
}

// total += (segment offset) * running, in its own kernel so that neither
// kernel keeps three points live.
template <class F>
__global__ void CUZK_MSM_BOUNDS k_segment_scale(xyzz_t<F>* total, const xyzz_t<F>* __restrict__ running, int nw,
                                                int logLs, uint32_t nseg) {
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (uint64_t)nw * nseg) return;
    const uint32_t m = (uint32_t)(t % nseg) << logLs;
    if (m == 0) return;
    const xyzz_t<F> r = running[t];
    xyzz_t<F> q = xyzz_t<F>::inf();
    for (int bit = 31 - __clz(m); bit >= 0; bit--) {
        q = q.dbl();
        if ((m >> bit) & 1) q.add(r);
    }
    q.add(total[t]);
    total[t] = q;
}

// out[w][o] = sum of in[w][o*fan .. o*fan+fan)
template <class F>
__global__ void CUZK_MSM_BOUNDS k_sum(const xyzz_t<F>* __restrict__ in, uint32_t cnt, uint32_t fan, xyzz_t<F>* out, uint32_t outcnt,
                      int nw) {
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (uint64_t)nw * outcnt) return;
    const uint32_t w = (uint32_t)(t / outcnt), o = (uint32_t)(t % outcnt);
    xyzz_t<F> acc = xyzz_t<F>::inf();
    const uint32_t end = o * fan + fan < cnt ? o * fan + fan : cnt;
    for (uint32_t j = o * fan; j < end; j++) acc.add(in[(uint64_t)w * cnt + j]);
    out[t] = acc;
}

// CUZK_MSM_MUL: the field operations of G1's bucket accumulation and bucket
// sums, as bits (xyzz_t's MUL_*): 1, each a b + c d of the point formulas
// with one reduction (ff/mont_eo.cuh's eo_mul2); 2, the squares by rows
// (eo_sqr); 0, plain products. Every value gives the same bits; G2 ignores
// it (its own knob is CUZK_MSM_G2_MUL, below). The default is 3, both: on the H200 it was the
// fastest at 2^20, 2^22 and 2^24 (106.6 ms against 121.2 with plain
// products at 2^24, docs/benchmarks.md).
inline int msm_mul() { return env_int("CUZK_MSM_MUL", 3, 0, 3); }

// CUZK_MSM_G2_MUL: the field operations of G2's bucket accumulation and
// bucket sums: 1, every Fp2 product of the point formulas with lazy
// reduction (fp2_t::mul_lazy, xyzz_t's MUL_LAZY: two Montgomery reductions
// instead of three); 2, that and the formulas regrouped around a b + c d as
// G1's MUL_FUSED does, each with one lazy reduction per component
// (fp2_t::mul2_lazy); 0, Karatsuba over three reduced Fp products. The same
// bits every way. 1 by default: on the H200 a 2^20 G2 MSM took 31.72 ms
// with it, 31.82 with 2 and 34.72 with 0 (TestMSMG2Timing, median of 5;
// docs/benchmarks.md). As the MUL of G2's kernels: MUL_LAZY (4) and
// MUL_LAZY | MUL_FUSED (5).
inline int msm_g2_mul() {
    const int v = env_int("CUZK_MSM_G2_MUL", 1, 0, 2);
    return v == 0 ? 0 : v == 1 ? 4 : 5;
}

// The MUL a kernel of F runs with: G1 takes CUZK_MSM_MUL's bits (0..3), G2
// CUZK_MSM_G2_MUL's (0, 4, 5), so each field instantiates only its own
// variants (G1's mul is never above 3, G2's never 1..3).
template <class F, int MUL>
constexpr int mul_of() {
    return sizeof(F) == sizeof(fp_t) ? (MUL & 3) : (MUL & 4) != 0 ? (MUL & 5) : 0;
}
// The bucket sums' blocks per multiprocessor: B on G1, G2's own cap on G2.
template <class F, int B>
constexpr int reduce_blocks_of() {
    return sizeof(F) == sizeof(fp_t) ? B : (min_blocks<F>::value > 0 ? min_blocks<F>::value : 1);
}

// The cost model's window: fewest additions, counting n per window for the
// buckets and about 1.4 * 2^c per window for the bucket sums (full
// additions cost more).
inline int model_window(uint64_t n) {
    int best = 4;
    double best_cost = 1e300;
    for (int c = 4; c <= 22; c++) {
        const int nw = 255 / c + 1;
        const double cost = (double)nw * ((double)n + 1.4 * (double)(1ull << c));
        if (cost < best_cost) {
            best_cost = cost;
            best = c;
        }
    }
    return best;
}

// Windows measured on the H200 (G1, `cuzk bench msm --windows`, median of
// 5, 2026-12-01; docs/benchmarks.md has the sweep), by log2 of the size:
// {log2 n, the fastest c}. Where they differ from the cost model: 2^14 c = 8
// (4.12 ms against 4.40 at the model's 11; raised to 10 by the rule below,
// 2^13 taking the model's 10), 2^16 12 (4.51 against 4.55 at 13), 2^18 16
// (5.15 against 6.21 at 14), 2^22 17 (32.62 against 33.96 at 18). Sizes not
// in it take the model's window at their power of two.
constexpr int MEASURED_WINDOWS[][2] = {{12, 9},  {14, 8},  {16, 12}, {18, 16}, {20, 16},
                                       {21, 16}, {22, 17}, {23, 19}, {24, 20}, {25, 20}};

// The windows of MSMs by size: entry L is the window of sizes whose nearest
// log2 is L (n in [2^(L - 1/2), 2^(L + 1/2))), the measured window where
// MEASURED_WINDOWS or CUZK_MSM_WINDOWS ("22:17,24:20", for experiments:
// entries over the measured ones) has one, else the model's at 2^L; then
// raised to the largest entry below it, so that the window never shrinks
// as n grows (pip_scratch_bound relies on that).
struct window_table {
    static constexpr int TL = 32;
    int c[TL];
    int of(uint64_t n) const {
        if (n <= 1) return c[0];
        int L = 63 - __builtin_clzll(n);
        // Nearest: n >= 2^L * sqrt(2), i.e. n^2 >= 2^(2L + 1), takes L + 1.
        if (L < 31 && (unsigned __int128)n * n >= ((unsigned __int128)1 << (2 * L + 1))) L++;
        return c[L < TL ? L : TL - 1];
    }
};

// The table as the environment sets it now.
inline window_table windows_now() {
    window_table t;
    for (int L = 0; L < window_table::TL; L++) t.c[L] = model_window(1ull << L);
    for (const auto& e : MEASURED_WINDOWS)
        if (e[1] >= 4 && e[0] >= 0 && e[0] < window_table::TL) t.c[e[0]] = e[1];
    if (const char* env = getenv("CUZK_MSM_WINDOWS")) {
        for (const char* p = env; *p;) {
            char* end;
            const long L = strtol(p, &end, 10);
            if (end == p || *end != ':') break;
            const long c = strtol(end + 1, &end, 10);
            if (L >= 0 && L < window_table::TL && c >= 4 && c <= 24) t.c[L] = (int)c;
            p = *end == ',' ? end + 1 : end;
            if (*end && *end != ',') break;
        }
    }
    for (int L = 1; L < window_table::TL; L++)
        if (t.c[L] < t.c[L - 1]) t.c[L] = t.c[L - 1];
    return t;
}

// The window of an n-point MSM (windows_now).
inline int choose_window(uint64_t n) { return windows_now().of(n); }

// Precomputed tables (msm/table.cuh): t copies of the points, row k being
// 2^(c·g·k) times them, so that g = ceil(nw / t) virtual windows of t·n
// entries each do the work of nw: one set of buckets and one bucket sum per
// virtual window instead of per window, and no doublings between the
// windows a copy covers. At most MAX_COPIES copies.
constexpr int MAX_COPIES = 32;

inline int plain_windows(int c) { return 255 / c + 1; }

// Virtual windows of a t-copy table at window c.
inline int copy_windows(int c, int t) { return (plain_windows(c) + t - 1) / t; }

// The copies a table of window c has when t asks for them: t itself, or
// for t = 0 one per window (a single virtual window), capped at MAX_COPIES.
inline int table_copies(int c, int t) {
    const int want = t > 0 ? t : plain_windows(c);
    return want < MAX_COPIES ? want : MAX_COPIES;
}

// The cost model's window for an n-point MSM over a table of t copies (t =
// 0: one per window): the plain model's count, g virtual windows of t·n
// entries and of 1.4 · 2^c for the bucket sums each, over c from 4 to 24.
inline int table_window(uint64_t n, int t) {
    int best = 4;
    double best_cost = 1e300;
    for (int c = 4; c <= 24; c++) {
        const int tc = table_copies(c, t), g = copy_windows(c, tc);
        const double cost = (double)g * ((double)tc * (double)n + 1.4 * (double)(1ull << c));
        if (cost < best_cost) {
            best_cost = cost;
            best = c;
        }
    }
    return best;
}

inline unsigned nblocks(uint64_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

// The sizes of one Pippenger call over n scalars: everything its scratch
// depends on. Computed the same way by the call and by its sizing.
struct pip_shape {
    uint64_t n = 0;      // entries per (virtual) window: the scalars times the copies
    int copies = 1;      // of a precomputed table; 1: the points themselves
    int c = 0, nw = 0;   // nw: (virtual) windows
    uint32_t Bw = 0;     // buckets per window (digits 0..2^(c-1))
    uint64_t wb = 0;     // windows sorted per batch
    uint64_t Mcap = 0;   // sorted entries a batch holds: at least wb * n
    uint32_t chunk = 0;  // sorted entries per accumulating thread
    uint64_t nthr_max = 0;
    int logLs = 0;
    uint32_t nseg = 0, fan = 0;
    uint64_t fsz = 0;    // fixup level entries
    size_t temp_bytes = 0;
#if CUZK_MSM_AFFINE
    uint32_t min_pairs = 0;  // the affine accumulation's (see msm/affine.cuh)
    uint64_t threads = 0;    // its resident threads, each with a list
    uint64_t list_bytes = 0; // the lists of min(threads, nthr_max) threads
#endif
};

inline cudaError_t pip_shape_for(uint64_t n, int window_override, int copies, cudaStream_t st, pip_shape* s) {
    *s = pip_shape{};
    if (copies < 1 || copies > MAX_COPIES) return cudaErrorInvalidValue;
    // A table's window is the one it was built for: the caller's.
    if (copies > 1 && !(window_override >= 4 && window_override <= 24)) return cudaErrorInvalidValue;
    s->copies = copies;
    s->c = window_override >= 4 && window_override <= 24 ? window_override : choose_window(n);
    s->nw = copy_windows(s->c, copies);
    n *= (uint64_t)copies;
    if (n >= (1ull << 31)) return cudaErrorInvalidValue;
    s->n = n;
    s->Bw = (1u << (s->c - 1)) + 1;
    uint64_t wb = BATCH_ENTRIES / n;
    if (wb < 1) wb = 1;
    if (wb > (uint64_t)s->nw) wb = s->nw;
    s->wb = wb;
    // Allocated as min(nw * n, max(n, BATCH_ENTRIES)), which is at least
    // wb * n and grows with n, so that the scratch of a call over m <= n
    // scalars (the split's Pippenger) is bounded by sizes at a few m.
    const uint64_t big = n > BATCH_ENTRIES ? n : BATCH_ENTRIES;
    s->Mcap = (uint64_t)s->nw * n < big ? (uint64_t)s->nw * n : big;
    // Tuning knobs for experiments; the defaults are the measured best.
#if CUZK_MSM_AFFINE
    s->chunk = env_int("CUZK_MSM_AFFINE_CHUNK", affine::DEFAULT_CHUNK, 1, 4096);
#else
    s->chunk = env_int("CUZK_MSM_CHUNK", CHUNK, 1, 4096);
#endif
    const int seg_bits = env_int("CUZK_MSM_SEG_BITS", 5, 0, 12);
    s->nthr_max = (s->Mcap + s->chunk - 1) / s->chunk;
    s->logLs = s->c - 1 < seg_bits ? s->c - 1 : seg_bits;
    s->nseg = 1u << (s->c - 1 - s->logLs);
    s->fan = (uint32_t)env_int("CUZK_MSM_SUM_FANIN", 8, 2, 1024);
    s->fsz = 2 * ((2 * s->nthr_max + FIXUP_FANIN - 1) / FIXUP_FANIN);
    uint32_t* none = nullptr;
    return cub::DeviceRadixSort::SortPairs(nullptr, s->temp_bytes, none, none, none, none, (int)n, 0, s->c, st);
}

// pip_shape_for and what depends on the point type: the affine
// accumulation's threads (as many as the device holds at once, or
// CUZK_MSM_AFFINE_THREADS) and their lists.
template <class F>
inline cudaError_t pip_shape_of(uint64_t n, int window_override, int copies, cudaStream_t st, pip_shape* s) {
    cudaError_t err = pip_shape_for(n, window_override, copies, st, s);
#if CUZK_MSM_AFFINE
    if (err != cudaSuccess) return err;
    s->min_pairs = (uint32_t)env_int("CUZK_MSM_AFFINE_MIN_PAIRS", affine::DEFAULT_MIN_PAIRS, 1, 1 << 20);
    const int forced = env_int("CUZK_MSM_AFFINE_THREADS", 0, 1, 1 << 24);
    if (forced > 0) {
        s->threads = (uint64_t)forced;
    } else {
        int dev = 0, sms = 0, per_sm = 0;
        if ((err = cudaGetDevice(&dev)) != cudaSuccess) return err;
        if ((err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess) return err;
        if ((err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_accumulate_affine<F>, 128, 0)) !=
            cudaSuccess)
            return err;
        s->threads = (uint64_t)(per_sm > 0 ? per_sm : 1) * (uint64_t)sms * 128;
    }
    const uint64_t G = s->threads < s->nthr_max ? s->threads : s->nthr_max;
    s->list_bytes = affine::region_layout(G, s->chunk, sizeof(F)).bytes;
#endif
    return err;
}

// One Pippenger call's device temporaries, carved from the caller's scratch.
template <class F>
struct pip_bufs {
    uint32_t *keys_in = nullptr, *vals_in = nullptr, *keys_out = nullptr, *vals_out = nullptr, *slot_keys = nullptr;
    xyzz_t<F> *buckets = nullptr, *slots = nullptr, *red_a = nullptr, *red_b = nullptr;
    uint32_t *fk_a = nullptr, *fk_b = nullptr;
    xyzz_t<F> *fv_a = nullptr, *fv_b = nullptr;
    int* flags = nullptr;
    void* temp = nullptr;
#if CUZK_MSM_AFFINE
    char* lists = nullptr;  // the affine accumulation's, over keys_in and vals_in
#endif
};

template <class F>
inline cudaError_t pip_carve(const pip_shape& s, arena& a, pip_bufs<F>& b) {
    cudaError_t err;
#define CUZK_TAKE(x) do { if ((err = (x)) != cudaSuccess) return err; } while (0)
#if CUZK_MSM_AFFINE
    // The unsorted digits are dead once sorted, so the accumulation's lists
    // share their block, which is as large as the larger of the two (both
    // grow with n, so the sizing's bound over the split's counts holds).
    {
        const uint64_t half = (s.Mcap * 4 + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
        const uint64_t bytes = 2 * half > s.list_bytes ? 2 * half : s.list_bytes;
        CUZK_TAKE(a.take(&b.lists, bytes));
        if (b.lists) {
            b.keys_in = reinterpret_cast<uint32_t*>(b.lists);
            b.vals_in = reinterpret_cast<uint32_t*>(b.lists + half);
        }
    }
#else
    CUZK_TAKE(a.take(&b.keys_in, s.Mcap));
    CUZK_TAKE(a.take(&b.vals_in, s.Mcap));
#endif
    CUZK_TAKE(a.take(&b.keys_out, s.Mcap));
    CUZK_TAKE(a.take(&b.vals_out, s.Mcap));
    CUZK_TAKE(a.take(&b.slot_keys, 2 * s.nthr_max));
    CUZK_TAKE(a.take(&b.slots, 2 * s.nthr_max));
    CUZK_TAKE(a.take(&b.buckets, (uint64_t)s.nw * s.Bw));
    CUZK_TAKE(a.take(&b.red_a, (uint64_t)s.nw * s.nseg));
    CUZK_TAKE(a.take(&b.red_b, (uint64_t)s.nw * s.nseg));
    CUZK_TAKE(a.take_bytes(&b.temp, s.temp_bytes));
    CUZK_TAKE(a.take(&b.fk_a, s.fsz));
    CUZK_TAKE(a.take(&b.fk_b, s.fsz));
    CUZK_TAKE(a.take(&b.fv_a, s.fsz));
    CUZK_TAKE(a.take(&b.fv_b, s.fsz));
    CUZK_TAKE(a.take(&b.flags, (uint64_t)MAX_FIXUP_LEVELS));
#undef CUZK_TAKE
    return cudaSuccess;
}

// The scratch one Pippenger call over n scalars takes (over a table of
// copies copies, whose window is window_override).
template <class F>
inline cudaError_t pip_scratch(uint64_t n, int window_override, int copies, uint64_t* bytes) {
    *bytes = 0;
    if (n == 0) return cudaSuccess;
    if (n >= (1ull << 31)) return cudaErrorInvalidValue;
    pip_shape s;
    cudaError_t err = pip_shape_of<F>(n, window_override, copies, nullptr, &s);
    if (err != cudaSuccess) return err;
    arena count;
    pip_bufs<F> b;
    if ((err = pip_carve(s, count, b)) != cudaSuccess) return err;
    *bytes = count.used;
    return cudaSuccess;
}

// The most scratch a Pippenger call over any m <= n scalars takes (the
// split's, whose m is known only on the device). For one window size every
// size grows with m, and the window chosen grows with m too, so the maximum
// is at n or at the largest m of each smaller window. (A table's window is
// fixed: its bound is at n.)
template <class F>
inline cudaError_t pip_scratch_bound(uint64_t n, int window_override, int copies, uint64_t* bytes) {
    cudaError_t err = pip_scratch<F>(n, window_override, copies, bytes);
    if (err != cudaSuccess || n == 0 || (window_override >= 4 && window_override <= 24)) return err;
    const window_table wt = windows_now();  // once: a table and the environment per lookup otherwise
    const int cn = wt.of(n);
    for (int c = 4; c < cn; c++) {
        if (wt.of(1) > c) continue;
        uint64_t lo = 1, hi = n;  // the largest m in [1, n] whose window is at most c
        while (lo < hi) {
            const uint64_t mid = lo + (hi - lo + 1) / 2;
            if (wt.of(mid) <= c) lo = mid;
            else hi = mid - 1;
        }
        uint64_t at = 0;
        if ((err = pip_scratch<F>(lo, 0, 1, &at)) != cudaSuccess) return err;
        if (at > *bytes) *bytes = at;
    }
    return cudaSuccess;
}

// Computes sum scalars[j] * points[j] over the n indices j = idx[i] (j = i
// without idx). points: device, gnark affine layout; scalars: device, 32
// bytes each, Montgomery form if mont. With copies > 1, points is a table of
// that many copies of rows points each (msm/table.cuh) built for window
// window_override, and j < rows. Temporaries come from scratch (at least
// pip_scratch bytes). The result is written to *out (host). Blocks until
// done.
template <class F>
inline cudaError_t pippenger(const affine_t<F>* points, const fr_t* scalars, const uint32_t* idx, uint64_t n,
                             bool mont, xyzz_t<F>* out, arena& scratch, cudaStream_t st, int window_override,
                             int copies = 1, uint64_t rows = 0) {
    if (n == 0) {
        *out = xyzz_t<F>::inf();
        return cudaSuccess;
    }
    if (n >= (1ull << 31)) return cudaErrorInvalidValue;
    if (rows == 0) rows = n;
    if ((uint64_t)copies * rows >= (1ull << 31)) return cudaErrorInvalidValue;
    pip_shape s;
    cudaError_t err = pip_shape_of<F>(n, window_override, copies, st, &s);
    if (err != cudaSuccess) return err;
    pip_bufs<F> b;
    if ((err = pip_carve(s, scratch, b)) != cudaSuccess) return err;
    const int c = s.c, nw = s.nw;
    const uint64_t ne = s.n;  // entries per (virtual) window
    const uint32_t Bw = s.Bw, chunk = s.chunk, nseg = s.nseg, fan = s.fan;
    const uint64_t wb = s.wb;
    const int logLs = s.logLs;
    size_t temp_bytes = s.temp_bytes;
    xyzz_t<F>* host_w = nullptr;
    xyzz_t<F>*red_a = b.red_a, *red_b = b.red_b;
    const int mul = sizeof(F) == sizeof(fp_t) ? msm_mul() : msm_g2_mul();
    const int reduce_blocks = env_int("CUZK_MSM_REDUCE_BLOCKS", CUZK_MSM_MIN_BLOCKS == 2 ? 2 : 3, 2, 3);
    phase_timer prof(st);
#define CUZK_TRY(x) do { if ((err = (x)) != cudaSuccess) goto done; } while (0)
    CUZK_TRY(cudaMemsetAsync(b.buckets, 0, (uint64_t)nw * Bw * sizeof(xyzz_t<F>), st));
    prof.mark("alloc");

    for (int w0 = 0; w0 < nw; w0 += (int)wb) {
        const int wc = nw - w0 < (int)wb ? nw - w0 : (int)wb;
        k_digits<<<nblocks(n, 256), 256, 0, st>>>(scalars, idx, n, c, w0, wc, mont ? 1 : 0, b.keys_in, b.vals_in,
                                                  copies, nw, rows);
        CUZK_TRY(cudaGetLastError());
        prof.mark("digits");
        for (int wl = 0; wl < wc; wl++) {
            const uint64_t off = (uint64_t)wl * ne;
            CUZK_TRY(cub::DeviceRadixSort::SortPairs(b.temp, temp_bytes, b.keys_in + off, b.keys_out + off,
                                                     b.vals_in + off, b.vals_out + off, (int)ne, 0, c, st));
        }
        prof.mark("sort");
        const uint64_t M = (uint64_t)wc * ne;
        const uint64_t nthr = (M + chunk - 1) / chunk;
#if CUZK_MSM_AFFINE
        {
            affine::job<F> J;
            J.keys = b.keys_out;
            J.vals = b.vals_out;
            J.M = M;
            J.n = ne;
            J.w0 = (uint32_t)w0;
            J.Bw = Bw;
            J.points = points;
            J.buckets = b.buckets;
            J.slot_keys = b.slot_keys;
            J.slots = b.slots;
            J.G = s.threads < nthr ? s.threads : nthr;
            J.E = chunk;
            J.min_pairs = s.min_pairs;
            const affine::layout l = affine::region_layout(J.G, chunk, sizeof(F));
            J.lkey = reinterpret_cast<uint32_t*>(b.lists + l.key);
            J.lx = reinterpret_cast<F*>(b.lists + l.x);
            J.ly = reinterpret_cast<F*>(b.lists + l.y);
            J.lpre = reinterpret_cast<F*>(b.lists + l.pre);
            k_accumulate_affine<F><<<nblocks(J.G, 128), 128, 0, st>>>(J, nthr);
        }
#else
#define CUZK_ACCUMULATE(MUL)                                                                                   \
    k_accumulate<F, mul_of<F, MUL>()><<<nblocks(nthr, 128), 128, 0, st>>>(b.keys_out, b.vals_out, M, ne, w0, Bw, \
                                                                        points, b.buckets, b.slot_keys, b.slots, \
                                                                        nthr, chunk)
        switch (mul) {
            case 1: CUZK_ACCUMULATE(1); break;
            case 2: CUZK_ACCUMULATE(2); break;
            case 3: CUZK_ACCUMULATE(3); break;
            case 4: CUZK_ACCUMULATE(4); break;
            case 5: CUZK_ACCUMULATE(5); break;
            default: CUZK_ACCUMULATE(0); break;
        }
#undef CUZK_ACCUMULATE
#endif
        CUZK_TRY(cudaGetLastError());
        prof.mark("accumulate");
        CUZK_TRY(cudaMemsetAsync(b.flags, 0, MAX_FIXUP_LEVELS * sizeof(int), st));
        {
            uint64_t m = 2 * nthr;
            const uint32_t* ik = b.slot_keys;
            const xyzz_t<F>* iv = b.slots;
            for (int level = 0; level < MAX_FIXUP_LEVELS; level++) {
                const uint64_t nt = (m + FIXUP_FANIN - 1) / FIXUP_FANIN;
                uint32_t* ok = level % 2 == 0 ? b.fk_a : b.fk_b;
                xyzz_t<F>* ov = level % 2 == 0 ? b.fv_a : b.fv_b;
                k_fixup_level<F><<<nblocks(nt, 128), 128, 0, st>>>(ik, iv, m, FIXUP_FANIN, ok, ov, b.buckets,
                                                                level == 0 ? nullptr : b.flags + level - 1,
                                                                b.flags + level);
                CUZK_TRY(cudaGetLastError());
                if (nt == 1) break;
                m = 2 * nt;
                ik = ok;
                iv = ov;
            }
        }
        prof.mark("fixup");
    }

    // red_b holds the segments' running sums until the scale kernel has
    // used them; the tree of sums below reuses it.
#define CUZK_BUCKET_REDUCE(MUL, B)                                                                          \
    k_bucket_reduce<F, mul_of<F, MUL>(), reduce_blocks_of<F, B>()>                                           \
        <<<nblocks((uint64_t)nw * nseg, 128), 128, 0, st>>>(b.buckets, Bw, nw, logLs, nseg, red_a, red_b)
    if (reduce_blocks == 2) {
        switch (mul) {
            case 1: CUZK_BUCKET_REDUCE(1, 2); break;
            case 2: CUZK_BUCKET_REDUCE(2, 2); break;
            case 3: CUZK_BUCKET_REDUCE(3, 2); break;
            case 4: CUZK_BUCKET_REDUCE(4, 2); break;
            case 5: CUZK_BUCKET_REDUCE(5, 2); break;
            default: CUZK_BUCKET_REDUCE(0, 2); break;
        }
    } else {
        switch (mul) {
            case 1: CUZK_BUCKET_REDUCE(1, 3); break;
            case 2: CUZK_BUCKET_REDUCE(2, 3); break;
            case 3: CUZK_BUCKET_REDUCE(3, 3); break;
            case 4: CUZK_BUCKET_REDUCE(4, 3); break;
            case 5: CUZK_BUCKET_REDUCE(5, 3); break;
            default: CUZK_BUCKET_REDUCE(0, 3); break;
        }
    }
#undef CUZK_BUCKET_REDUCE
    CUZK_TRY(cudaGetLastError());
    k_segment_scale<F><<<nblocks((uint64_t)nw * nseg, 128), 128, 0, st>>>(red_a, red_b, nw, logLs, nseg);
    CUZK_TRY(cudaGetLastError());
    prof.mark("reduce");
    {
        uint32_t cnt = nseg;
        while (cnt > 1) {
            const uint32_t outcnt = (cnt + fan - 1) / fan;
            k_sum<F><<<nblocks((uint64_t)nw * outcnt, 128), 128, 0, st>>>(red_a, cnt, fan, red_b, outcnt, nw);
            CUZK_TRY(cudaGetLastError());
            xyzz_t<F>* tmp = red_a;
            red_a = red_b;
            red_b = tmp;
            cnt = outcnt;
        }
    }
    prof.mark("sum");
    host_w = new xyzz_t<F>[nw];
    CUZK_TRY(cudaMemcpyAsync(host_w, red_a, nw * sizeof(xyzz_t<F>), cudaMemcpyDeviceToHost, st));
    CUZK_TRY(cudaStreamSynchronize(st));
    {
        xyzz_t<F> acc = host_w[nw - 1];
        for (int w = nw - 2; w >= 0; w--) {
            for (int i = 0; i < c; i++) acc = acc.dbl();
            acc.add(host_w[w]);
        }
        *out = acc;
    }
    prof.mark("host");
    prof.report(sizeof(F) == sizeof(fp_t) ? "msm" : "msm_g2", n, c);
done:
    // The scratch is the caller's: on an error, work queued on it may still
    // run, so the stream is drained before the caller may reuse it.
    if (err != cudaSuccess) cudaStreamSynchronize(st);
    delete[] host_w;
    return err;
#undef CUZK_TRY
}

// The split of 0/1 scalars. In the witnesses of bit-heavy circuits most
// scalars are 0 or 1, and Pippenger spends a sorted entry per window on each
// of them. Classes are taken after reduction mod r (canonical_scalar), so a
// canonical r + 1 is a one and r a zero, as the digits would see them.
enum : uint8_t { SCALAR_ZERO = 0, SCALAR_ONE = 1, SCALAR_OTHER = 2 };

__global__ void k_classify(const fr_t* __restrict__ scalars, uint64_t n, int mont, uint8_t* cls) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fr_t s = canonical_scalar(scalars[i], mont);
    uint32_t hi = 0;
#pragma unroll
    for (int k = 1; k < fr_t::N; k++) hi |= s.v[k];
    cls[i] = hi != 0 || s.v[0] > 1 ? SCALAR_OTHER : (uint8_t)s.v[0];
}

// Selects the indices j whose class is want (the partition's input is the
// sequence of indices 0..n-1).
struct class_is {
    const uint8_t* cls;
    uint8_t want;
    __host__ __device__ __forceinline__ bool operator()(const uint32_t& j) const { return cls[j] == want; }
};

// One thread per chunk of k point indices: the chunk's sum by mixed
// additions, in out[t]. (The tree of k_sum adds the chunks up.)
template <class F>
__global__ void CUZK_MSM_BOUNDS k_sum_indexed(const affine_t<F>* __restrict__ points, const uint32_t* __restrict__ idx,
                                              uint64_t k, uint32_t chunk, xyzz_t<F>* out, uint64_t nthr) {
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nthr) return;
    const uint64_t p0 = t * chunk;
    const uint64_t p1 = p0 + chunk < k ? p0 + chunk : k;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (uint64_t p = p0; p < p1; p++) {
        if (p + 1 < p1) prefetch_point(points + idx[p + 1]);
        const affine_t<F> P = load_point(points + idx[p]);
        if (!P.is_inf()) acc.add_affine(P.x, P.y);
    }
    out[t] = acc;
}

constexpr uint64_t ONES_THREADS = 1u << 16;  // threads the sum of the ones aims for

// Indices per thread in the sum of k points: enough threads to fill the
// device, at least 8 additions each before the tree takes over.
inline uint32_t ones_chunk(uint64_t k) {
    const int forced = env_int("CUZK_MSM_ONES_CHUNK", 0, 1, 1 << 20);
    if (forced > 0) return (uint32_t)forced;
    const uint64_t c = (k + ONES_THREADS - 1) / ONES_THREADS;
    return c < 8 ? 8 : (uint32_t)c;
}

// The most partial sums the ones of any k <= n scalars take: ceil(k/8) while
// the chunk is 8 (k <= 8 * ONES_THREADS), at most ONES_THREADS after.
inline uint64_t ones_parts_bound(uint64_t n) {
    const int forced = env_int("CUZK_MSM_ONES_CHUNK", 0, 1, 1 << 20);
    if (forced > 0) return (n + forced - 1) / forced;
    const uint64_t c = (n + 7) / 8;
    return c < ONES_THREADS ? c : ONES_THREADS;
}

// The split's own temporaries, carved before its Pippenger's: the classes,
// the index lists, the counts, CUB's partition storage and the tree of the
// ones' partial sums (sized for the most ones there can be).
template <class F>
struct split_bufs {
    uint8_t* cls = nullptr;
    uint32_t* idx = nullptr;
    int* d_counts = nullptr;
    void* temp = nullptr;
    size_t temp_bytes = 0;
    xyzz_t<F> *part_a = nullptr, *part_b = nullptr;
};

template <class F>
inline cudaError_t split_carve(uint64_t n, arena& a, split_bufs<F>& b, cudaStream_t st) {
    cudaError_t err;
#define CUZK_TAKE(x) do { if ((err = (x)) != cudaSuccess) return err; } while (0)
    CUZK_TAKE(a.take(&b.cls, n));
    CUZK_TAKE(a.take(&b.idx, n));
    CUZK_TAKE(a.take(&b.d_counts, 2));
    {
        const thrust::counting_iterator<uint32_t> in(0);
        const auto ones_out = thrust::make_reverse_iterator(b.idx + n);
        const auto zeros_out = thrust::make_discard_iterator();
        const class_is is_other{b.cls, SCALAR_OTHER}, is_one{b.cls, SCALAR_ONE};
        CUZK_TAKE(cub::DevicePartition::If(nullptr, b.temp_bytes, in, b.idx, ones_out, zeros_out, b.d_counts, (int)n,
                                           is_other, is_one, st));
    }
    CUZK_TAKE(a.take_bytes(&b.temp, b.temp_bytes));
    const uint64_t parts = ones_parts_bound(n);
    const uint32_t fan = (uint32_t)env_int("CUZK_MSM_SUM_FANIN", 8, 2, 1024);
    CUZK_TAKE(a.take(&b.part_a, parts));
    CUZK_TAKE(a.take(&b.part_b, (parts + fan - 1) / fan));
#undef CUZK_TAKE
    return cudaSuccess;
}

// pippenger over the scalars that are neither 0 nor 1, plus the plain sum of
// the points whose scalar is 1; the zeros are dropped. counts (host):
// zero, one and other scalars. Temporaries come from scratch (at least
// scratch_bytes(n, split) bytes). Blocks until done.
//
// One buffer of n indices holds both lists: the three-way partition of
// 0..n-1 writes the others, in order, from its front and the ones from its
// back (m + k <= n, so they never meet), and discards the zeros. The host
// needs m and k to size the grids, so the stream is synchronised once after
// the partition.
template <class F>
inline cudaError_t run_split(const affine_t<F>* points, const fr_t* scalars, uint64_t n, bool mont, xyzz_t<F>* out,
                             uint64_t counts[3], arena& scratch, cudaStream_t st, int window_override,
                             int copies = 1) {
    *out = xyzz_t<F>::inf();
    counts[0] = counts[1] = counts[2] = 0;
    if (n == 0) return cudaSuccess;
    if (n >= (1ull << 31)) return cudaErrorInvalidValue;
    split_bufs<F> b;
    int h_counts[2] = {0, 0};
    uint64_t m = 0, k = 0;
    xyzz_t<F> ones = xyzz_t<F>::inf(), rest = xyzz_t<F>::inf();
    xyzz_t<F>*part_a = nullptr, *part_b = nullptr;
    const uint32_t fan = (uint32_t)env_int("CUZK_MSM_SUM_FANIN", 8, 2, 1024);
    cudaError_t err = split_carve(n, scratch, b, st);
    if (err != cudaSuccess) return err;
    part_a = b.part_a;
    part_b = b.part_b;
    phase_timer prof(st);
#define CUZK_TRY(x) do { if ((err = (x)) != cudaSuccess) goto done; } while (0)
    {
        const thrust::counting_iterator<uint32_t> in(0);
        const auto ones_out = thrust::make_reverse_iterator(b.idx + n);
        const auto zeros_out = thrust::make_discard_iterator();
        const class_is is_other{b.cls, SCALAR_OTHER}, is_one{b.cls, SCALAR_ONE};
        k_classify<<<nblocks(n, 256), 256, 0, st>>>(scalars, n, mont ? 1 : 0, b.cls);
        CUZK_TRY(cudaGetLastError());
        CUZK_TRY(cub::DevicePartition::If(b.temp, b.temp_bytes, in, b.idx, ones_out, zeros_out, b.d_counts, (int)n,
                                          is_other, is_one, st));
    }
    CUZK_TRY(cudaMemcpyAsync(h_counts, b.d_counts, sizeof(h_counts), cudaMemcpyDeviceToHost, st));
    CUZK_TRY(cudaStreamSynchronize(st));
    m = (uint64_t)h_counts[0];
    k = (uint64_t)h_counts[1];
    if (m + k > n) {  // the partition broke its contract
        err = cudaErrorUnknown;
        goto done;
    }
    counts[0] = n - m - k;
    counts[1] = k;
    counts[2] = m;
    prof.mark("classify");
    if (k > 0) {
        const uint32_t chunk = ones_chunk(k);
        uint64_t cnt = (k + chunk - 1) / chunk;
        if (cnt > ones_parts_bound(n)) {  // the bound the scratch was sized by is wrong
            err = cudaErrorUnknown;
            goto done;
        }
        k_sum_indexed<F><<<nblocks(cnt, 128), 128, 0, st>>>(points, b.idx + (n - k), k, chunk, part_a, cnt);
        CUZK_TRY(cudaGetLastError());
        while (cnt > 1) {
            const uint64_t outcnt = (cnt + fan - 1) / fan;
            k_sum<F><<<nblocks(outcnt, 128), 128, 0, st>>>(part_a, (uint32_t)cnt, fan, part_b, (uint32_t)outcnt, 1);
            CUZK_TRY(cudaGetLastError());
            xyzz_t<F>* tmp = part_a;
            part_a = part_b;
            part_b = tmp;
            cnt = outcnt;
        }
    }
    prof.mark("ones");
    // Over a table the ones above read its first copy, the points themselves.
    CUZK_TRY(pippenger(points, scalars, b.idx, m, mont, &rest, scratch, st, window_override, copies, n));
    prof.mark("others");
    // Copied after pippenger's work is queued: a copy to pageable memory
    // returns only when done, which would hold its launches back.
    if (k > 0) CUZK_TRY(cudaMemcpyAsync(&ones, part_a, sizeof(ones), cudaMemcpyDeviceToHost, st));
    CUZK_TRY(cudaStreamSynchronize(st));
    rest.add(ones);
    *out = rest;
    prof.report(sizeof(F) == sizeof(fp_t) ? "msm_split" : "msm_g2_split", n, 0);
done:
    if (err != cudaSuccess) cudaStreamSynchronize(st);  // nothing may still run on the caller's scratch
    return err;
#undef CUZK_TRY
}

// The scratch an MSM of n points takes (run's scratch argument): with split,
// the split's own temporaries and the most its Pippenger can take. copies:
// of the table the MSM reads (1: none).
template <class F>
inline cudaError_t scratch_bytes(uint64_t n, int window_override, bool split, uint64_t* bytes, int copies = 1) {
    *bytes = 0;
    if (n >= (1ull << 31)) return cudaErrorInvalidValue;
    if (!split) return pip_scratch<F>(n, window_override, copies, bytes);
    if (n == 0) return cudaSuccess;
    arena count;
    split_bufs<F> b;
    cudaError_t err = split_carve(n, count, b, nullptr);
    if (err != cudaSuccess) return err;
    uint64_t pip = 0;
    if ((err = pip_scratch_bound<F>(n, window_override, copies, &pip)) != cudaSuccess) return err;
    // pippenger's carving starts where the split's ends, aligned.
    *bytes = ((count.used + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1)) + pip;
    return cudaSuccess;
}

// Computes sum scalars[i] * points[i] for i < n. points: device, gnark affine
// layout; scalars: device, 32 bytes each, Montgomery form if mont. The result
// is written to *out (host) in Jacobian coordinates. With split, zero
// scalars are dropped and one scalars summed apart (run_split). counts
// (host, optional): zero, one and other scalars; without split every scalar
// counts as other. The temporaries come from the scratch buffer (device,
// scratch_bytes large; see scratch_bytes). With copies > 1, points is a
// table of that many copies of the n points (msm/table.cuh), built for
// window window_override. Blocks until done.
template <class F>
inline cudaError_t run(const affine_t<F>* points, const fr_t* scalars, uint64_t n, bool mont, jacobian_t<F>* out,
                       void* scratch, uint64_t scratch_len, cudaStream_t st, int window_override = 0,
                       bool split = false, uint64_t* counts = nullptr, int copies = 1) {
    if (n >= (1ull << 31)) return cudaErrorInvalidValue;
    if (n > 0 && !scratch) return cudaErrorInvalidValue;
    arena a(scratch, scratch_len);
    xyzz_t<F> r;
    uint64_t c[3] = {0, 0, n};
    const cudaError_t err =
        split ? run_split(points, scalars, n, mont, &r, c, a, st, window_override, copies)
              : pippenger<F>(points, scalars, nullptr, n, mont, &r, a, st, window_override, copies, n);
    if (err != cudaSuccess) return err;
    *out = r.to_jacobian();
    if (counts)
        for (int i = 0; i < 3; i++) counts[i] = c[i];
    return cudaSuccess;
}

}  // namespace msm
}  // namespace cuzk
