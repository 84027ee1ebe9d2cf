/*
 * cuzkgpu: the C ABI of cuzk's CUDA kernel library (build/libcuzkgpu.so).
 *
 * Conventions:
 *  - Every function returns a cudaError_t value as int: 0 is success;
 *    cuzk_error_name/cuzk_error_string describe any other value.
 *  - Every function that touches a device takes its index first and makes it
 *    current on the calling thread, so callers may move between threads.
 *  - Device pointers, streams, events and domains are opaque uint64_t handles;
 *    stream 0 is the legacy default stream.
 *  - The library allocates no device memory behind its caller's back: the
 *    NTT domains' tables are cudaMalloc'd by cuzk_ntt_domain_create, whose
 *    size cuzk_ntt_domain_bytes tells beforehand, and every temporary of an
 *    NTT or an MSM comes from a scratch buffer the caller passes, sized by
 *    cuzk_ntt_scratch_bytes and cuzk_msm_scratch_bytes. A scratch buffer
 *    smaller than its call needs fails with cudaErrorMemoryAllocation.
 *  - Field elements are gnark-crypto's in-memory layout: Fr 4 x uint64 and Fp
 *    6 x uint64, little-endian limbs, Montgomery form; Fp2 is (A0, A1) in Fp,
 *    as gnark-crypto's E2. G1 affine points are
 *    (x, y) with (0, 0) the point at infinity (96 bytes); Jacobian results are
 *    (X, Y, Z) with Z = 0 at infinity (144 bytes).
 */
#ifndef CUZKGPU_H
#define CUZKGPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUZK_ABI_VERSION 3

int cuzk_abi_version(void);
/* The build-time switches the library was built with, as words "name=value"
 * separated by spaces: fp_mul, fr_mul (CUZK_FP_MUL, CUZK_FR_MUL) and
 * msm_accumulate (xyzz, or affine with CUZK_MSM_AFFINE=1). Added within ABI 3:
 * a caller must not require it (libraries built before it lack it). */
const char* cuzk_build_info(void);
const char* cuzk_error_name(int err);
const char* cuzk_error_string(int err);

/* Devices. */
int cuzk_device_count(int* count);
/* name receives at most name_len bytes including the terminating NUL. */
int cuzk_device_props(int dev, char* name, int name_len, uint64_t* total_mem, int* sm_count, int* cc_major,
                      int* cc_minor, uint64_t* l2_bytes);
int cuzk_mem_info(int dev, uint64_t* free_bytes, uint64_t* total_bytes);
int cuzk_device_sync(int dev);

/* Memory. malloc/free are cudaMalloc/cudaFree (free waits for the whole
 * device); the async pair draws from the device's default stream-ordered pool. */
int cuzk_malloc(int dev, uint64_t* ptr, uint64_t bytes);
int cuzk_free(int dev, uint64_t ptr);
int cuzk_malloc_async(int dev, uint64_t* ptr, uint64_t bytes, uint64_t stream);
int cuzk_free_async(int dev, uint64_t ptr, uint64_t stream);
/* Configures the default pool: bytes kept at a synchronization, and whether an
 * allocation may reuse a block whose free is pending on another stream. */
int cuzk_pool_configure(int dev, uint64_t release_threshold, int reuse_across_streams);
int cuzk_pool_trim(int dev, uint64_t keep_bytes);
int cuzk_host_alloc(int dev, void** ptr, uint64_t bytes);
int cuzk_host_free(int dev, void* ptr);

/* Copies. stream-ordered (async with respect to the host only for pinned
 * host memory); cuzk_memcpy_* with stream 0 and a following sync behave as
 * plain synchronous copies. */
int cuzk_memcpy_htod(int dev, uint64_t dst, const void* src, uint64_t bytes, uint64_t stream);
int cuzk_memcpy_dtoh(int dev, void* dst, uint64_t src, uint64_t bytes, uint64_t stream);
int cuzk_memcpy_dtod(int dev, uint64_t dst, uint64_t src, uint64_t bytes, uint64_t stream);
int cuzk_memset(int dev, uint64_t dst, int value, uint64_t bytes, uint64_t stream);

/* Streams and events. Streams are non-blocking (no implicit sync with the
 * legacy default stream). */
