// The C ABI (cuda/include/cuzkgpu.h): argument checks, device selection, and
// translation between opaque handles and the templates below.
#include <string.h>
#include "../include/cuzkgpu.h"

namespace {

inline cudaStream_t S(uint64_t h) { return reinterpret_cast<cudaStream_t>(h); }
inline cudaEvent_t E(uint64_t h) { return reinterpret_cast<cudaEvent_t>(h); }
inline void* P(uint64_t h) { return reinterpret_cast<void*>(h); }

inline cuzk::fr_t fr_from(const uint64_t* limbs) {
    cuzk::fr_t r;
    memcpy(r.v, limbs, sizeof(r.v));
    return r;
}

// The _ex MSMs' flags: CUZK_MSM_SPLIT and a table's copies.
inline bool flags_ok(int flags) {
    if (flags & ~(CUZK_MSM_SPLIT | CUZK_MSM_COPIES_MASK)) return false;
    const int t = (flags & CUZK_MSM_COPIES_MASK) >> CUZK_MSM_COPIES_SHIFT;
    return t == 0 || (t >= 2 && t <= cuzk::msm::MAX_COPIES);
}

inline int copies_of(int flags) {
    const int t = (flags & CUZK_MSM_COPIES_MASK) >> CUZK_MSM_COPIES_SHIFT;
    return t == 0 ? 1 : t;
}

}  // namespace

// cudaGetLastError also reports failures of earlier runtime calls (a failed
// cudaMalloc sets it), so every entry point clears it before its own work:
// kernels check it after launching and must see only their own errors.
#define SET_DEVICE(dev)                                    \
    do {                                                   \
        cudaError_t e_ = cudaSetDevice(dev);               \
        if (e_ != cudaSuccess) return (int)e_;             \
        (void)cudaGetLastError();                          \
    } while (0)

extern "C" {

int cuzk_abi_version(void) { return CUZK_ABI_VERSION; }

#define CUZK_STR_(x) #x
#define CUZK_STR(x) CUZK_STR_(x)
const char* cuzk_build_info(void) {
    return "fp_mul=" CUZK_STR(CUZK_FP_MUL) " fr_mul=" CUZK_STR(CUZK_FR_MUL) " msm_accumulate="
#if CUZK_MSM_AFFINE
           "affine"
#else
           "xyzz"
#endif
        ;
}
#undef CUZK_STR
#undef CUZK_STR_
const char* cuzk_error_name(int err) { return cudaGetErrorName((cudaError_t)err); }
const char* cuzk_error_string(int err) { return cudaGetErrorString((cudaError_t)err); }

int cuzk_device_count(int* count) {
    if (!count) return cudaErrorInvalidValue;
    *count = 0;
    return (int)cudaGetDeviceCount(count);
}

int cuzk_device_props(int dev, char* name, int name_len, uint64_t* total_mem, int* sm_count, int* cc_major,
                      int* cc_minor, uint64_t* l2_bytes) {
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, dev);
    if (e != cudaSuccess) return (int)e;
    if (name && name_len > 0) {
        strncpy(name, p.name, (size_t)name_len - 1);
        name[name_len - 1] = 0;
    }
    if (total_mem) *total_mem = p.totalGlobalMem;
    if (sm_count) *sm_count = p.multiProcessorCount;
    if (cc_major) *cc_major = p.major;
    if (cc_minor) *cc_minor = p.minor;
    if (l2_bytes) *l2_bytes = (uint64_t)p.l2CacheSize;
    return 0;
}

int cuzk_mem_info(int dev, uint64_t* free_bytes, uint64_t* total_bytes) {
    SET_DEVICE(dev);
    size_t f = 0, t = 0;
    cudaError_t e = cudaMemGetInfo(&f, &t);
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
    return (int)e;
}

int cuzk_device_sync(int dev) {
    SET_DEVICE(dev);
    return (int)cudaDeviceSynchronize();
}

int cuzk_malloc(int dev, uint64_t* ptr, uint64_t bytes) {
    if (!ptr) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes);
    *ptr = reinterpret_cast<uint64_t>(p);
    return (int)e;
}

int cuzk_free(int dev, uint64_t ptr) {
    SET_DEVICE(dev);
    return (int)cudaFree(P(ptr));
}

int cuzk_malloc_async(int dev, uint64_t* ptr, uint64_t bytes, uint64_t stream) {
    if (!ptr) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    void* p = nullptr;
    cudaError_t e = cudaMallocAsync(&p, bytes, S(stream));
    *ptr = reinterpret_cast<uint64_t>(p);
    return (int)e;
}

