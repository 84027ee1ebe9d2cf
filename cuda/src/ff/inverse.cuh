// Field inversion for mont_t by Bernstein and Yang's divsteps ("Fast
// constant-time gcd computation and modular inversion", 2019), in batches of
// 30 on the low bits, so that the full-width updates are 32 x 32 -> 64-bit
// multiply-adds on 30-bit limbs. About a quarter of what Fermat's a^(p-2)
// costs in Fp products; the batched-affine MSM accumulation (msm/affine.cuh)
// spends one per thread and round.
//
// divstep(delta, f, g), f odd:
//   delta > 0 and g odd: (1 - delta, g, (g - f) / 2)
//   g odd otherwise:     (1 + delta, f, (g + f) / 2)
//   g even:              (1 + delta, f, g / 2)
// From f = p, g = a, delta = 1, g reaches 0 within floor((49d + 80)/17)
// divsteps when a, p < 2^d (the paper's theorem 11.2), and then f = +-gcd =
// +-1. Each batch of 30 divsteps runs on the low 30 bits of f and g only and
// records its effect as a matrix t = [u v; q r] with 2^30 f' = u f + v g and
// 2^30 g' = q f + r g (|u| + |v| <= 2^30, |q| + |r| <= 2^30), which is then
// applied to the full f and g, and to d and e, the Bezout coefficients:
// f = d a and g = e a (mod p) throughout (d = 0, e = 1 at the start), the
// division by 2^30 done mod p by adding the multiple of p that clears the
// low 30 bits. So at the end a^-1 = +-d.
//
// The loop stops once g = 0 (later divsteps would leave f and d as they
// are), so it is not constant-time: nothing here handles secrets.
#pragma once
#include "mont.cuh"

// One out-of-line copy on the device: a round of the affine accumulation
// calls it once, from several places.
#if defined(__CUDACC__)
#define CUZK_HD_NOINLINE __host__ __device__ __noinline__
#else
#define CUZK_HD_NOINLINE inline
#endif

// The host model's check of the invariants (nothing on the device).
#ifndef CUZK_INV30_CHECK
#define CUZK_INV30_CHECK(cond, what)
#endif

