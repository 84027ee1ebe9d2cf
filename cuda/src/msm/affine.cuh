// Bucket accumulation in affine coordinates with batched inversions, the
// alternative to k_accumulate's XYZZ additions built with CUZK_MSM_AFFINE=1.
// Written once for the device kernel (k_accumulate_affine in pippenger.cuh)
// and the host model (cuda/testdata/affinemodel.cc), which runs this very
// code over host arrays.
//
// An affine addition P1 + P2 costs lambda = (y2 - y1)/(x2 - x1), x3 = lambda^2
// - x1 - x2, y3 = lambda (x1 - x3) - y1: with the inversion shared by a batch
// (Montgomery's trick: 3 products a denominator), 6 products an addition
// against the 10 of the mixed XYZZ addition, plus a share of the inversion
// (ff/inverse.cuh, about 100 products each).
//
// The work is k_accumulate's: the sorted entries cut into chunks of E, each
// bucket a run, runs inside a chunk written to their bucket, the runs cut by
// the chunk's two ends left in its two slots for the fixup levels. A thread
// takes one chunk at a time and halves its runs in rounds: a run of L points
// becomes ceil(L/2) (pairs from the run's end, the odd point out at its
// start), every addition of the round through one inversion:
//
//   backward: walk the pairs from the last, multiplying up the denominators
//             (x2 - x1, or 2y1 for a doubling) and storing the suffix
//             products in pre[];
//   invert the product once;
//   forward:  walk the pairs from the first: denominator^-1 = inv * pre[],
//             inv *= denominator, then the sum; write it at the next slot of
//             the thread's list (in place: the write never passes the read).
//
// A run that is down to one point is done: it goes to its bucket or slot at
// once and leaves the list, so each round works only on unfinished runs. The
// first round reads the sorted entries and gathers the points; the later ones
// read the thread's list. Rounds stop when the next would have fewer than
// min_pairs additions (an inversion then costs more than it saves); what is
// left is added up in XYZZ as k_accumulate does. A chunk with fewer pairs than
// that from the start is accumulated in XYZZ entirely.
//
// Pairs that need no denominator take no part in the batch: a point at
// infinity (the other point is the sum), P + (-P) (infinity), and a point
// with y = 0 doubled (infinity; not on the curves here, whose groups have odd
// order). Equal points are doubled with lambda = 3 x1^2 / (2 y1). Entries of
// digit 0 (bucket 0, never summed) are skipped as k_accumulate skips them.
//
// Memory: each thread has a list of list_cap(E) = 2E/3 points with their keys
// (a round writes at most ceil(L/2) <= 2L/3 points for a run of L >= 2, runs
// of one leave at once) and pre_cap(E) = E/2 suffix products, in planes
// interleaved by thread (element j of thread s at j * G + s) so that a warp's
// accesses are adjacent. There are G of them, the threads the device holds at
// once, and the kernel loops each thread over chunks s, s + G, ...
#pragma once
#include "../ff/bls12_381.cuh"
#include "../ff/fp2.cuh"
#include "../ff/inverse.cuh"
#include "../ec/xyzz.cuh"

// Hooks for the host model's checks (every bucket written at most once, every
// slot exactly once, no list or pre[] index out of its capacity) and counts
// (rounds, the kinds of pairs, XYZZ finishes); nothing on the device.
#ifndef CUZK_AFFINE_CHECK
#define CUZK_AFFINE_CHECK(cond, what)
#endif
#ifndef CUZK_AFFINE_WROTE_BUCKET
#define CUZK_AFFINE_WROTE_BUCKET(k)
#endif
#ifndef CUZK_AFFINE_WROTE_SLOT
#define CUZK_AFFINE_WROTE_SLOT(i)
#endif
#ifndef CUZK_AFFINE_ROUND
#define CUZK_AFFINE_ROUND(batched)
#endif
#ifndef CUZK_AFFINE_PAIR
#define CUZK_AFFINE_PAIR(kind)
#endif
#ifndef CUZK_AFFINE_FINISH
#define CUZK_AFFINE_FINISH(len)
#endif

