// Montgomery arithmetic over a prime field, written once and instantiated per
// modulus (ff/bls12_381.cuh). Elements are N little-endian 32-bit limbs in
// Montgomery form with R = 2^(32N): the same bytes as gnark-crypto's
// fp.Element / fr.Element ([N/2]uint64, little-endian) on a little-endian host,
// so values cross the ABI without conversion.
//
// Every operation returns a fully reduced value (< modulus), so equality and
// zero tests compare limbs directly.
#pragma once
#include <stdint.h>

#if defined(__CUDACC__)
#define CUZK_HD __host__ __device__ __forceinline__
#else
#define CUZK_HD inline
#endif

#include "mont_eo.cuh"

namespace cuzk {

// P supplies: N (limbs), mod(i), one(i) (R mod p), INV (-p^-1 mod 2^32),
// NOINLINE_MUL (whether device multiplication is an out-of-line call), and
// which device multiplication to use: MUL = 2 the even/odd one (mont_eo.cuh),
// else C_MUL picks between the two CIOS forms below.
// The modulus must be below 2^(32N-1) so that a+b never carries out of N limbs.
template <class P>
struct alignas(16) mont_t {
    static constexpr int N = P::N;
    uint32_t v[N];

    CUZK_HD static mont_t zero() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    CUZK_HD static mont_t one() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = P::one(i);
        return r;
    }
    CUZK_HD bool is_zero() const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
    CUZK_HD bool operator==(const mont_t& o) const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i] ^ o.v[i];
        return acc == 0;
    }
    CUZK_HD bool operator!=(const mont_t& o) const { return !(*this == o); }

    // a >= modulus, for values that may not be reduced (raw inputs).
    CUZK_HD bool geq_mod() const {
#pragma unroll
        for (int i = N - 1; i >= 0; i--) {
            if (v[i] != P::mod(i)) return v[i] > P::mod(i);
        }
        return true;
    }
    // Subtracts the modulus once; only for values known to be >= it.
    CUZK_HD void sub_mod_raw() {
        uint64_t borrow = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            uint64_t d = (uint64_t)v[i] - P::mod(i) - borrow;
            v[i] = (uint32_t)d;
            borrow = (d >> 32) & 1;
        }
    }

#if defined(__CUDA_ARCH__)
    // Device paths use explicit carry chains; every piece of a chain is
    // asm volatile so the compiler cannot reorder it away from the flag it
    // reads.
    __device__ __forceinline__ friend mont_t operator+(const mont_t& a, const mont_t& b) {
        mont_t t, s;
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(t.v[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(t.v[i]) : "r"(a.v[i]), "r"(b.v[i]));
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(s.v[0]) : "r"(t.v[0]), "r"(P::mod(0)));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(s.v[i]) : "r"(t.v[i]), "r"(P::mod(i)));
        uint32_t borrow;
        asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
        // borrow != 0: t < p, keep t.