int cuzk_stream_create(int dev, uint64_t* stream);
int cuzk_stream_destroy(int dev, uint64_t stream);
int cuzk_stream_sync(int dev, uint64_t stream);
int cuzk_event_create(int dev, uint64_t* event);
int cuzk_event_destroy(int dev, uint64_t event);
int cuzk_event_record(int dev, uint64_t event, uint64_t stream);
int cuzk_event_sync(int dev, uint64_t event);
int cuzk_event_elapsed_ms(int dev, float* ms, uint64_t start, uint64_t end);

/* NTT over Fr. A domain holds the tables for one size 2^log_n (log_n <= 27):
 * omega is a primitive 2^log_n-th root of unity, n_inv = 1/2^log_n, g the
 * coset shift (gnark-crypto's domain.FrMultiplicativeGen), z_inv = 1/(g^n - 1);
 * each is 4 x uint64 in Montgomery form. */
int cuzk_ntt_domain_create(int dev, uint64_t* domain, int log_n, const uint64_t* omega, const uint64_t* omega_inv,
                           const uint64_t* n_inv, const uint64_t* g, const uint64_t* g_inv, const uint64_t* z_inv,
                           uint64_t stream);
int cuzk_ntt_domain_destroy(int dev, uint64_t domain);
/* The device memory a domain of 2^log_n takes while it is made (its tables and
 * two temporaries, at the 2 MiB granularity of device allocations). */
int cuzk_ntt_domain_bytes(int log_n, uint64_t* bytes);
/* The scratch a transform of 2^log_n elements needs (0 when it needs none). */
int cuzk_ntt_scratch_bytes(int log_n, uint64_t* bytes);
/* In place on n elements at data, natural order in and out. inverse != 0
 * interpolates (includes the 1/n); coset != 0 evaluates on g*<omega> (forward:
 * FFT of x[i]*g^i) or interpolates from it (inverse: IFFT(x)[i]*g^-i).
 * scratch: a device buffer of scratch_bytes (at least cuzk_ntt_scratch_bytes),
 * in use until the stream has run the transform (the call returns once it is
 * queued); 0: the transform runs in place, with a bit-reversal pass at the
 * end (slower, and no scratch). */
int cuzk_ntt(int dev, uint64_t domain, uint64_t data, int inverse, int coset, uint64_t scratch, uint64_t scratch_bytes,
             uint64_t stream);
/* Groth16's quotient step on coset evaluations: a[i] = (a[i]*b[i] - c[i]) * z_inv. */
int cuzk_groth16_h(int dev, uint64_t domain, uint64_t a, uint64_t b, uint64_t c, uint64_t stream);
/* The same in two steps, for two vectors on the device: a[i] = a[i]*b[i], then
 * (with c where b was) a[i] = (a[i] - c[i]) * z_inv. */
int cuzk_groth16_mul(int dev, uint64_t domain, uint64_t a, uint64_t b, uint64_t stream);
int cuzk_groth16_sub_div(int dev, uint64_t domain, uint64_t a, uint64_t c, uint64_t stream);

/* Fixed-base multiplication: out[i] = scalars[i] * G for i < n, with G given
 * by its table of c-bit windows (1 <= window = c <= 16): ceil(255/c) windows
 * of 2^c affine points in the G1Affine layout, table[w * 2^c + k] =
 * k * 2^(c*w) * G (entry k = 0 of each window unused). scalars are 32 bytes
 * each, Montgomery form, below r; out receives n Jacobian points (18 x
 * uint64 each, Z = 0 at infinity). table, scalars and out are device
 * pointers; the call is stream-ordered and returns once the work is queued. */
int cuzk_fixed_base_g1(int dev, uint64_t table, int window, uint64_t scalars, uint64_t n, uint64_t out_jac,
                       uint64_t stream);
/* As cuzk_fixed_base_g1 on G2: table in the G2Affine layout (192 bytes a
 * point), out 36 x uint64 a point. */
int cuzk_fixed_base_g2(int dev, uint64_t table, int window, uint64_t scalars, uint64_t n, uint64_t out_jac,
                       uint64_t stream);

/* Flags of the _ex MSMs. CUZK_MSM_SPLIT: classify the scalars after
 * reduction mod r, drop the zeros, add the points whose scalar is one with
 * plain additions and run Pippenger on the other scalars only (the result is
 * the same group element). */