namespace cuzk {
namespace msm {
namespace affine {

constexpr uint32_t DEFAULT_CHUNK = 256;     // sorted entries a thread takes at once
// A round pays when its additions save more than its inversion costs: about
// 1300 instructions (and 4 products' IMADs) an addition against 37 000 (34
// products' IMADs) an inversion, so between 8 and 28 pairs.
constexpr uint32_t DEFAULT_MIN_PAIRS = 16;  // fewer additions than this: no round, XYZZ
constexpr int MAX_ROUNDS = 40;              // more than log2 of any chunk

CUZK_HD constexpr uint32_t list_cap(uint32_t E) { return E < 3 ? 1 : 2 * E / 3; }
CUZK_HD constexpr uint32_t pre_cap(uint32_t E) { return E < 2 ? 1 : E / 2; }

// Byte offsets of the planes of G threads' lists in one buffer.
struct layout {
    uint64_t key = 0, x = 0, y = 0, pre = 0, bytes = 0;
};

inline layout region_layout(uint64_t G, uint32_t E, uint64_t fbytes) {
    const auto al = [](uint64_t b) { return (b + 255) & ~(uint64_t)255; };
    const uint64_t n = G * list_cap(E);
    layout l;
    l.x = al(n * 4);
    l.y = l.x + al(n * fbytes);
    l.pre = l.y + al(n * fbytes);
    l.bytes = l.pre + al(G * pre_cap(E) * fbytes);
    return l;
}

// One accumulation: the sorted entries (keys are digits, window w0 + p / n
// at entry p, bucket (w0 + p / n) * Bw + digit), the points, the outputs and
// G threads' lists.
template <class F>
struct job {
    const uint32_t* keys;
    const uint32_t* vals;  // point index | sign << 31
    uint64_t M, n;
    uint32_t w0, Bw;
    const affine_t<F>* points;
    xyzz_t<F>* buckets;
    uint32_t* slot_keys;
    xyzz_t<F>* slots;
    uint32_t* lkey;
    F *lx, *ly, *lpre;
    uint64_t G;
    uint32_t E, min_pairs;

    CUZK_HD uint32_t key_at(uint64_t p) const { return (uint32_t)((w0 + p / n) * Bw) + keys[p]; }
};

#if defined(__CUDA_ARCH__)
__device__ __forceinline__ void load4(fp_t& x, const uint4* q) {
#pragma unroll
    for (int i = 0; i < 3; i++) {
        const uint4 a = q[i];
        x.v[4 * i] = a.x;
        x.v[4 * i + 1] = a.y;
        x.v[4 * i + 2] = a.z;
        x.v[4 * i + 3] = a.w;
    }
}
__device__ __forceinline__ void load4(fp2_t& x, const uint4* q) {
    load4(x.c0, q);
    load4(x.c1, q + 3);
}
template <class F>
__device__ __forceinline__ F load_field(const F* p) {
    F x;
    load4(x, reinterpret_cast<const uint4*>(p));
    return x;
}
__device__ __forceinline__ void prefetch_bytes(const void* p, int bytes) {
    const char* q = static_cast<const char*>(p);
    asm volatile("prefetch.global.L2 [%0];" ::"l"(q));
    if (bytes > 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(q + 128));
    asm volatile("prefetch.global.L2 [%0];" ::"l"(q + bytes - 1));
}
#else
template <class F>
inline F load_field(const F* p) {
    return *p;
}
inline void prefetch_bytes(const void*, int) {}
#endif

// A round's input: the chunk's sorted entries (the first round, and a chunk
// added up in XYZZ outright: index i is entry p0 + i, its point gathered,
// negated for a negative digit), or thread s's list (the later rounds), which
// is also every round's output. One type for both, so that the kernel has one
// copy of the rounds: lanes of a warp in different rounds still run the same
// additions together.
template <class F>
struct source {
    const job<F>& J;
    uint64_t p0, s;
    bool entries = true;
    // Entry keys without a division: with windows of n >= E entries a chunk
    // meets at most two, [0, split) in the one whose first bucket is base and
    // the rest in the next.
    uint32_t base;
    uint64_t split;

