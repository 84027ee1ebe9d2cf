// Precomputed multiples of fixed MSM bases. The points of a proving key are
// the same in every proof, so their multiples by the windows' powers of two
// can be made once: a table of t copies, row k (of n points) holding
// 2^(c·g·k)·P_j, g = ceil(nw / t) the windows each copy covers. Window
// w = k·g + l of scalar s_j then multiplies row k's point in virtual window
// l, and an MSM over the table (pippenger's copies argument) runs g virtual
// windows of t·n entries: the same additions into buckets, but one set of
// buckets, bucket sums and doublings per virtual window instead of per
// window. With t = nw (one virtual window) the bucket sums run once and the
// host adds no doublings; a larger window pays for itself sooner, so the
// table's window comes from its own cost model (table_window). The price is
// t times the points' memory on the device.
#pragma once
#include "pippenger.cuh"

namespace cuzk {
namespace msm {

// A table's window, copies and bytes for n points.
struct table_shape {
    int c = 0, copies = 0;
    uint64_t bytes = 0;
};

// The table of n points for a window (0: table_window's) and copies (0: one
// per window; else 1..MAX_COPIES). copies·n must stay below 2^31, the
// point indices of the sorted digits.
template <class F>
inline cudaError_t table_shape_for(uint64_t n, int window, int copies, table_shape* t) {
    *t = table_shape{};
    if (copies < 0 || copies > MAX_COPIES) return cudaErrorInvalidValue;
    if (window != 0 && (window < 4 || window > 24)) return cudaErrorInvalidValue;
    if (n == 0 || n >= (1ull << 31)) return cudaErrorInvalidValue;
    t->c = window != 0 ? window : table_window(n, copies);
    t->copies = table_copies(t->c, copies);
    if ((uint64_t)t->copies * n >= (1ull << 31)) return cudaErrorInvalidValue;
    t->bytes = (uint64_t)t->copies * n * sizeof(affine_t<F>);
    return cudaSuccess;
}

// One thread per point: row 0 is the point, row k is 2^step times row k - 1,
// by doublings in XYZZ and one inversion per row back to affine (x = X/ZZ,
// y = Y/ZZZ, with 1/ZZ = (ZZ/ZZZ)^2). points may be table itself (its first
// row holds the points already). Infinity stays infinity in every row; no
// other point of the prime-order group doubles to it.
template <class F>
__global__ void __launch_bounds__(128) k_table(const affine_t<F>* points, uint64_t n, int copies, int step,
                                               affine_t<F>* table) {
    const uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const affine_t<F> P = load_point(points + j);
    table[j] = P;
    xyzz_t<F> acc = xyzz_t<F>::from_affine(P);
#pragma unroll 1
    for (int k = 1; k < copies; k++) {
#pragma unroll 1
        for (int i = 0; i < step; i++) acc = acc.dbl();
        affine_t<F> a;
        if (acc.is_inf()) {
            a.x = F::zero();
            a.y = F::zero();
        } else {
            const F zi = inverse(acc.ZZZ);  // Z^-3
            const F zinv = zi * acc.ZZ;     // Z^-1
            a.x = acc.X * zinv.sqr();
            a.y = acc.Y * zi;
        }
        table[(uint64_t)k * n + j] = a;
    }
}

// Launches the table of n points (device, gnark affine layout) into table
// (device, table_shape_for's bytes) on st, for a window and copies as
// table_shape_for takes them. Asynchronous.
template <class F>
inline cudaError_t build_table(const affine_t<F>* points, uint64_t n, int window, int copies, affine_t<F>* table,
                               cudaStream_t st) {
    table_shape t;
    cudaError_t err = table_shape_for<F>(n, window, copies, &t);
    if (err != cudaSuccess) return err;
    const int step = t.c * copy_windows(t.c, t.copies);
    k_table<F><<<nblocks(n, 128), 128, 0, st>>>(points, n, t.copies, step, table);
    return cudaGetLastError();
}

}  // namespace msm
}  // namespace cuzk