#pragma unroll
        for (int i = 0; i < N; i++) t.v[i] = borrow ? t.v[i] : s.v[i];
        return t;
    }
    __device__ __forceinline__ friend mont_t operator-(const mont_t& a, const mont_t& b) {
        mont_t t;
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(t.v[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(t.v[i]) : "r"(a.v[i]), "r"(b.v[i]));
        uint32_t borrow;
        asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
        // Add back the modulus masked by the borrow: branch-free.
        uint32_t m[N];
#pragma unroll
        for (int i = 0; i < N; i++) m[i] = P::mod(i) & borrow;
        asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(t.v[0]) : "r"(m[0]));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(t.v[i]) : "r"(m[i]));
        return t;
    }
    // CIOS Montgomery multiplication: per limb of b, one lo and one hi
    // multiply-accumulate chain for a*b[i], the same two for m*p, then a
    // one-limb shift (free: registers are renamed by the unrolled loop).
    // CIOS written with 64-bit accumulators, leaving the carry handling to the
    // compiler (IMAD.WIDE plus adds in SASS); an alternative to the PTX carry
    // chains below, chosen per field by P::C_MUL.
    static __device__ __forceinline__ mont_t mul_c(const mont_t& a, const mont_t& b) {
        uint32_t t[N + 2];
#pragma unroll
        for (int j = 0; j < N + 2; j++) t[j] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            uint64_t c = 0;
#pragma unroll
            for (int j = 0; j < N; j++) {
                c += (uint64_t)a.v[j] * b.v[i] + t[j];
                t[j] = (uint32_t)c;
                c >>= 32;
            }
            c += t[N];
            t[N] = (uint32_t)c;
            t[N + 1] = (uint32_t)(c >> 32);
            const uint32_t m = t[0] * P::INV;
            c = ((uint64_t)m * P::mod(0) + t[0]) >> 32;
#pragma unroll
            for (int j = 1; j < N; j++) {
                c += (uint64_t)m * P::mod(j) + t[j];
                t[j - 1] = (uint32_t)c;
                c >>= 32;
            }
            c += t[N];
            t[N - 1] = (uint32_t)c;
            t[N] = t[N + 1] + (uint32_t)(c >> 32);
        }
        mont_t r;
#pragma unroll
        for (int j = 0; j < N; j++) r.v[j] = t[j];
        if (t[N] || r.geq_mod()) r.sub_mod_raw();
        return r;
    }

    __device__ __forceinline__ friend mont_t operator*(const mont_t& a, const mont_t& b) {
        if constexpr (P::MUL == 2) {
            if constexpr (P::NOINLINE_MUL)
                return mul_eo_call(a, b);
            else
                return mul_eo(a, b);
        }
        if constexpr (P::C_MUL) {
            if constexpr (P::NOINLINE_MUL)
                return mul_c_call(a, b);
            else
                return mul_c(a, b);
        }
        if constexpr (P::NOINLINE_MUL)
            return mul_call(a, b);
        else
            return mul_inline(a, b);
    }
    // One out-of-line copy keeps kernels that chain many multiplications (the
    // point formulas) small enough for the instruction cache; the call costs
    // little against ~600 multiply-adds.
    static __device__ __noinline__ mont_t mul_call(mont_t a, mont_t b) { return mul_inline(a, b); }
    static __device__ __noinline__ mont_t mul_c_call(mont_t a, mont_t b) { return mul_c(a, b); }
    static __device__ __noinline__ mont_t mul_eo_call(mont_t a, mont_t b) { return mul_eo(a, b); }

    static __device__ __forceinline__ mont_t mul_eo(const mont_t& a, const mont_t& b) {
        mont_t r;
        eo_mul<P, eo_ptx>(r.v, a.v, b.v);
        return r;
    }
    // The even/odd product with REDCR (mont_eo.cuh), for Fr only: the same
    // result as mul_eo. The NTT picks it with CUZK_NTT_MUL=1.
    static __device__ __forceinline__ mont_t mul_eo_lowr(const mont_t& a, const mont_t& b) {
        mont_t r;
        eo_mul<P, eo_ptx, true>(r.v, a.v, b.v);
        return r;
    }

    // (a b + c d) R^-1 mod p, fully reduced: with the even/odd product on a
    // 12-limb modulus one reduction for both products (eo_mul2), else the
    // sum of two products. The same bits either way.
    static __device__ __forceinline__ mont_t mul2(const mont_t& a, const mont_t& b, const mont_t& c,
                                                  const mont_t& d) {
        if constexpr (P::MUL == 2 && N == 12) {
            if constexpr (P::NOINLINE_MUL)
                return mul2_eo_call(a, b, c, d);
            else
                return mul2_eo(a, b, c, d);
        } else {
            return a * b + c * d;
        }
    }
    static __device__ __forceinline__ mont_t mul2_eo(const mont_t& a, const mont_t& b, const mont_t& c,
                                                     const mont_t& d) {
        mont_t r;
        eo_mul2<P, eo_ptx>(r.v, a.v, b.v, c.v, d.v);
        return r;
    }
    static __device__ __noinline__ mont_t mul2_eo_call(mont_t a, mont_t b, mont_t c, mont_t d) {
        return mul2_eo(a, b, c, d);
    }

    // a^2 R^-1 mod p, fully reduced: by the rows of eo_sqr (78 limb products
    // instead of 144) with the even/odd product on a 12-limb modulus, else
    // a * a. The same bits either way.
    __device__ __forceinline__ mont_t sqr_rows() const {
        if constexpr (P::MUL == 2 && N == 12) {
            if constexpr (P::NOINLINE_MUL)
                return sqr_eo_call(*this);
            else
                return sqr_eo(*this);
        } else {
            return *this * *this;
        }
    }
    static __device__ __forceinline__ mont_t sqr_eo(const mont_t& a) {
        mont_t r;
        eo_sqr<P, eo_ptx>(r.v, a.v);
        return r;
    }
    static __device__ __noinline__ mont_t sqr_eo_call(mont_t a) { return sqr_eo(a); }

    static __device__ __forceinline__ mont_t mul_inline(const mont_t& a, const mont_t& b) {
        uint32_t t[N + 2];
#pragma unroll
        for (int j = 0; j < N + 2; j++) t[j] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint32_t bi = b.v[i];
            asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[0]) : "r"(a.v[0]), "r"(bi));
