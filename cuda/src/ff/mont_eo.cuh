// The even/odd Montgomery multiplication (CUZK_MUL=2): the CIOS of mont.cuh
// with each limb product a_j * b_i added as one 64-bit quantity, so that the
// pair mad.lo.cc / madc.hi.cc of a chain becomes one IMAD.WIDE.U32.X (a 32 x 32
// -> 64-bit multiply-add with carry in and out) instead of a lo chain and a hi
// chain that ptxas must emulate with separate high multiplies and adds.
//
// The products of the even limbs of a (a_0 b_i, a_2 b_i, ...) land on limb
// pairs (0, 1), (2, 3), ... and never overlap; those of the odd limbs on (1,
// 2), (3, 4), ... So the running value is kept in two accumulators of N limbs,
//   V = ev + 2^32 * od     (ev[k] at limb k, od[k] at limb k + 1),
// each of which takes one carry chain per multiplier. One step (limb b_i):
//   V += a * b_i;  m = V[0] * INV;  V += m * p;  V /= 2^32.
// The division is free: after the reduction ev[0] = 0, so
//   V / 2^32 = od + (ev >> 32),
// and the accumulators swap roles: od, plus ev[1] at limb 0, becomes the next
// even one; ev >> 64 the next odd one (its limbs move down two places as the
// next odd products are added onto them: the AB chain of mont_eo_asm.cuh).
// After N steps the result is od + (ev >> 32) < 2p, less p where that does
// not borrow: fully reduced.
//
// Why no carry is lost (inputs a, b < p, or either of them below 2^(32N) and
// the other 1, as the conversions out of Montgomery form multiply): V stays
// below 2^33 p as in any CIOS; the odd accumulator stays below
// 2^(32(N-2)) + 2p + 3 (the shifted ev, a_odd * b_i / 2^32 < p, m * p_odd /
// 2^32 < p, and the carries from the even chains), which fits N limbs for a
// modulus whose top limb is below 2^31 - 1: the odd chains end without a
// carry out, the even chains carry at most one bit into od[N-1].
//
// The schedule is written once over an executor X of the three chains: on the
// device, asm blocks (eo_ptx below); in cuda/testdata/montmodel.cc, an
// interpreter of the same strings, checked against big-integer products.
#pragma once
#include <stdint.h>
#include "mont_eo_asm.cuh"