#define CUZK_MSM_SPLIT 1
/* CUZK_MSM_COPIES(t), t in 2..32: points is a table of t copies of the n
 * points that cuzk_msm_table_g1/_g2 built for n points, this window and t
 * copies (the window must be the table's, 4..24). Added within ABI 3:
 * libraries built before it reject the bits, and lack the table calls. */
#define CUZK_MSM_COPIES_SHIFT 8
#define CUZK_MSM_COPIES_MASK (0xff << CUZK_MSM_COPIES_SHIFT)
#define CUZK_MSM_COPIES(t) ((t) << CUZK_MSM_COPIES_SHIFT)

/* G1 MSM: sum scalars[i] * points[i], i < n (n < 2^31). points and scalars are
 * device pointers; scalars are 32 bytes each, in Montgomery form if
 * scalars_mont != 0, else canonical little-endian integers (any 256-bit value,
 * reduced mod r). window = 0 picks the window size. scratch is a device buffer
 * of scratch_bytes, at least what cuzk_msm_scratch_bytes says for the same n,
 * window and flags (the call blocks, so the buffer is free again when it
 * returns). Blocks until the result is in out_jac (18 x uint64).
 * flags: CUZK_MSM_* (other bits are rejected). counts: if not NULL, 3 x
 * uint64 receiving the numbers of zero, one and other scalars (without
 * CUZK_MSM_SPLIT the scalars are not classified: 0, 0, n).
 * G2 (cuzk_msm_g2_ex): the same, with points in gnark-crypto's G2Affine
 * layout: x and y in Fp2, each (A0, A1) of 6 x uint64 (192 bytes a point, all
 * zero at infinity); the Jacobian result (X, Y, Z in Fp2, Z = 0 at infinity)
 * is 36 x uint64 in out_jac. (ABI 2 dropped the flagless cuzk_msm_g1/_g2; ABI 3
 * added the scratch arguments.) */
int cuzk_msm_g1_ex(int dev, uint64_t points, uint64_t scalars, uint64_t n, int scalars_mont, int window, int flags,
                   uint64_t scratch, uint64_t scratch_bytes, uint64_t* out_jac, uint64_t* counts, uint64_t stream);
int cuzk_msm_g2_ex(int dev, uint64_t points, uint64_t scalars, uint64_t n, int scalars_mont, int window, int flags,
                   uint64_t scratch, uint64_t scratch_bytes, uint64_t* out_jac, uint64_t* counts, uint64_t stream);
/* The scratch an MSM of n points needs on G1 (g2 == 0) or G2 (g2 != 0) with
 * this window and these flags: with CUZK_MSM_SPLIT, the most over every mix of
 * 0, 1 and other scalars. */
int cuzk_msm_scratch_bytes(int dev, int g2, uint64_t n, int window, int flags, uint64_t* bytes);

/* Precomputed tables of fixed bases (added within ABI 3; a caller must not
 * require them). A table of t copies of n points holds, in row k (n points,
 * the points' layout), 2^(c*g*k) times the points, c the window and
 * g = ceil(nw / t) the windows a copy covers (nw = 255 / c + 1); row 0 is
 * the points themselves. An MSM over it (flags CUZK_MSM_COPIES(t), window c)
 * sums into one set of buckets per g windows instead of per window.
 * cuzk_msm_table_shape: the window (window = 0: the library's choice for
 * tables, else 4..24), copies (copies = 0: one per window, else 1..32,
 * t * n < 2^31) and bytes of the table for n points on G1 or G2.
 * cuzk_msm_table_g1/_g2: launches the table's construction on stream for
 * that window and copies (asynchronous): points may be the table's own
 * first row. */
int cuzk_msm_table_shape(int dev, int g2, uint64_t n, int window, int copies, int* window_out, int* copies_out,
                         uint64_t* bytes);
int cuzk_msm_table_g1(int dev, uint64_t points, uint64_t n, int window, int copies, uint64_t table, uint64_t stream);
int cuzk_msm_table_g2(int dev, uint64_t points, uint64_t n, int window, int copies, uint64_t table, uint64_t stream);

#ifdef __cplusplus
}
#endif

#endif /* CUZKGPU_H */
