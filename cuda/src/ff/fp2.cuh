// Fp2 = Fp[u]/(u^2 + 1), the field of G2's coordinates on BLS12-381. An
// element is c0 + c1*u with the layout of gnark-crypto's E2 {A0, A1}: two
// fp.Element values (96 bytes), Montgomery form. The operations are the ones
// the point formulas in ec/xyzz.cuh use; every result is fully reduced, so
// equality and zero tests compare limbs.
#pragma once
#include "bls12_381.cuh"
#include "inverse.cuh"

namespace cuzk {

struct alignas(16) fp2_t {
    fp_t c0, c1;

    CUZK_HD static fp2_t zero() {
        fp2_t r;
        r.c0 = fp_t::zero();
        r.c1 = fp_t::zero();
        return r;
    }
    CUZK_HD static fp2_t one() {
        fp2_t r;
        r.c0 = fp_t::one();
        r.c1 = fp_t::zero();
        return r;
    }
    CUZK_HD bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    CUZK_HD bool operator==(const fp2_t& o) const { return c0 == o.c0 && c1 == o.c1; }
    CUZK_HD bool operator!=(const fp2_t& o) const { return !(*this == o); }

    CUZK_HD friend fp2_t operator+(const fp2_t& a, const fp2_t& b) {
        fp2_t r;
        r.c0 = a.c0 + b.c0;
        r.c1 = a.c1 + b.c1;
        return r;
    }
    CUZK_HD friend fp2_t operator-(const fp2_t& a, const fp2_t& b) {
        fp2_t r;
        r.c0 = a.c0 - b.c0;
        r.c1 = a.c1 - b.c1;
        return r;
    }
    // Karatsuba: (a0 + a1 u)(b0 + b1 u) = (a0 b0 - a1 b1) + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) u,
    // three Fp products.
    CUZK_HD friend fp2_t operator*(const fp2_t& a, const fp2_t& b) {
        const fp_t t0 = a.c0 * b.c0;
        const fp_t t1 = a.c1 * b.c1;
        const fp_t t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
        fp2_t r;
        r.c0 = t0 - t1;
        r.c1 = t2 - t0 - t1;
        return r;
    }
    // The same product with lazy reduction (ff/mont_eo.cuh's eo_fp2_mul): the
    // three Fp products as 768-bit integers, combined, two Montgomery
    // reductions instead of three (1464 IMAD results against 1728 on sm_90).
    // The same fully reduced bits as operator*; the G2 point formulas use it
    // under CUZK_MSM_G2_MUL=1 (xyzz_t's MUL_LAZY). On the host, operator*.
    CUZK_HD static fp2_t mul_lazy(const fp2_t& a, const fp2_t& b) {
#if defined(__CUDA_ARCH__)
        if constexpr (fp_params::MUL == 2) {
            if constexpr (fp_params::NOINLINE_MUL)
                return mul_lazy_call(a, b);
            else
                return mul_lazy_eo(a, b);
        }
#endif
        return a * b;
    }
#if defined(__CUDA_ARCH__)
    static __device__ __forceinline__ fp2_t mul_lazy_eo(const fp2_t& a, const fp2_t& b) {
        fp2_t r;
        eo_fp2_mul<fp_params, eo_ptx>(r.c0.v, r.c1.v, a.c0.v, a.c1.v, b.c0.v, b.c1.v);
        return r;
    }
    // Out of line as Fp's product is (NOINLINE_MUL): one call instead of three.
    static __device__ __noinline__ fp2_t mul_lazy_call(fp2_t a, fp2_t b) { return mul_lazy_eo(a, b); }
#endif
    // a b + c d (the point formulas' fused form, under G1's MUL_FUSED: two
    // products).
    CUZK_HD static fp2_t mul2(const fp2_t& a, const fp2_t& b, const fp2_t& c, const fp2_t& d) {
        return a * b + c * d;
    }
    // a b + c d with lazy reduction (eo_fp2_mul2): twelve unreduced Fp
    // products, two reductions (2328 IMAD results against 2 x 1464 for two
    // lazy products). The same bits as mul2; G2's point formulas under
    // CUZK_MSM_G2_MUL=2. On the host, mul2.
    CUZK_HD static fp2_t mul2_lazy(const fp2_t& a, const fp2_t& b, const fp2_t& c, const fp2_t& d) {
#if defined(__CUDA_ARCH__)
        if constexpr (fp_params::MUL == 2) {
            if constexpr (fp_params::NOINLINE_MUL)
                return mul2_lazy_call(a, b, c, d);
            else
                return mul2_lazy_eo(a, b, c, d);
        }
#endif
        return mul2(a, b, c, d);
    }
#if defined(__CUDA_ARCH__)
    static __device__ __forceinline__ fp2_t mul2_lazy_eo(const fp2_t& a, const fp2_t& b, const fp2_t& c,
                                                         const fp2_t& d) {
        fp2_t r;
        eo_fp2_mul2<fp_params, eo_ptx>(r.c0.v, r.c1.v, a.c0.v, a.c1.v, b.c0.v, b.c1.v, c.c0.v, c.c1.v, d.c0.v,
                                       d.c1.v);
        return r;
    }
    static __device__ __noinline__ fp2_t mul2_lazy_call(fp2_t a, fp2_t b, fp2_t c, fp2_t d) {
        return mul2_lazy_eo(a, b, c, d);
    }
#endif
    CUZK_HD fp2_t sqr_rows() const { return sqr(); }
    // (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: two Fp products.
    CUZK_HD fp2_t sqr() const {
        fp2_t r;
        const fp_t t = c0 * c1;
        r.c0 = (c0 + c1) * (c0 - c1);
        r.c1 = t.dbl();
        return r;
    }
    CUZK_HD fp2_t dbl() const {
        fp2_t r;
        r.c0 = c0.dbl();
        r.c1 = c1.dbl();
        return r;
    }
    CUZK_HD fp2_t neg() const {
        fp2_t r;
        r.c0 = c0.neg();
        r.c1 = c1.neg();
        return r;
    }
    CUZK_HD fp2_t& operator+=(const fp2_t& o) { return *this = *this + o; }
    CUZK_HD fp2_t& operator-=(const fp2_t& o) { return *this = *this - o; }
    CUZK_HD fp2_t& operator*=(const fp2_t& o) { return *this = *this * o; }
};

// (c0 + c1 u)^-1 = (c0 - c1 u) / (c0^2 + c1^2): one Fp inversion (0 for 0).
CUZK_HD fp2_t inverse(const fp2_t& a) {
    const fp_t n = inverse(a.c0.sqr() + a.c1.sqr());
    fp2_t r;
    r.c0 = a.c0 * n;
    r.c1 = (a.c1 * n).neg();
    return r;
}

static_assert(sizeof(fp2_t) == 96, "fp2_t must match gnark's E2");

}  // namespace cuzk