#pragma unroll
            for (int j = 1; j < N; j++)
                asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[j]) : "r"(a.v[j]), "r"(bi));
            asm volatile("addc.cc.u32 %0, %0, 0;" : "+r"(t[N]));
            asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
            asm volatile("mad.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[1]) : "r"(a.v[0]), "r"(bi));
#pragma unroll
            for (int j = 1; j < N; j++)
                asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[j + 1]) : "r"(a.v[j]), "r"(bi));
            asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));

            const uint32_t m = t[0] * P::INV;
            asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[0]) : "r"(m), "r"(P::mod(0)));
#pragma unroll
            for (int j = 1; j < N; j++)
                asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[j]) : "r"(m), "r"(P::mod(j)));
            asm volatile("addc.cc.u32 %0, %0, 0;" : "+r"(t[N]));
            asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
            asm volatile("mad.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[1]) : "r"(m), "r"(P::mod(0)));
#pragma unroll
            for (int j = 1; j < N; j++)
                asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[j + 1]) : "r"(m), "r"(P::mod(j)));
            asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
            // t[0] is now zero by the choice of m.
#pragma unroll
            for (int j = 0; j < N + 1; j++) t[j] = t[j + 1];
            t[N + 1] = 0;
        }
        // t < 2p: one conditional subtraction.
        mont_t r, s;
#pragma unroll
        for (int j = 0; j < N; j++) r.v[j] = t[j];
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(s.v[0]) : "r"(r.v[0]), "r"(P::mod(0)));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(s.v[i]) : "r"(r.v[i]), "r"(P::mod(i)));
        uint32_t borrow;
        asm volatile("subc.u32 %0, %1, 0;" : "=r"(borrow) : "r"(t[N]));
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = borrow ? r.v[i] : s.v[i];
        return r;
    }
