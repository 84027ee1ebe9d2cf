// The kernels cuda/imad_count.sh reads the SASS of: each chains K copies of
// one operation, so count(K = 2) - count(K = 1) is one operation with its
// operands in registers. Built with the Fp product inline
// (-DCUZK_FP_NOINLINE=0) so that its instructions are counted where used.
#include "../src/ff/bls12_381.cuh"
#include "../src/ff/fp2.cuh"
#include "../src/ec/xyzz.cuh"

using namespace cuzk;

// One Montgomery product.
template <class F, int K>
__global__ void mul(F* x, const F* y) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    F a = x[i];
    const F b = y[i];
#pragma unroll
    for (int k = 0; k < K; k++) a = a * b;
    x[i] = a;
}

// One radix-2 DIF butterfly with its product: (a + b, (a - b) w), as the
// NTT kernels run it.
template <int K>
__global__ void butterfly(fr_t* x, const fr_t* w) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    fr_t a = x[2 * i], b = x[2 * i + 1];
    const fr_t r = w[i];
#pragma unroll
    for (int k = 0; k < K; k++) {
        const fr_t s = a + b;
        b = (a - b) * r;
        a = s;
    }
    x[2 * i] = a;
    x[2 * i + 1] = b;
}

// The Fr product and butterfly with REDCR (fr_t::mul_eo_lowr, CUZK_NTT_MUL=1).
template <int K>
__global__ void mul_lowr(fr_t* x, const fr_t* y) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    fr_t a = x[i];
    const fr_t b = y[i];
#pragma unroll
    for (int k = 0; k < K; k++) a = fr_t::mul_eo_lowr(a, b);
    x[i] = a;
}
template <int K>
__global__ void butterfly_lowr(fr_t* x, const fr_t* w) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    fr_t a = x[2 * i], b = x[2 * i + 1];
    const fr_t r = w[i];
#pragma unroll
    for (int k = 0; k < K; k++) {
        const fr_t s = a + b;
        b = fr_t::mul_eo_lowr(a - b, r);
        a = s;
    }
    x[2 * i] = a;
    x[2 * i + 1] = b;
}

// The fused sum of two Fp products, a b + c d (fp_t::mul2, CUZK_MSM_MUL=1), and the
// squaring by rows (fp_t::sqr_rows, CUZK_MSM_MUL=2).
template <int K>
__global__ void mul2_fused(fp_t* x, const fp_t* y) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    fp_t a = x[i];
    const fp_t b = y[2 * i], c = y[2 * i + 1];
#pragma unroll
    for (int k = 0; k < K; k++) a = fp_t::mul2(a, b, c, a);
    x[i] = a;
}

// One mixed XYZZ addition (the bucket accumulation's) and one full one (the
// bucket sums'), with each CUZK_MSM_MUL.
template <int MUL, int K>
__global__ void madd(xyzz_t<fp_t>* x, const affine_t<fp_t>* y) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    xyzz_t<fp_t> a = x[i];
#pragma unroll
    for (int k = 0; k < K; k++) a.add_affine<MUL>(y[K * i + k].x, y[K * i + k].y);
    x[i] = a;
}
template <int MUL, int K>
__global__ void xadd(xyzz_t<fp_t>* x, const xyzz_t<fp_t>* y) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    xyzz_t<fp_t> a = x[i];
#pragma unroll
    for (int k = 0; k < K; k++) a.add<MUL>(y[K * i + k]);
    x[i] = a;
}

template <int K>
__global__ void sqr_rows(fp_t* x) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    fp_t a = x[i];
#pragma unroll
    for (int k = 0; k < K; k++) a = a.sqr_rows();
    x[i] = a;
}

