// Groth16's quotient in two steps, for a partition that keeps two vectors on
// the device instead of three: a[i] *= b[i] once A's and B's coset
// evaluations are in, then a[i] = (a[i] - c[i]) * z_inv once C's have
// replaced B's. Together they are k_groth16_h.
#pragma once
#include <cuda_runtime.h>
#include "ntt.cuh"

namespace cuzk {
namespace ntt {

__global__ void k_mul_into(fr_t* a, const fr_t* __restrict__ b, uint64_t n) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    st(a + i, ld(a + i) * ld(b + i));
}

__global__ void k_sub_scale_into(fr_t* a, const fr_t* __restrict__ c, fr_t s, uint64_t n) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    st(a + i, (ld(a + i) - ld(c + i)) * s);
}

inline cudaError_t groth16_mul(const domain_t& dom, fr_t* a, const fr_t* b, cudaStream_t st) {
    k_mul_into<<<blocks_for(dom.n, 256), 256, 0, st>>>(a, b, dom.n);
    return cudaGetLastError();
}

inline cudaError_t groth16_sub_div(const domain_t& dom, fr_t* a, const fr_t* c, cudaStream_t st) {
    k_sub_scale_into<<<blocks_for(dom.n, 256), 256, 0, st>>>(a, c, dom.z_inv, dom.n);
    return cudaGetLastError();
}

}  // namespace ntt
}  // namespace cuzk