int cuzk_free_async(int dev, uint64_t ptr, uint64_t stream) {
    SET_DEVICE(dev);
    return (int)cudaFreeAsync(P(ptr), S(stream));
}

int cuzk_pool_configure(int dev, uint64_t release_threshold, int reuse_across_streams) {
    SET_DEVICE(dev);
    cudaMemPool_t pool;
    cudaError_t e = cudaDeviceGetDefaultMemPool(&pool, dev);
    if (e != cudaSuccess) return (int)e;
    unsigned long long thr = release_threshold;
    e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr);
    if (e != cudaSuccess) return (int)e;
    int reuse = reuse_across_streams ? 1 : 0;
    return (int)cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &reuse);
}

int cuzk_pool_trim(int dev, uint64_t keep_bytes) {
    SET_DEVICE(dev);
    cudaMemPool_t pool;
    cudaError_t e = cudaDeviceGetDefaultMemPool(&pool, dev);
    if (e != cudaSuccess) return (int)e;
    return (int)cudaMemPoolTrimTo(pool, keep_bytes);
}

int cuzk_host_alloc(int dev, void** ptr, uint64_t bytes) {
    if (!ptr) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    return (int)cudaHostAlloc(ptr, bytes, cudaHostAllocPortable);
}

int cuzk_host_free(int dev, void* ptr) {
    SET_DEVICE(dev);
    return (int)cudaFreeHost(ptr);
}

int cuzk_memcpy_htod(int dev, uint64_t dst, const void* src, uint64_t bytes, uint64_t stream) {
    SET_DEVICE(dev);
    return (int)cudaMemcpyAsync(P(dst), src, bytes, cudaMemcpyHostToDevice, S(stream));
}

int cuzk_memcpy_dtoh(int dev, void* dst, uint64_t src, uint64_t bytes, uint64_t stream) {
    SET_DEVICE(dev);
    return (int)cudaMemcpyAsync(dst, P(src), bytes, cudaMemcpyDeviceToHost, S(stream));
}

int cuzk_memcpy_dtod(int dev, uint64_t dst, uint64_t src, uint64_t bytes, uint64_t stream) {
    SET_DEVICE(dev);
    return (int)cudaMemcpyAsync(P(dst), P(src), bytes, cudaMemcpyDeviceToDevice, S(stream));
}

int cuzk_memset(int dev, uint64_t dst, int value, uint64_t bytes, uint64_t stream) {
    SET_DEVICE(dev);
    return (int)cudaMemsetAsync(P(dst), value, bytes, S(stream));
}

int cuzk_stream_create(int dev, uint64_t* stream) {
    if (!stream) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    cudaStream_t s = nullptr;
    cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    *stream = reinterpret_cast<uint64_t>(s);
    return (int)e;
}

int cuzk_stream_destroy(int dev, uint64_t stream) {
    SET_DEVICE(dev);
    return (int)cudaStreamDestroy(S(stream));
}

int cuzk_stream_sync(int dev, uint64_t stream) {
    SET_DEVICE(dev);
    return (int)cudaStreamSynchronize(S(stream));
}

int cuzk_event_create(int dev, uint64_t* event) {
    if (!event) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    cudaEvent_t ev = nullptr;
    cudaError_t e = cudaEventCreate(&ev);
    *event = reinterpret_cast<uint64_t>(ev);
    return (int)e;
}

int cuzk_event_destroy(int dev, uint64_t event) {
    SET_DEVICE(dev);
    return (int)cudaEventDestroy(E(event));
}

int cuzk_event_record(int dev, uint64_t event, uint64_t stream) {
    SET_DEVICE(dev);
    return (int)cudaEventRecord(E(event), S(stream));
}

int cuzk_event_sync(int dev, uint64_t event) {
    SET_DEVICE(dev);
    return (int)cudaEventSynchronize(E(event));
}

int cuzk_event_elapsed_ms(int dev, float* ms, uint64_t start, uint64_t end) {
    if (!ms) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    return (int)cudaEventElapsedTime(ms, E(start), E(end));
}

int cuzk_ntt_domain_create(int dev, uint64_t* domain, int log_n, const uint64_t* omega, const uint64_t* omega_inv,
                           const uint64_t* n_inv, const uint64_t* g, const uint64_t* g_inv, const uint64_t* z_inv,
                           uint64_t stream) {
    if (!domain || !omega || !omega_inv || !n_inv || !g || !g_inv || !z_inv) return cudaErrorInvalidValue;
    if (log_n < 0 || log_n > cuzk::ntt::MAX_LOG_N) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    cuzk::ntt::domain_t* d = new cuzk::ntt::domain_t;
    cudaError_t e = cuzk::ntt::domain_create(d, log_n, fr_from(omega), fr_from(omega_inv), fr_from(n_inv), fr_from(g),
                                             fr_from(g_inv), fr_from(z_inv), S(stream));
    if (e != cudaSuccess) {
        delete d;
        *domain = 0;
        return (int)e;
    }
    *domain = reinterpret_cast<uint64_t>(d);
    return 0;
}

