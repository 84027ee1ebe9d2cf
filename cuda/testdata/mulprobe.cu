// SASS size of one field product, for comparing multiplications without a
// GPU: each kernel chains K products, so count(K = 2) - count(K = 1) is one
// product. cuda/testdata/sass_count.sh builds and counts it.
#include "../src/ff/bls12_381.cuh"

using namespace cuzk;

template <class F, int K>
__global__ void probe(F* x, const F* y) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    F a = x[i];
    const F b = y[i];
#pragma unroll
    for (int k = 0; k < K; k++) a = a * b;
    x[i] = a;
}

template __global__ void probe<fr_t, 1>(fr_t*, const fr_t*);
template __global__ void probe<fr_t, 2>(fr_t*, const fr_t*);
template __global__ void probe<fp_t, 1>(fp_t*, const fp_t*);
template __global__ void probe<fp_t, 2>(fp_t*, const fp_t*);