#else
    // Host paths: portable, used for the few operations done on the CPU
    // (combining MSM windows) and by host-side tests of the library.
    friend mont_t operator+(const mont_t& a, const mont_t& b) {
        mont_t t;
        uint64_t c = 0;
        for (int i = 0; i < N; i++) {
            c += (uint64_t)a.v[i] + b.v[i];
            t.v[i] = (uint32_t)c;
            c >>= 32;
        }
        if (c || t.geq_mod()) t.sub_mod_raw();
        return t;
    }
    friend mont_t operator-(const mont_t& a, const mont_t& b) {
        mont_t t;
        uint64_t borrow = 0;
        for (int i = 0; i < N; i++) {
            uint64_t d = (uint64_t)a.v[i] - b.v[i] - borrow;
            t.v[i] = (uint32_t)d;
            borrow = (d >> 32) & 1;
        }
        if (borrow) {
            uint64_t c = 0;
            for (int i = 0; i < N; i++) {
                c += (uint64_t)t.v[i] + P::mod(i);
                t.v[i] = (uint32_t)c;
                c >>= 32;
            }
        }
        return t;
    }
    // 64-bit limbs with 128-bit products: the host combines the MSM's window
    // sums with a few thousand of these per call.
    static constexpr int M64 = N / 2;
    static constexpr uint64_t mod64(int j) { return (uint64_t)P::mod(2 * j) | ((uint64_t)P::mod(2 * j + 1) << 32); }
    static constexpr uint64_t inv64() {
        // -p^-1 mod 2^64 by Newton's iteration (each step doubles the bits).
        uint64_t x = 1;
        for (int i = 0; i < 7; i++) x *= 2 - mod64(0) * x;
        return (uint64_t)0 - x;
    }
    friend mont_t operator*(const mont_t& a, const mont_t& b) {
        typedef unsigned __int128 u128;
        uint64_t A[M64], B[M64], T[M64 + 2] = {0};
        for (int j = 0; j < M64; j++) {
            A[j] = (uint64_t)a.v[2 * j] | ((uint64_t)a.v[2 * j + 1] << 32);
            B[j] = (uint64_t)b.v[2 * j] | ((uint64_t)b.v[2 * j + 1] << 32);
        }
        const uint64_t inv = inv64();
        for (int i = 0; i < M64; i++) {
            u128 c = 0;
            for (int j = 0; j < M64; j++) {
                c = (u128)A[j] * B[i] + T[j] + (uint64_t)(c >> 64);
                T[j] = (uint64_t)c;
            }
            c = (u128)T[M64] + (uint64_t)(c >> 64);
            T[M64] = (uint64_t)c;
            T[M64 + 1] = (uint64_t)(c >> 64);
            const uint64_t m = T[0] * inv;
            c = (u128)m * mod64(0) + T[0];
            for (int j = 1; j < M64; j++) {
                c = (u128)m * mod64(j) + T[j] + (uint64_t)(c >> 64);
                T[j - 1] = (uint64_t)c;
            }
            c = (u128)T[M64] + (uint64_t)(c >> 64);
            T[M64 - 1] = (uint64_t)c;
            T[M64] = T[M64 + 1] + (uint64_t)(c >> 64);
        }
        mont_t r;
        for (int j = 0; j < M64; j++) {
            r.v[2 * j] = (uint32_t)T[j];
            r.v[2 * j + 1] = (uint32_t)(T[j] >> 32);
        }
        if (T[M64] || r.geq_mod()) r.sub_mod_raw();
        return r;
    }
    static mont_t mul2(const mont_t& a, const mont_t& b, const mont_t& c, const mont_t& d) { return a * b + c * d; }
    mont_t sqr_rows() const { return *this * *this; }
#endif

    CUZK_HD mont_t dbl() const { return *this + *this; }
    CUZK_HD mont_t sqr() const { return *this * *this; }
    CUZK_HD mont_t neg() const { return is_zero() ? *this : zero() - *this; }
    CUZK_HD mont_t& operator+=(const mont_t& o) { return *this = *this + o; }
    CUZK_HD mont_t& operator-=(const mont_t& o) { return *this = *this - o; }
    CUZK_HD mont_t& operator*=(const mont_t& o) { return *this = *this * o; }

    // x^e for a 64-bit exponent (table building, not hot paths).
    CUZK_HD mont_t pow(uint64_t e) const {
        mont_t r = one(), b = *this;
        while (e) {
            if (e & 1) r = r * b;
            b = b.sqr();
            e >>= 1;
        }
        return r;
    }
};

}  // namespace cuzk