int cuzk_ntt_domain_destroy(int dev, uint64_t domain) {
    if (!domain) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    cuzk::ntt::domain_t* d = reinterpret_cast<cuzk::ntt::domain_t*>(domain);
    cuzk::ntt::domain_destroy(d);
    delete d;
    return 0;
}

int cuzk_ntt_domain_bytes(int log_n, uint64_t* bytes) {
    if (!bytes || log_n < 0 || log_n > cuzk::ntt::MAX_LOG_N) return cudaErrorInvalidValue;
    *bytes = cuzk::ntt::domain_bytes(log_n);
    return 0;
}

int cuzk_ntt_scratch_bytes(int log_n, uint64_t* bytes) {
    if (!bytes || log_n < 0 || log_n > cuzk::ntt::MAX_LOG_N) return cudaErrorInvalidValue;
    *bytes = cuzk::ntt::scratch_bytes(log_n);
    return 0;
}

int cuzk_ntt(int dev, uint64_t domain, uint64_t data, int inverse, int coset, uint64_t scratch, uint64_t scratch_bytes,
             uint64_t stream) {
    if (!domain || !data) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    const cuzk::ntt::domain_t* d = reinterpret_cast<const cuzk::ntt::domain_t*>(domain);
    return (int)cuzk::ntt::transform(*d, reinterpret_cast<cuzk::fr_t*>(data), inverse != 0, coset != 0,
                                     reinterpret_cast<cuzk::fr_t*>(scratch), scratch_bytes, S(stream));
}

int cuzk_groth16_h(int dev, uint64_t domain, uint64_t a, uint64_t b, uint64_t c, uint64_t stream) {
    if (!domain || !a || !b || !c) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    const cuzk::ntt::domain_t* d = reinterpret_cast<const cuzk::ntt::domain_t*>(domain);
    return (int)cuzk::ntt::groth16_h(*d, reinterpret_cast<cuzk::fr_t*>(a), reinterpret_cast<const cuzk::fr_t*>(b),
                                     reinterpret_cast<const cuzk::fr_t*>(c), S(stream));
}

int cuzk_groth16_mul(int dev, uint64_t domain, uint64_t a, uint64_t b, uint64_t stream) {
    if (!domain || !a || !b) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    const cuzk::ntt::domain_t* d = reinterpret_cast<const cuzk::ntt::domain_t*>(domain);
    return (int)cuzk::ntt::groth16_mul(*d, reinterpret_cast<cuzk::fr_t*>(a), reinterpret_cast<const cuzk::fr_t*>(b),
                                       S(stream));
}

int cuzk_groth16_sub_div(int dev, uint64_t domain, uint64_t a, uint64_t c, uint64_t stream) {
    if (!domain || !a || !c) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    const cuzk::ntt::domain_t* d = reinterpret_cast<const cuzk::ntt::domain_t*>(domain);
    return (int)cuzk::ntt::groth16_sub_div(*d, reinterpret_cast<cuzk::fr_t*>(a), reinterpret_cast<const cuzk::fr_t*>(c),
                                           S(stream));
}

int cuzk_fixed_base_g1(int dev, uint64_t table, int window, uint64_t scalars, uint64_t n, uint64_t out_jac,
                       uint64_t stream) {
    if (n > 0 && (!table || !scalars || !out_jac)) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    static_assert(sizeof(cuzk::msm::g1_jacobian) == 18 * sizeof(uint64_t), "Jacobian G1 point is 18 limbs");
    return (int)cuzk::fixedbase::run(reinterpret_cast<const cuzk::msm::g1_affine*>(table), window,
                                     reinterpret_cast<const cuzk::fr_t*>(scalars), n,
                                     reinterpret_cast<cuzk::msm::g1_jacobian*>(out_jac), S(stream));
}

int cuzk_fixed_base_g2(int dev, uint64_t table, int window, uint64_t scalars, uint64_t n, uint64_t out_jac,
                       uint64_t stream) {
    if (n > 0 && (!table || !scalars || !out_jac)) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    static_assert(sizeof(cuzk::msm::g2_jacobian) == 36 * sizeof(uint64_t), "Jacobian G2 point is 36 limbs");
    return (int)cuzk::fixedbase::run(reinterpret_cast<const cuzk::msm::g2_affine*>(table), window,
                                     reinterpret_cast<const cuzk::fr_t*>(scalars), n,
                                     reinterpret_cast<cuzk::msm::g2_jacobian*>(out_jac), S(stream));
}

