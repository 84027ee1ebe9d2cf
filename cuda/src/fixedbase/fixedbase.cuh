// Batch fixed-base scalar multiplication on G1 and G2 (one template over the
// coordinate field, as the MSM): out[i] = s[i]·G for one base G, the work of
// a Groth16 setup.
//
// The host uploads G's window table: for c-bit windows, nw = ceil(255/c)
// windows of 2^c affine points, table[w·2^c + k] = k·2^(c·w)·G (entry 0 of
// each window is unused). One thread per scalar takes it out of Montgomery
// form and adds, for each window w with digit d ≠ 0, table[w·2^c + d] into an
// XYZZ accumulator: nw mixed additions and no doublings. The result is
// written in Jacobian coordinates (gnark-crypto's G1Jac/G2Jac layout); the
// host converts to affine with batched inversions.
//
// For a scalar s < r the additions never meet the exceptional cases of the
// mixed addition (equal or opposite points): before window w the accumulator
// is s_lo·G with 0 ≤ s_lo < 2^(c·w) ≤ d·2^(c·w), and s_lo + d·2^(c·w) ≤ s < r,
// so neither s_lo ≡ d·2^(c·w) nor s_lo ≡ −d·2^(c·w) (mod r) can hold.
// add_affine handles them anyway.
#pragma once
#include <cuda_runtime.h>
#include "../ff/bls12_381.cuh"
#include "../ff/fp2.cuh"
#include "../ec/xyzz.cuh"

namespace cuzk {
namespace fixedbase {

constexpr int MAX_WINDOW = 16;  // a G2 table of 16-bit windows is 200 MB
constexpr int SCALAR_BITS = 255;

CUZK_HD int windows(int c) { return (SCALAR_BITS + c - 1) / c; }

// Register budget as the MSM's accumulation kernel, whose loop is the same
// mixed addition: a cap of 3 blocks of 128 threads per SM for G1, none for
// G2's twice wider points.
template <class F>
struct min_blocks {
    static constexpr int value = 3;
};
template <>
struct min_blocks<fp2_t> {
    static constexpr int value = 1;
};

// Bits [pos, pos + c) of a canonical scalar (c <= 16, pos < 256).
__device__ __forceinline__ uint32_t digit(const fr_t& s, int pos, int c) {
    const int wi = pos >> 5, sh = pos & 31;
    uint64_t w = s.v[wi];
    if (wi + 1 < fr_t::N) w |= (uint64_t)s.v[wi + 1] << 32;
    return (uint32_t)(w >> sh) & ((1u << c) - 1);
}

template <class F>
__global__ void __launch_bounds__(128, min_blocks<F>::value)
    k_fixed_base(const affine_t<F>* __restrict__ table, int c, const fr_t* __restrict__ scalars, uint64_t n,
                 jacobian_t<F>* __restrict__ out) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    // Out of Montgomery form: s·1·R⁻¹, fully reduced.
    fr_t raw_one = fr_t::zero();
    raw_one.v[0] = 1;
    const fr_t s = scalars[i] * raw_one;
    const int nw = windows(c);
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (int w = 0; w < nw; w++) {
        const uint32_t d = digit(s, w * c, c);
        if (d == 0) continue;
        const affine_t<F>& p = table[((uint64_t)w << c) | d];
        acc.add_affine(p.x, p.y);
    }
    out[i] = acc.to_jacobian();
}

// Launches out[i] = scalars[i]·G for i < n on st (asynchronous). table holds
// windows(c)·2^c affine points as above; scalars are fr.Element values in
// Montgomery form (below r); all three are device pointers.
template <class F>
inline cudaError_t run(const affine_t<F>* table, int c, const fr_t* scalars, uint64_t n, jacobian_t<F>* out,
                       cudaStream_t st) {
    if (c < 1 || c > MAX_WINDOW) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    const unsigned threads = 128;
    const uint64_t blocks = (n + threads - 1) / threads;
    if (blocks > 0x7fffffffull) return cudaErrorInvalidValue;
    k_fixed_base<F><<<(unsigned)blocks, threads, 0, st>>>(table, c, scalars, n, out);
    return cudaGetLastError();
}

}  // namespace fixedbase
}  // namespace cuzk