template __global__ void sqr_rows<1>(fp_t*);
template __global__ void sqr_rows<2>(fp_t*);
template __global__ void mul2_fused<1>(fp_t*, const fp_t*);
template __global__ void mul2_fused<2>(fp_t*, const fp_t*);
template __global__ void madd<0, 1>(xyzz_t<fp_t>*, const affine_t<fp_t>*);
template __global__ void madd<0, 2>(xyzz_t<fp_t>*, const affine_t<fp_t>*);
template __global__ void madd<1, 1>(xyzz_t<fp_t>*, const affine_t<fp_t>*);
template __global__ void madd<1, 2>(xyzz_t<fp_t>*, const affine_t<fp_t>*);
template __global__ void madd<3, 1>(xyzz_t<fp_t>*, const affine_t<fp_t>*);
template __global__ void madd<3, 2>(xyzz_t<fp_t>*, const affine_t<fp_t>*);
template __global__ void xadd<0, 1>(xyzz_t<fp_t>*, const xyzz_t<fp_t>*);
template __global__ void xadd<0, 2>(xyzz_t<fp_t>*, const xyzz_t<fp_t>*);
template __global__ void xadd<1, 1>(xyzz_t<fp_t>*, const xyzz_t<fp_t>*);
template __global__ void xadd<1, 2>(xyzz_t<fp_t>*, const xyzz_t<fp_t>*);
template __global__ void xadd<3, 1>(xyzz_t<fp_t>*, const xyzz_t<fp_t>*);
template __global__ void xadd<3, 2>(xyzz_t<fp_t>*, const xyzz_t<fp_t>*);
template __global__ void mul<fr_t, 1>(fr_t*, const fr_t*);
template __global__ void mul<fr_t, 2>(fr_t*, const fr_t*);
template __global__ void mul<fp_t, 1>(fp_t*, const fp_t*);
template __global__ void mul<fp_t, 2>(fp_t*, const fp_t*);
template __global__ void mul<fp2_t, 1>(fp2_t*, const fp2_t*);
template __global__ void mul<fp2_t, 2>(fp2_t*, const fp2_t*);
template __global__ void butterfly<1>(fr_t*, const fr_t*);
template __global__ void butterfly<2>(fr_t*, const fr_t*);
template __global__ void mul_lowr<1>(fr_t*, const fr_t*);
template __global__ void mul_lowr<2>(fr_t*, const fr_t*);
template __global__ void butterfly_lowr<1>(fr_t*, const fr_t*);
template __global__ void butterfly_lowr<2>(fr_t*, const fr_t*);

// The Fp2 product with lazy reduction (fp2_t::mul_lazy, CUZK_MSM_G2_MUL=1), the
// fused sum (fp2_t::mul2_lazy, =2), and G2's mixed and full XYZZ additions
// with plain (MUL 0) and lazy (MUL 4, 5) Fp2 operations.
template <int K>
__global__ void fp2_lazy(fp2_t* x, const fp2_t* y) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    fp2_t a = x[i];
    const fp2_t b = y[i];
#pragma unroll
    for (int k = 0; k < K; k++) a = fp2_t::mul_lazy(a, b);
    x[i] = a;
}
template <int MUL, int K>
__global__ void g2madd(xyzz_t<fp2_t>* x, const affine_t<fp2_t>* y) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    xyzz_t<fp2_t> a = x[i];
#pragma unroll
    for (int k = 0; k < K; k++) a.add_affine<MUL>(y[K * i + k].x, y[K * i + k].y);
    x[i] = a;
}
template <int MUL, int K>
__global__ void g2xadd(xyzz_t<fp2_t>* x, const xyzz_t<fp2_t>* y) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    xyzz_t<fp2_t> a = x[i];
#pragma unroll
    for (int k = 0; k < K; k++) a.add<MUL>(y[K * i + k]);
    x[i] = a;
}
template <int K>
__global__ void fp2_lazy2(fp2_t* x, const fp2_t* y) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    fp2_t a = x[i];
    const fp2_t b = y[2 * i], c = y[2 * i + 1];
#pragma unroll
    for (int k = 0; k < K; k++) a = fp2_t::mul2_lazy(a, b, c, a);
    x[i] = a;
}
template __global__ void fp2_lazy2<1>(fp2_t*, const fp2_t*);
template __global__ void fp2_lazy2<2>(fp2_t*, const fp2_t*);
template __global__ void g2madd<5, 1>(xyzz_t<fp2_t>*, const affine_t<fp2_t>*);
template __global__ void g2madd<5, 2>(xyzz_t<fp2_t>*, const affine_t<fp2_t>*);
template __global__ void g2xadd<5, 1>(xyzz_t<fp2_t>*, const xyzz_t<fp2_t>*);
template __global__ void g2xadd<5, 2>(xyzz_t<fp2_t>*, const xyzz_t<fp2_t>*);
template __global__ void fp2_lazy<1>(fp2_t*, const fp2_t*);
template __global__ void fp2_lazy<2>(fp2_t*, const fp2_t*);
template __global__ void g2madd<0, 1>(xyzz_t<fp2_t>*, const affine_t<fp2_t>*);
template __global__ void g2madd<0, 2>(xyzz_t<fp2_t>*, const affine_t<fp2_t>*);
template __global__ void g2madd<4, 1>(xyzz_t<fp2_t>*, const affine_t<fp2_t>*);
template __global__ void g2madd<4, 2>(xyzz_t<fp2_t>*, const affine_t<fp2_t>*);
template __global__ void g2xadd<0, 1>(xyzz_t<fp2_t>*, const xyzz_t<fp2_t>*);
template __global__ void g2xadd<0, 2>(xyzz_t<fp2_t>*, const xyzz_t<fp2_t>*);
template __global__ void g2xadd<4, 1>(xyzz_t<fp2_t>*, const xyzz_t<fp2_t>*);
template __global__ void g2xadd<4, 2>(xyzz_t<fp2_t>*, const xyzz_t<fp2_t>*);