    CUZK_HD source(const job<F>& j, uint64_t p0_, uint64_t s_) : J(j), p0(p0_), s(s_) {
        const uint64_t wl = p0 / J.n;
        base = (uint32_t)((J.w0 + wl) * J.Bw);
        split = (wl + 1) * J.n - p0;
    }
    CUZK_HD uint64_t at(uint64_t j) const { return j * J.G + s; }
    CUZK_HD uint32_t key(uint64_t i) const {
        if (!entries) return J.lkey[at(i)];
        if (J.n < J.E) return J.key_at(p0 + i);
        return (i < split ? base : base + J.Bw) + J.keys[p0 + i];
    }
    CUZK_HD bool skip(uint64_t i) const { return entries && J.keys[p0 + i] == 0; }
    CUZK_HD const affine_t<F>* gathered(uint64_t i) const { return J.points + (J.vals[p0 + i] & 0x7fffffffu); }
    CUZK_HD F x(uint64_t i) const { return entries ? load_field(&gathered(i)->x) : J.lx[at(i)]; }
    CUZK_HD F y(uint64_t i) const {
        if (!entries) return J.ly[at(i)];
        const F y = load_field(&gathered(i)->y);
        return (J.vals[p0 + i] >> 31) ? y.neg() : y;
    }
    CUZK_HD affine_t<F> point(uint64_t i) const {
        affine_t<F> P;
        P.x = x(i);
        P.y = y(i);
        return P;
    }
    // The gathered points are random reads: started towards L2 ahead of use
    // (past the chunk's end too: harmless while inside the entries).
    CUZK_HD void prefetch_x(uint64_t i) const {
        if (entries && p0 + i < J.M) prefetch_bytes(&gathered(i)->x, (int)sizeof(F));
    }
    CUZK_HD void prefetch(uint64_t i) const {
        if (entries && p0 + i < J.M) prefetch_bytes(gathered(i), (int)sizeof(affine_t<F>));
    }
    CUZK_HD void write(uint64_t o, uint32_t k, const affine_t<F>& P) const {
        CUZK_AFFINE_CHECK(o < list_cap(J.E), "list index past its capacity");
        J.lkey[at(o)] = k;
        J.lx[at(o)] = P.x;
        J.ly[at(o)] = P.y;
    }
    CUZK_HD F& pre(uint32_t q) const {
        CUZK_AFFINE_CHECK(q < pre_cap(J.E), "pre[] index past its capacity");
        return J.lpre[at(q)];
    }
};

// Where a finished run goes: k_accumulate's rule. The run cut by the chunk's
// start goes to slot 2t, the one cut by its end to slot 2t + 1 (a chunk that
// is one run cut at either end uses slot 2t), every other run to its bucket,
// whose only writer this chunk is.
template <class F>
struct emitter {
    const job<F>& J;
    uint64_t t;
    uint32_t first_key, last_key;
    bool head_open, tail_open, head_done = false, tail_done = false;