int cuzk_msm_g1_ex(int dev, uint64_t points, uint64_t scalars, uint64_t n, int scalars_mont, int window, int flags,
                   uint64_t scratch, uint64_t scratch_bytes, uint64_t* out_jac, uint64_t* counts, uint64_t stream) {
    if (!out_jac || (n > 0 && (!points || !scalars)) || !flags_ok(flags)) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    cuzk::msm::g1_jacobian r;
    cudaError_t e = cuzk::msm::run(reinterpret_cast<const cuzk::msm::g1_affine*>(points),
                                   reinterpret_cast<const cuzk::fr_t*>(scalars), n, scalars_mont != 0, &r, P(scratch),
                                   scratch_bytes, S(stream), window, (flags & CUZK_MSM_SPLIT) != 0, counts,
                                   copies_of(flags));
    if (e != cudaSuccess) return (int)e;
    static_assert(sizeof(r) == 18 * sizeof(uint64_t), "Jacobian result is 18 limbs");
    memcpy(out_jac, &r, sizeof(r));
    return 0;
}

int cuzk_msm_g2_ex(int dev, uint64_t points, uint64_t scalars, uint64_t n, int scalars_mont, int window, int flags,
                   uint64_t scratch, uint64_t scratch_bytes, uint64_t* out_jac, uint64_t* counts, uint64_t stream) {
    if (!out_jac || (n > 0 && (!points || !scalars)) || !flags_ok(flags)) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    cuzk::msm::g2_jacobian r;
    cudaError_t e = cuzk::msm::run(reinterpret_cast<const cuzk::msm::g2_affine*>(points),
                                   reinterpret_cast<const cuzk::fr_t*>(scalars), n, scalars_mont != 0, &r, P(scratch),
                                   scratch_bytes, S(stream), window, (flags & CUZK_MSM_SPLIT) != 0, counts,
                                   copies_of(flags));
    if (e != cudaSuccess) return (int)e;
    static_assert(sizeof(r) == 36 * sizeof(uint64_t), "Jacobian G2 result is 36 limbs");
    memcpy(out_jac, &r, sizeof(r));
    return 0;
}

int cuzk_msm_scratch_bytes(int dev, int g2, uint64_t n, int window, int flags, uint64_t* bytes) {
    if (!bytes || !flags_ok(flags)) return cudaErrorInvalidValue;
    SET_DEVICE(dev);  // CUB's storage query reads the device's properties
    const bool split = (flags & CUZK_MSM_SPLIT) != 0;
    const int copies = copies_of(flags);
    return (int)(g2 ? cuzk::msm::scratch_bytes<cuzk::fp2_t>(n, window, split, bytes, copies)
                    : cuzk::msm::scratch_bytes<cuzk::fp_t>(n, window, split, bytes, copies));
}

int cuzk_msm_table_shape(int dev, int g2, uint64_t n, int window, int copies, int* window_out, int* copies_out,
                         uint64_t* bytes) {
    if (!window_out || !copies_out || !bytes) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    cuzk::msm::table_shape t;
    const cudaError_t e = g2 ? cuzk::msm::table_shape_for<cuzk::fp2_t>(n, window, copies, &t)
                             : cuzk::msm::table_shape_for<cuzk::fp_t>(n, window, copies, &t);
    *window_out = t.c;
    *copies_out = t.copies;
    *bytes = t.bytes;
    return (int)e;
}

int cuzk_msm_table_g1(int dev, uint64_t points, uint64_t n, int window, int copies, uint64_t table, uint64_t stream) {
    if (!points || !table) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    return (int)cuzk::msm::build_table(reinterpret_cast<const cuzk::msm::g1_affine*>(points), n, window, copies,
                                       reinterpret_cast<cuzk::msm::g1_affine*>(P(table)), S(stream));
}

int cuzk_msm_table_g2(int dev, uint64_t points, uint64_t n, int window, int copies, uint64_t table, uint64_t stream) {
    if (!points || !table) return cudaErrorInvalidValue;
    SET_DEVICE(dev);
    return (int)cuzk::msm::build_table(reinterpret_cast<const cuzk::msm::g2_affine*>(points), n, window, copies,
                                       reinterpret_cast<cuzk::msm::g2_affine*>(P(table)), S(stream));
}

}  // extern "C"