namespace cuzk {

namespace inv30 {

constexpr int BITS = 30;
constexpr uint32_t MASK = (1u << BITS) - 1;

// Signed 30-bit limbs: value = sum v[i] 2^(30 i), limbs below the top in
// [0, 2^30), the top one signed.
template <int L>
struct s30 {
    int32_t v[L];
};

// The modulus's i-th 30-bit limb, at compile time.
template <class P>
CUZK_HD constexpr int32_t mod30(int i) {
    const int bit = BITS * i, w = bit / 32, s = bit % 32;
    uint64_t x = w < P::N ? P::mod(w) : 0;
    if (w + 1 < P::N) x |= (uint64_t)P::mod(w + 1) << 32;
    return (int32_t)((x >> s) & MASK);
}

// p^-1 mod 2^32 by Newton's iteration (each step doubles the correct bits).
template <class P>
CUZK_HD constexpr uint32_t mod_inv32() {
    uint32_t x = 1;
    for (int i = 0; i < 5; i++) x *= 2 - P::mod(0) * x;
    return x;
}

template <class P>
CUZK_HD constexpr int mod_bits() {
    int top = P::N - 1;
    while (top > 0 && P::mod(top) == 0) top--;
    int b = 0;
    for (uint32_t m = P::mod(top); m; m >>= 1) b++;
    return 32 * top + b;
}

template <class P>
struct consts {
    static constexpr int N = P::N;
    static constexpr int L = (32 * N + BITS) / BITS;  // room for 32N bits and a sign
    static constexpr int DIVSTEPS = (49 * mod_bits<P>() + 80) / 17;
    static constexpr int BATCHES = (DIVSTEPS + BITS - 1) / BITS;
};

struct mat {
    int32_t u, v, q, r;
};

// 30 divsteps on the low bits of f and g; returns the new delta. Branch-free:
// the swap of the first case is done with masks, then the addition of f to g
// when g is odd.
CUZK_HD int32_t divsteps(int32_t delta, uint32_t f, uint32_t g, mat& t) {
    int32_t u = 1, v = 0, q = 0, r = 1;
#pragma unroll
    for (int i = 0; i < BITS; i++) {
        const int32_t odd = -(int32_t)(g & 1);
        const int32_t sw = odd & ((-delta) >> 31);  // g odd and delta > 0
        // Swap: (f, g) = (g, -f), (u, v, q, r) = (q, r, -u, -v), delta = -delta.
        const uint32_t x = (f ^ g) & (uint32_t)sw;
        f ^= x;
        g ^= x;
        g = (g ^ (uint32_t)sw) - (uint32_t)sw;
        int32_t y = (u ^ q) & sw;
        u ^= y;
        q ^= y;
        q = (q ^ sw) - sw;
        y = (v ^ r) & sw;
        v ^= y;
        r ^= y;
        r = (r ^ sw) - sw;
        delta = (delta ^ sw) - sw;
        // g odd: g += f (so g is even), the same on the matrix's second row.
        g += f & (uint32_t)odd;
        q += u & odd;
        r += v & odd;
        delta += 1;
        g >>= 1;
        u *= 2;
        v *= 2;
    }
    t.u = u;
    t.v = v;
    t.q = q;
    t.r = r;
    return delta;
}

// (f, g) = (u f + v g, q f + r g) / 2^30, exact by the choice of t.
template <int L>
CUZK_HD void update_fg(s30<L>& f, s30<L>& g, const mat& t) {
    int64_t cf = (int64_t)t.u * f.v[0] + (int64_t)t.v * g.v[0];
    int64_t cg = (int64_t)t.q * f.v[0] + (int64_t)t.r * g.v[0];
    cf >>= BITS;
    cg >>= BITS;
#pragma unroll
    for (int i = 1; i < L; i++) {
        cf += (int64_t)t.u * f.v[i] + (int64_t)t.v * g.v[i];
        cg += (int64_t)t.q * f.v[i] + (int64_t)t.r * g.v[i];
        f.v[i - 1] = (int32_t)(cf & MASK);
        g.v[i - 1] = (int32_t)(cg & MASK);
        cf >>= BITS;
        cg >>= BITS;
    }
    f.v[L - 1] = (int32_t)cf;
    g.v[L - 1] = (int32_t)cg;
}

// x in (-p, 2p) to [0, p).
template <class P, int L>
CUZK_HD void normalize(s30<L>& x) {
    const int32_t neg = x.v[L - 1] >> 31;
    int32_t c = 0;
#pragma unroll
    for (int i = 0; i < L; i++) {
        const int32_t s = x.v[i] + (mod30<P>(i) & neg) + c;
        x.v[i] = i < L - 1 ? s & (int32_t)MASK : s;
        c = s >> BITS;
    }
    s30<L> y;
    c = 0;
#pragma unroll
    for (int i = 0; i < L; i++) {
        const int32_t s = x.v[i] - mod30<P>(i) + c;
        y.v[i] = i < L - 1 ? s & (int32_t)MASK : s;
        c = s >> BITS;
    }
    const int32_t keep = y.v[L - 1] >> 31;  // x - p < 0: keep x
#pragma unroll
    for (int i = 0; i < L; i++) x.v[i] = (x.v[i] & keep) | (y.v[i] & ~keep);
}

// x in [0, p) in the canonical form (limbs below the top in [0, 2^30)).
template <class P, int L>
CUZK_HD bool reduced(const s30<L>& x) {
    for (int i = 0; i < L - 1; i++)
        if (x.v[i] < 0 || x.v[i] > (int32_t)MASK) return false;
    for (int i = L - 1; i >= 0; i--)
        if (x.v[i] != mod30<P>(i)) return x.v[i] < mod30<P>(i);
    return false;
}

// (d, e) = (u d + v e, q d + r e) / 2^30 mod p, for d, e in [0, p): k p with
// k in [0, 2^30) clears the low 30 bits, and the quotient lies in (-p, 2p)
// (|u d + v e| < 2^30 p), which normalize brings back to [0, p).
template <class P, int L>
CUZK_HD void update_de(s30<L>& d, s30<L>& e, const mat& t) {
    constexpr uint32_t pinv = mod_inv32<P>();
    const uint32_t d0 = (uint32_t)t.u * (uint32_t)d.v[0] + (uint32_t)t.v * (uint32_t)e.v[0];
    const uint32_t e0 = (uint32_t)t.q * (uint32_t)d.v[0] + (uint32_t)t.r * (uint32_t)e.v[0];
    const int64_t kd = (int64_t)((0u - d0 * pinv) & MASK);
    const int64_t ke = (int64_t)((0u - e0 * pinv) & MASK);
    int64_t cd = (int64_t)t.u * d.v[0] + (int64_t)t.v * e.v[0] + kd * mod30<P>(0);
    int64_t ce = (int64_t)t.q * d.v[0] + (int64_t)t.r * e.v[0] + ke * mod30<P>(0);
    cd >>= BITS;
    ce >>= BITS;
#pragma unroll
    for (int i = 1; i < L; i++) {
        cd += (int64_t)t.u * d.v[i] + (int64_t)t.v * e.v[i] + kd * mod30<P>(i);
        ce += (int64_t)t.q * d.v[i] + (int64_t)t.r * e.v[i] + ke * mod30<P>(i);
        d.v[i - 1] = (int32_t)(cd & MASK);
        e.v[i - 1] = (int32_t)(ce & MASK);
        cd >>= BITS;
        ce >>= BITS;
    }
    d.v[L - 1] = (int32_t)cd;
    e.v[L - 1] = (int32_t)ce;
    normalize<P>(d);
    normalize<P>(e);
    CUZK_INV30_CHECK((reduced<P, L>(d) && reduced<P, L>(e)), "Bezout coefficient outside [0, p)");
}

template <int L>
CUZK_HD bool is_zero(const s30<L>& x) {
    int32_t acc = 0;
#pragma unroll
    for (int i = 0; i < L; i++) acc |= x.v[i];
    return acc == 0;
}

template <class P, int L>
CUZK_HD s30<L> from_limbs(const uint32_t* a) {
    s30<L> r;
#pragma unroll
    for (int i = 0; i < L; i++) {
        const int bit = BITS * i, w = bit / 32, s = bit % 32;
        uint64_t x = w < P::N ? a[w] : 0;
        if (w + 1 < P::N) x |= (uint64_t)a[w + 1] << 32;
        r.v[i] = (int32_t)((x >> s) & MASK);
    }
    return r;
}

// x in [0, 2^(32N)), every limb non-negative.
template <class P, int L>
CUZK_HD void to_limbs(const s30<L>& x, uint32_t* a) {
#pragma unroll
    for (int w = 0; w < P::N; w++) {
        const int bit = 32 * w, i = bit / BITS, s = bit % BITS;
        uint64_t y = (uint64_t)(uint32_t)x.v[i] >> s;
        if (i + 1 < L) y |= (uint64_t)(uint32_t)x.v[i + 1] << (BITS - s);
        if (i + 2 < L && 2 * BITS - s < 32) y |= (uint64_t)(uint32_t)x.v[i + 2] << (2 * BITS - s);
        a[w] = (uint32_t)y;
    }
}

// The plain modular inverse of the integer a in [0, p) (0 for 0), and the
// number of batches it took, or -1 if g did not reach 0 (for the host model's
// checks). a by value: a reference to an out-of-line function's argument
// would put it in local memory.
template <class P>
CUZK_HD_NOINLINE mont_t<P> inverse_raw(mont_t<P> a, int* batches = nullptr) {
    typedef consts<P> K;
    constexpr int L = K::L;
    s30<L> f, g, d, e;
#pragma unroll
    for (int i = 0; i < L; i++) {
        f.v[i] = mod30<P>(i);
        d.v[i] = 0;
        e.v[i] = 0;
    }
    e.v[0] = 1;
    g = from_limbs<P, L>(a.v);
    int32_t delta = 1;
    int b = 0;
#pragma unroll 1
    for (; b < K::BATCHES; b++) {
        if (is_zero(g)) break;
        mat t;
        delta = divsteps(delta, (uint32_t)f.v[0], (uint32_t)g.v[0], t);
        update_fg(f, g, t);
        update_de<P>(d, e, t);
    }
    if (batches) *batches = is_zero(g) ? b : -1;
    // f = -1: the inverse is -d.
    if (f.v[L - 1] < 0) {
        int32_t c = 0;
#pragma unroll
        for (int i = 0; i < L; i++) {
            const int32_t s = -d.v[i] + c;
            d.v[i] = i < L - 1 ? s & (int32_t)MASK : s;
            c = s >> BITS;
        }
        normalize<P>(d);
    }
    mont_t<P> r;
    to_limbs<P>(d, r.v);
    return r;
}

}  // namespace inv30

// a^-1 in Montgomery form (0 for 0): the integer A = a R has inverse
// A^-1 = a^-1 R^-1, and a Montgomery product with R^3 makes it a^-1 R.
template <class P>
CUZK_HD mont_t<P> inverse(const mont_t<P>& a) {
    mont_t<P> r3;
#pragma unroll
    for (int i = 0; i < P::N; i++) r3.v[i] = P::r3(i);
    return inv30::inverse_raw(a) * r3;
}

}  // namespace cuzk