    CUZK_HD emitter(const job<F>& j, uint64_t t_, uint64_t p0, uint64_t p1) : J(j), t(t_) {
        first_key = J.key_at(p0);
        last_key = J.key_at(p1 - 1);
        head_open = p0 > 0 && J.key_at(p0 - 1) == first_key;
        tail_open = p1 < J.M && J.key_at(p1) == last_key;
    }
    CUZK_HD void emit(uint32_t k, const xyzz_t<F>& v) {
        if (k == first_key && (head_open || (k == last_key && tail_open))) {
            CUZK_AFFINE_CHECK(!head_done, "head slot written twice");
            J.slots[2 * t] = v;
            CUZK_AFFINE_WROTE_SLOT(2 * t);
            head_done = true;
        } else if (k == last_key && tail_open) {
            CUZK_AFFINE_CHECK(!tail_done, "tail slot written twice");
            J.slots[2 * t + 1] = v;
            CUZK_AFFINE_WROTE_SLOT(2 * t + 1);
            tail_done = true;
        } else {
            J.buckets[k] = v;
            CUZK_AFFINE_WROTE_BUCKET(k);
        }
    }
    // Two slots per chunk, always with keys (infinity where nothing is open),
    // so that the slot array stays sorted with no gaps.
    CUZK_HD void close() {
        J.slot_keys[2 * t] = first_key;
        J.slot_keys[2 * t + 1] = last_key;
        if (!head_done) {
            J.slots[2 * t] = xyzz_t<F>::inf();
            CUZK_AFFINE_WROTE_SLOT(2 * t);
        }
        if (!tail_done) {
            J.slots[2 * t + 1] = xyzz_t<F>::inf();
            CUZK_AFFINE_WROTE_SLOT(2 * t + 1);
        }
    }
};

enum : int { PAIR_ADD, PAIR_DBL, PAIR_FIRST, PAIR_SECOND, PAIR_INF };

// How P1 + P2 is formed: PAIR_ADD and PAIR_DBL need a denominator (x2 - x1,
// 2 y1), the others are P1, P2 or infinity outright.
template <class F>
CUZK_HD int classify(const F& x1, const F& y1, const F& x2, const F& y2) {
    if (x1.is_zero() && y1.is_zero()) return PAIR_SECOND;
    if (x2.is_zero() && y2.is_zero()) return PAIR_FIRST;
    if (x1 != x2) return PAIR_ADD;
    if (y1 == y2 && !y1.is_zero()) return PAIR_DBL;
    return PAIR_INF;
}

// The backward walk's view of the pair (a, a + 1): its denominator, if it
// needs one. The x coordinates decide nearly always; y is read only when an x
// is zero or the two are equal.
template <class F>
CUZK_HD bool denominator(const source<F>& src, uint64_t a, F& D) {
    const F x1 = src.x(a), x2 = src.x(a + 1);
    if (x1 != x2 && !x1.is_zero() && !x2.is_zero()) {
        D = x2 - x1;
        return true;
    }
    const F y1 = src.y(a), y2 = src.y(a + 1);
    switch (classify(x1, y1, x2, y2)) {
    case PAIR_ADD:
        D = x2 - x1;
        return true;
    case PAIR_DBL:
        D = y1.dbl();
        return true;
    }
    return false;
}

// The forward walk's sum of the pair (a, a + 1). inv is the inverse of the
// product of the denominators of this pair and every later one; pre(Q - 1 -
// j) is the product of the later ones' (j: the batched pairs before this one).
// The first point is read again for y3 rather than held across the products.
template <class F>
CUZK_HD affine_t<F> pair_sum(const source<F>& src, uint64_t a, uint32_t Q, uint32_t& j, F& inv) {
    F D, N, S;
    {
        const affine_t<F> A = src.point(a), B = src.point(a + 1);
        const int kind = classify(A.x, A.y, B.x, B.y);
        CUZK_AFFINE_PAIR(kind);
        if (kind == PAIR_FIRST) return A;
        if (kind == PAIR_SECOND) return B;
        if (kind == PAIR_INF) {
            affine_t<F> O;
            O.x = F::zero();
            O.y = F::zero();
            return O;
        }
        if (kind == PAIR_ADD) {
            D = B.x - A.x;
            N = B.y - A.y;
            S = A.x + B.x;
        } else {
            D = A.y.dbl();
            const F xx = A.x.sqr();
            N = xx + xx.dbl();
            S = A.x.dbl();
        }
    }
    CUZK_AFFINE_CHECK(j < Q, "more batched pairs forward than backward");
    const F dinv = inv * src.pre(Q - 1 - j);
    inv = inv * D;
    j++;
    const F lambda = N * dinv;
    affine_t<F> R;
    R.x = lambda.sqr() - S;
    R.y = lambda * (src.x(a) - R.x) - src.y(a);
    return R;
}

// Sum of pairs in src's first len points: the additions its next round makes.
template <class F>
CUZK_HD uint64_t count_pairs(source<F>& src, uint64_t len) {
    uint64_t pairs = 0, i = 0;
    while (i < len) {
        const uint32_t k = src.key(i);
        const bool sk = src.skip(i);
        uint64_t L = 1;
        while (i + L < len && src.key(i + L) == k) L++;
        if (!sk) pairs += L / 2;
        i += L;
    }
    return pairs;
}

// One round: src's len points (the chunk's entries, or the list's runs of two
// or more) to the thread's list, whose new length it returns; *pairs_next:
// the additions the next round would make.
template <class F>
CUZK_HD uint64_t halve(source<F>& src, uint64_t len, emitter<F>& em, uint64_t* pairs_next) {
    F acc = F::one();
    uint32_t q = 0;
    uint64_t i = len;
    while (i > 0) {
        const uint32_t k = src.key(i - 1);
        if (src.skip(i - 1)) {
            do i--;
            while (i > 0 && src.key(i - 1) == k);
            continue;
        }
        while (i > 0 && src.key(i - 1) == k) {
            if (i >= 2 && src.key(i - 2) == k) {
                if (i >= 4) {
                    src.prefetch_x(i - 4);
                    src.prefetch_x(i - 3);
                }
                F D;
                if (denominator(src, i - 2, D)) {
                    src.pre(q++) = acc;
                    acc = acc * D;
                }
                i -= 2;
            } else {
                i--;  // the run's odd point out, at its start
            }
        }
    }
    const uint32_t Q = q;
    CUZK_AFFINE_ROUND(Q);
    F inv = Q > 0 ? inverse(acc) : F::one();
    uint32_t j = 0;
    uint64_t o = 0, pn = 0;
    i = 0;
    while (i < len) {
        const uint32_t k = src.key(i);
        uint64_t L = 1;
        while (i + L < len && src.key(i + L) == k) L++;
        if (L == 1 || src.skip(i)) {
            xyzz_t<F> v = xyzz_t<F>::inf();
            if (!src.skip(i)) v = xyzz_t<F>::from_affine(src.point(i));
            em.emit(k, v);
            i += L;
            continue;
        }
        const bool done = L == 2;  // the run's one pair: its sum is the bucket's
        const uint64_t o0 = o;
        if (L & 1) {
            src.write(o++, k, src.point(i));
            i++;
            L--;
        }
        for (; L > 0; L -= 2, i += 2) {
            src.prefetch(i + 2);
            src.prefetch(i + 3);
            const affine_t<F> R = pair_sum(src, i, Q, j, inv);
            if (done)
                em.emit(k, xyzz_t<F>::from_affine(R));
            else
                src.write(o++, k, R);
        }
        pn += (o - o0) / 2;
    }
    CUZK_AFFINE_CHECK(j == Q, "fewer batched pairs forward than backward");
    *pairs_next = pn;
    return o;
}

// XYZZ sums of src's runs, as k_accumulate forms them.
template <class F>
CUZK_HD void finish(source<F>& src, uint64_t len, emitter<F>& em) {
    CUZK_AFFINE_FINISH(len);
    uint64_t i = 0;
    while (i < len) {
        const uint32_t k = src.key(i);
        const bool sk = src.skip(i);
        xyzz_t<F> acc = xyzz_t<F>::inf();
        do {
            if (!sk) {
                src.prefetch(i + 1);
                const affine_t<F> P = src.point(i);
                if (!P.is_inf()) acc.add_affine(P.x, P.y);
            }
            i++;
        } while (i < len && src.key(i) == k);
        em.emit(k, acc);
    }
}

// Chunk t (entries [t E, t E + E) clipped to M) by thread s: rounds while
// they pay, then XYZZ for what is left. One call site of each, whatever the
// source, for one copy of each in the kernel.
template <class F>
CUZK_HD void chunk(const job<F>& J, uint64_t t, uint64_t s) {
    const uint64_t p0 = t * J.E;
    const uint64_t p1 = p0 + J.E < J.M ? p0 + J.E : J.M;
    source<F> src(J, p0, s);
    emitter<F> em(J, t, p0, p1);
    uint64_t len = p1 - p0, pairs = count_pairs(src, len);
    for (int r = 0; len > 0 && pairs >= J.min_pairs && r < MAX_ROUNDS; r++) {
        len = halve(src, len, em, &pairs);
        src.entries = false;
    }
    finish(src, len, em);
    em.close();
}

}  // namespace affine
}  // namespace msm
}  // namespace cuzk
