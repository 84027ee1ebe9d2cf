// The two fields of BLS12-381: Fp (base field of G1, 381 bits) and Fr (scalar
// field, 255 bits). Limbs are the little-endian 32-bit halves of gnark-crypto's
// 64-bit limbs; one() is R mod the modulus, i.e. 1 in Montgomery form.
#pragma once
#include "mont.cuh"

// Which multiplication each field uses on the device, as measured on the H200
// (docs/benchmarks.md): the PTX carry chains for Fp (MSM 2^24: 177 ms against
// 194 with the compiler's carries), the compiler's carries for Fr (NTT 2^24:
// 6.70 ms against 6.98).
#ifndef CUZK_FP_C_MUL
#define CUZK_FP_C_MUL 0
#endif
#ifndef CUZK_FR_C_MUL
#define CUZK_FR_C_MUL 1
#endif
// CUZK_MUL=2 (the default): the even/odd multiplication (ff/mont_eo.cuh) in
// both fields, CUZK_FR_MUL / CUZK_FP_MUL for one; 0 keeps the CIOS chosen
// above (27 % slower NTTs and 32 % slower MSMs on the H200, docs/cuda.md).
#ifndef CUZK_MUL
#define CUZK_MUL 2
#endif
#ifndef CUZK_FP_MUL
#define CUZK_FP_MUL CUZK_MUL
#endif
#ifndef CUZK_FR_MUL
#define CUZK_FR_MUL CUZK_MUL
#endif
#ifndef CUZK_FP_NOINLINE
#define CUZK_FP_NOINLINE 1
#endif

namespace cuzk {

struct fp_params {
    static constexpr int N = 12;
    static constexpr uint32_t INV = 0xfffcfffd;  // -p^-1 mod 2^32
    static constexpr bool NOINLINE_MUL = CUZK_FP_NOINLINE;  // point formulas: ~10 products each
    static constexpr bool C_MUL = CUZK_FP_C_MUL;
    static constexpr int MUL = CUZK_FP_MUL;
    CUZK_HD static constexpr uint32_t mod(int i) {
        constexpr uint32_t m[12] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0,
                                    0xf38512bf, 0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
        return m[i];
    }
    CUZK_HD static constexpr uint32_t one(int i) {
        constexpr uint32_t o[12] = {0x0002fffd, 0x76090000, 0xc40c0002, 0xebf4000b, 0x53c758ba, 0x5f489857,
                                    0x70525745, 0x77ce5853, 0xa256ec6d, 0x5c071a97, 0xfa80e493, 0x15f65ec3};
        return o[i];
    }
    // R^3 mod p, for the inversion (ff/inverse.cuh).
    CUZK_HD static constexpr uint32_t r3(int i) {
        constexpr uint32_t o[12] = {0xd94ca1e0, 0xed48ac6b, 0x03a7adf8, 0x315f831e, 0x615e29dd, 0x9a53352a,
                                    0x921e1761, 0x34c04e5e, 0x65724728, 0x2512d435, 0x91755d4d, 0x0aa63460};
        return o[i];
    }
};

struct fr_params {
    static constexpr int N = 8;
    static constexpr uint32_t INV = 0xffffffff;  // -r^-1 mod 2^32
    static constexpr bool NOINLINE_MUL = false;  // NTT butterflies: one product each
    static constexpr bool C_MUL = CUZK_FR_C_MUL;
    static constexpr int MUL = CUZK_FR_MUL;
    CUZK_HD static constexpr uint32_t mod(int i) {
        constexpr uint32_t m[8] = {0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402,
                                   0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
        return m[i];
    }
    CUZK_HD static constexpr uint32_t one(int i) {
        constexpr uint32_t o[8] = {0xfffffffe, 0x00000001, 0x00034802, 0x5884b7fa,
                                   0xecbc4ff5, 0x998c4fef, 0xacc5056f, 0x1824b159};
        return o[i];
    }
};

typedef mont_t<fp_params> fp_t;
typedef mont_t<fr_params> fr_t;

static_assert(sizeof(fp_t) == 48, "fp_t must match gnark's fp.Element");
static_assert(sizeof(fr_t) == 32, "fr_t must match gnark's fr.Element");

}  // namespace cuzk