namespace cuzk {

// One reduction step: REDC, or with LOWR (a modulus whose two low limbs are
// 1 and 2^32 - 1, as Fr's) REDCR, which adds the same values without
// multiplying by those two limbs: 14 fewer IMAD results per product on
// sm_90 (cuda/imad_count.sh), the same result bits.
template <class P, class X, bool LOWR>
CUZK_HD void eo_redc(uint32_t (&ev)[P::N], uint32_t (&od)[P::N]) {
    if constexpr (LOWR) {
        static_assert(P::N == 8 && P::mod(0) == 1 && P::mod(1) == 0xffffffffu && P::INV == 0xffffffffu,
                      "REDCR is generated for an 8-limb modulus ending in limbs 1, 2^32 - 1");
        X::template redcr<P>(ev, od);
    } else {
        X::template redc<P>(ev, od, ev[0] * P::INV);
    }
}

template <class P, class X, bool LOWR = false>
CUZK_HD void eo_mul(uint32_t (&r)[P::N], const uint32_t (&a)[P::N], const uint32_t (&b)[P::N]) {
    constexpr int N = P::N;
    static_assert(N == 8 || N == 12, "chains are generated for 8 and 12 limbs");
    static_assert(P::mod(N - 1) < 0x7fffffffu, "the odd accumulator must fit N limbs");
    // x and y take turns as the even accumulator: x after b_0, y after b_1...
    uint32_t x[N], y[N];
    // b_0: the products do not overlap, so no carries.
#pragma unroll
    for (int j = 0; j < N; j += 2) {
        const uint64_t e = (uint64_t)a[j] * b[0], o = (uint64_t)a[j + 1] * b[0];
        x[j] = (uint32_t)e;
        x[j + 1] = (uint32_t)(e >> 32);
        y[j] = (uint32_t)o;
        y[j + 1] = (uint32_t)(o >> 32);
    }
    eo_redc<P, X, LOWR>(x, y);
#pragma unroll
    for (int i = 1; i < N; i++) {
        if (i & 1) {
            X::template ab<P>(x, y, a, b[i]);
            eo_redc<P, X, LOWR>(y, x);
        } else {
            X::template ab<P>(y, x, a, b[i]);
            eo_redc<P, X, LOWR>(x, y);
        }
    }
    // N is even: y is the even accumulator after the last step.
    uint32_t t[N], u[N], mask;
    X::template fin<P>(t, u, mask, y, x);
#pragma unroll
    for (int j = 0; j < N; j++) r[j] = mask ? t[j] : u[j];  // mask: t < p
}

// The fused sum of two products (MA chains): r = (a b + c d) R^-1 mod p,
// fully reduced, for a, b, c, d < p, with one reduction instead of two. Each
// step adds c * d_i into the accumulators after a * b_i (the MA chain, in
// place) and before the reduction, so it is the CIOS of a b + c d: the value
// stays below 2^32 (3p + 1) before each division (V_i < V_(i-1) / 2^32 + 3p),
// the odd accumulator below 2^(32(N-2)) + 3p + 4, which fits N limbs where
// 3p < 2^(32N) (Fp: 3p < 2^383; not Fr, whose 3r > 2^256), and the result (a b + c d + M p) / R < p (1 +
// 2p/R) < 2p, so FINAL's one subtraction reduces it fully. The host model
// (cuda/testdata/montmodel.cc) runs the same chains and fails on any carry
// they would lose.
template <class P, class X>
CUZK_HD void eo_mul2(uint32_t (&r)[P::N], const uint32_t (&a)[P::N], const uint32_t (&b)[P::N],
                     const uint32_t (&c)[P::N], const uint32_t (&d)[P::N]) {
    constexpr int N = P::N;
    static_assert(N == 12, "the MA chain is generated for 12 limbs (Fp)");
    static_assert(P::mod(N - 1) < 0x55555555u, "3p must fit N limbs");
    uint32_t x[N], y[N];
#pragma unroll
    for (int j = 0; j < N; j += 2) {
        const uint64_t e = (uint64_t)a[j] * b[0], o = (uint64_t)a[j + 1] * b[0];
        x[j] = (uint32_t)e;
        x[j + 1] = (uint32_t)(e >> 32);
        y[j] = (uint32_t)o;
        y[j + 1] = (uint32_t)(o >> 32);
    }
    X::template ma<P>(x, y, c, d[0]);
    eo_redc<P, X, false>(x, y);
#pragma unroll
    for (int i = 1; i < N; i++) {
        if (i & 1) {
            X::template ab<P>(x, y, a, b[i]);
            X::template ma<P>(y, x, c, d[i]);
            eo_redc<P, X, false>(y, x);
        } else {
            X::template ab<P>(y, x, a, b[i]);
            X::template ma<P>(x, y, c, d[i]);
            eo_redc<P, X, false>(x, y);
        }
    }
    uint32_t t[N], u[N], mask;
    X::template fin<P>(t, u, mask, y, x);
#pragma unroll
    for (int j = 0; j < N; j++) r[j] = mask ? t[j] : u[j];
}

// The squaring (SQ chains): r = a^2 R^-1 mod p, fully reduced, for a < p.
// a^2 = sum_i a_i (a_i 2^(32i) + 2 sum_(j>i) a_j 2^(32j)) 2^(32i), so step i
// of the CIOS adds a_i times the multiplicand B_i = (a_i at limb i, then the
// limbs of 2a above it), whose limbs below i are zero: n - i products
// instead of n, 78 of them for a * a's 144 on Fp. With D = 2a (which fits N
// limbs: a < p < 2^(32N-1)), B_i's limbs are a_i, a_(i+1) << 1 (D_(i+1)
// without a_i's top bit, which belongs to a_i's own limb), D_(i+2), ...
// B_i < 2p, so the value before each division stays below 2^32 (3p + 1) as
// in eo_mul2, with the same bound on the odd accumulator (Fp only), and the
// result (a^2 + M p) / R < 2p.
template <class P, class X>
CUZK_HD void eo_sqr(uint32_t (&r)[P::N], const uint32_t (&a)[P::N]) {
    constexpr int N = P::N;
    static_assert(N == 12, "the SQ chains are generated for 12 limbs (Fp)");
    static_assert(P::mod(N - 1) < 0x55555555u, "3p must fit N limbs");
    uint32_t D[N], x[N], y[N];
    D[0] = a[0] << 1;
#pragma unroll
    for (int k = 1; k < N; k++) D[k] = (a[k] << 1) | (a[k - 1] >> 31);
    // Row 0: B_0 = (a_0, a_1 << 1, D_2, ...), whose products do not overlap.
#pragma unroll
    for (int j = 0; j < N; j += 2) {
        const uint32_t ce = j == 0 ? a[0] : D[j], co = j == 0 ? a[1] << 1 : D[j + 1];
        const uint64_t e = (uint64_t)ce * a[0], o = (uint64_t)co * a[0];
        x[j] = (uint32_t)e;
        x[j + 1] = (uint32_t)(e >> 32);
        y[j] = (uint32_t)o;
        y[j + 1] = (uint32_t)(o >> 32);
    }
    eo_redc<P, X, false>(x, y);
#pragma unroll
    for (int i = 1; i < N; i++) {
        const uint32_t e = i + 1 < N ? a[i + 1] << 1 : 0;
        if (i & 1) {
            X::template sq<P>(i, x, y, D, a[i], e);
            eo_redc<P, X, false>(y, x);
        } else {
            X::template sq<P>(i, y, x, D, a[i], e);
            eo_redc<P, X, false>(x, y);
        }
    }
    uint32_t t[N], u[N], mask;
    X::template fin<P>(t, u, mask, y, x);
#pragma unroll
    for (int j = 0; j < N; j++) r[j] = mask ? t[j] : u[j];
}

// The Fp2 product with lazy reduction (the G2 point formulas under
// CUZK_MSM_G2_MUL=1): Karatsuba's three Fp products kept as 2N-limb
// integers, combined, and reduced twice instead of three times:
//   t0 = a0 b0, t1 = a1 b1, t2 = (a0 + a1)(b0 + b1),
//   r0 = REDC(t0 + p^2 - t1), r1 = REDC(t2 - (t0 + t1)) = REDC(a0 b1 + a1 b0).
// A product row costs what eo_mul's AB does and a reduction what its REDCs
// do, so this is 3 x 144 + 2 x 144 limb products (and 2 x 12 for the m) in
// place of 3 x (144 + 144 + 12): 1464 IMAD results instead of 1728 on sm_90.
//
// Bounds, for a0, a1, b0, b1 < p < 2^381 (so 4p < 2^383):
// - a0 + a1, b0 + b1 < 2p: N limbs, left unreduced (ADD carries nothing out);
//   t2 < 4 p^2 < 2^764 and t0, t1 < p^2 fit 2N limbs.
// - eo_prod's accumulators: V_i = floor(V_(i-1) / 2^32) + A b_i < 2^32 A for
//   A < 2p, as in eo_mul without the m p terms; the odd accumulator stays
//   below 2^(32(N-2)) + 2p + 3, which fits N limbs.
// - t0 + p^2 - t1 is in (0, 2 p^2) (KD: the sum below 2^764 carries nothing,
//   the difference borrows nothing), t0 + t1 < 2 p^2, t2 - (t0 + t1) = a0 b1
//   + a1 b0 in [0, 2 p^2): every value the reduction takes is below
//   2 p^2 < p 2^384.
// - eo_redc_wide of T < p 2^384: the low half's reduction (L + M p) / 2^384 <
//   1 + p, i.e. at most p, and the high half floor(T / 2^384) < p, so their
//   sum is below 2p and RFIN's one subtraction reduces it fully.
// The host model (cuda/testdata/montmodel.cc) runs these chains with its
// interpreter, which fails on any carry they would lose, and compares the
// results with gnark-crypto's E2 product.
//
// The product a b of N-limb values as 2N limbs, by eo_mul's rows without the
// reductions: after each row the lowest limb of V leaves (AB ignores ev0 and
// computes floor(V / 2^32) + a b_i), the last V / 2^32 is the high half.
template <class P, class X>
CUZK_HD void eo_prod(uint32_t (&t)[2 * P::N], const uint32_t (&a)[P::N], const uint32_t (&b)[P::N]) {
    constexpr int N = P::N;
    static_assert(N == 12, "the lazy chains are generated for 12 limbs (Fp)");
    uint32_t x[N], y[N], h[N];
#pragma unroll
    for (int j = 0; j < N; j += 2) {
        const uint64_t e = (uint64_t)a[j] * b[0], o = (uint64_t)a[j + 1] * b[0];
        x[j] = (uint32_t)e;
        x[j + 1] = (uint32_t)(e >> 32);
        y[j] = (uint32_t)o;
        y[j + 1] = (uint32_t)(o >> 32);
    }
    t[0] = x[0];
#pragma unroll
    for (int i = 1; i < N; i++) {
        if (i & 1) {
            X::template ab<P>(x, y, a, b[i]);
            t[i] = y[0];
        } else {
            X::template ab<P>(y, x, a, b[i]);
            t[i] = x[0];
        }
    }
    X::template hi<P>(h, y, x);
#pragma unroll
    for (int j = 0; j < N; j++) t[N + j] = h[j];
}

// r = T R^-1 mod p, fully reduced, for T < p 2^(32N) (2N limbs): REDC over
// the low half (the first step REDC, each further one RP, which also does
// the division by 2^32), then the high half added by RFIN.
template <class P, class X>
CUZK_HD void eo_redc_wide(uint32_t (&r)[P::N], const uint32_t (&T)[2 * P::N]) {
    constexpr int N = P::N;
    uint32_t x[N], y[N], h[N];
#pragma unroll
    for (int j = 0; j < N; j++) {
        x[j] = T[j];
        y[j] = 0;
        h[j] = T[N + j];
    }
    X::template redc<P>(x, y, x[0] * P::INV);
#pragma unroll
    for (int i = 1; i < N; i++) {
        if (i & 1)
            X::template rp<P>(x, y, (y[0] + x[1]) * P::INV);
        else
            X::template rp<P>(y, x, (x[0] + y[1]) * P::INV);
    }
    uint32_t t[N], u[N], mask;
    X::template rfin<P>(t, u, mask, y, x, h);
#pragma unroll
    for (int j = 0; j < N; j++) r[j] = mask ? t[j] : u[j];
}

template <class P, class X>
CUZK_HD void eo_fp2_mul(uint32_t (&r0)[P::N], uint32_t (&r1)[P::N], const uint32_t (&a0)[P::N],
                        const uint32_t (&a1)[P::N], const uint32_t (&b0)[P::N], const uint32_t (&b1)[P::N]) {
    constexpr int N = P::N;
    static_assert(N == 12 && P::mod(N - 1) < 0x20000000u, "the bounds above need p < 2^381");
    uint32_t A[N], B[N], t0[2 * N], t1[2 * N], d[2 * N], s[2 * N];
    X::template add<P>(A, a0, a1);
    X::template add<P>(B, b0, b1);
    eo_prod<P, X>(t0, a0, b0);
    eo_prod<P, X>(t1, a1, b1);
    X::template kd<P>(d, t0, t1);
    X::template addw<P>(s, t0, t1);
    eo_redc_wide<P, X>(r0, d);
    eo_prod<P, X>(t0, A, B);
    X::template subw<P>(d, t0, s);
    eo_redc_wide<P, X>(r1, d);
}

// The fused sum a b + c d over Fp2 with lazy reduction (the point formulas'
// a b + c d under CUZK_MSM_G2_MUL=2): both Karatsuba triples as 2N-limb
// integers, summed per component, and two reductions for the four Fp2
// products' twelve Fp products: 6 x 144 + 2 x 144 limb products (2328 IMAD
// results) in place of two lazy products' 2 x 1464. The same chains as
// eo_fp2_mul; the component sums are (t0 + p^2 - t1) + (u0 + p^2 - u1) in
// (0, 4 p^2) and (a0 b1 + a1 b0) + (c0 d1 + c1 d0) in [0, 4 p^2), below
// p 2^384 because 4p < 2^384 (p < 2^381), and below 2^766 (ADDW carries
// nothing out), so eo_redc_wide's bound holds as above.
template <class P, class X>
CUZK_HD void eo_fp2_mul2(uint32_t (&r0)[P::N], uint32_t (&r1)[P::N], const uint32_t (&a0)[P::N],
                         const uint32_t (&a1)[P::N], const uint32_t (&b0)[P::N], const uint32_t (&b1)[P::N],
                         const uint32_t (&c0)[P::N], const uint32_t (&c1)[P::N], const uint32_t (&d0)[P::N],
                         const uint32_t (&d1)[P::N]) {
    constexpr int N = P::N;
    static_assert(N == 12 && P::mod(N - 1) < 0x20000000u, "the bounds above need p < 2^381");
    uint32_t A[N], B[N], t0[2 * N], t1[2 * N], e[2 * N], f[2 * N], g[2 * N], s[2 * N];
    // a b: e = t0 + p^2 - t1, f = t2 - (t0 + t1).
    X::template add<P>(A, a0, a1);
    X::template add<P>(B, b0, b1);
    eo_prod<P, X>(t0, a0, b0);
    eo_prod<P, X>(t1, a1, b1);
    X::template kd<P>(e, t0, t1);
    X::template addw<P>(s, t0, t1);
    eo_prod<P, X>(t0, A, B);
    X::template subw<P>(f, t0, s);
    // c d, added on: g = e + (u0 + p^2 - u1), then f + u2 - (u0 + u1).
    X::template add<P>(A, c0, c1);
    X::template add<P>(B, d0, d1);
    eo_prod<P, X>(t0, c0, d0);
    eo_prod<P, X>(t1, c1, d1);
    X::template kd<P>(s, t0, t1);
    X::template addw<P>(g, e, s);
    eo_redc_wide<P, X>(r0, g);
    X::template addw<P>(s, t0, t1);
    eo_prod<P, X>(t0, A, B);
    X::template subw<P>(e, t0, s);
    X::template addw<P>(g, f, e);
    eo_redc_wide<P, X>(r1, g);
}

#if defined(__CUDA_ARCH__)
// The chains as non-volatile asm: each one block, so its carries stay
// contiguous; the compiler may still schedule the blocks and what lies between
// them. Operand binding by name: see montgen.go.
struct eo_ptx {
    template <class P>
    static __device__ __forceinline__ void ab(uint32_t (&ev)[P::N], uint32_t (&od)[P::N], const uint32_t (&a)[P::N],
                                              uint32_t b) {
        if constexpr (P::N == 8)
            asm(CUZK_EO8_AB CUZK_EO8_AB_OPERANDS);
        else
            asm(CUZK_EO12_AB CUZK_EO12_AB_OPERANDS);
    }
    template <class P>
    static __device__ __forceinline__ void ma(uint32_t (&ev)[P::N], uint32_t (&od)[P::N], const uint32_t (&c)[P::N],
                                              uint32_t d) {
        asm(CUZK_EO12_MA CUZK_EO12_MA_OPERANDS);
    }
    // Row i of the squaring; i is a constant once eo_sqr's loop is unrolled,
    // so the switch folds away.
    template <class P>
    static __device__ __forceinline__ void sq(int i, uint32_t (&ev)[P::N], uint32_t (&od)[P::N],
                                              const uint32_t (&D)[P::N], uint32_t b, uint32_t e) {
#define CUZK_EO12_SQ_CASE(k) \
    case k:                  \
        asm(CUZK_EO12_SQ##k CUZK_EO12_SQ##k##_OPERANDS); \
        break;
        switch (i) { CUZK_EO12_SQ_ROWS(CUZK_EO12_SQ_CASE) }
#undef CUZK_EO12_SQ_CASE
    }
    template <class P>
    static __device__ __forceinline__ void redc(uint32_t (&ev)[P::N], uint32_t (&od)[P::N], uint32_t m) {
        if constexpr (P::N == 8)
            asm(CUZK_EO8_REDC CUZK_EO8_REDC_OPERANDS);
        else
            asm(CUZK_EO12_REDC CUZK_EO12_REDC_OPERANDS);
    }
    template <class P>
    static __device__ __forceinline__ void redcr(uint32_t (&ev)[P::N], uint32_t (&od)[P::N]) {
        uint32_t m, h;  // scratch of the block
        asm(CUZK_EO8_REDCR CUZK_EO8_REDCR_OPERANDS);
        (void)m;
        (void)h;
    }
    // The lazy Fp2 product's chains (eo_fp2_mul).
    template <class P>
    static __device__ __forceinline__ void hi(uint32_t (&h)[P::N], const uint32_t (&ev)[P::N],
                                              const uint32_t (&od)[P::N]) {
        asm(CUZK_EO12_HI CUZK_EO12_HI_OPERANDS);
    }
    template <class P>
    static __device__ __forceinline__ void add(uint32_t (&s)[P::N], const uint32_t (&x)[P::N],
                                               const uint32_t (&y)[P::N]) {
        asm(CUZK_EO12_ADD CUZK_EO12_ADD_OPERANDS);
    }
    template <class P>
    static __device__ __forceinline__ void kd(uint32_t (&d)[2 * P::N], const uint32_t (&x)[2 * P::N],
                                              const uint32_t (&y)[2 * P::N]) {
        asm(CUZK_EO12_KD CUZK_EO12_KD_OPERANDS);
    }
    template <class P>
    static __device__ __forceinline__ void addw(uint32_t (&s)[2 * P::N], const uint32_t (&x)[2 * P::N],
                                                const uint32_t (&y)[2 * P::N]) {
        asm(CUZK_EO12_ADDW CUZK_EO12_ADDW_OPERANDS);
    }
    template <class P>
    static __device__ __forceinline__ void subw(uint32_t (&d)[2 * P::N], const uint32_t (&x)[2 * P::N],
                                                const uint32_t (&y)[2 * P::N]) {
        asm(CUZK_EO12_SUBW CUZK_EO12_SUBW_OPERANDS);
    }
    template <class P>
    static __device__ __forceinline__ void rp(uint32_t (&ev)[P::N], uint32_t (&od)[P::N], uint32_t m) {
        asm(CUZK_EO12_RP CUZK_EO12_RP_OPERANDS);
    }
    template <class P>
    static __device__ __forceinline__ void rfin(uint32_t (&t)[P::N], uint32_t (&u)[P::N], uint32_t& mask,
                                                const uint32_t (&ev)[P::N], const uint32_t (&od)[P::N],
                                                const uint32_t (&h)[P::N]) {
        asm(CUZK_EO12_RFIN CUZK_EO12_RFIN_OPERANDS);
    }
    template <class P>
    static __device__ __forceinline__ void fin(uint32_t (&t)[P::N], uint32_t (&u)[P::N], uint32_t& mask,
                                               const uint32_t (&ev)[P::N], const uint32_t (&od)[P::N]) {
        if constexpr (P::N == 8)
            asm(CUZK_EO8_FINAL CUZK_EO8_FINAL_OPERANDS);
        else
            asm(CUZK_EO12_FINAL CUZK_EO12_FINAL_OPERANDS);
    }
};
#endif

}  // namespace cuzk
