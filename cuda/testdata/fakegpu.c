// A stand-in for the kernel library on a machine without a GPU: one device
// whose memory is host memory, with a capacity and a ledger, so that the Go
// layers above the C ABI (cuda, gpuprove.Device) can be tested in CI. Every
// stream-ordered call runs at once on the host: the library keeps CUDA's
// interface, not its asynchrony. The kernels (NTT, MSM) are not provided.
// Built by the tests with the host C compiler: cc -shared -fPIC.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#define OK 0
#define INVALID 1        /* cudaErrorInvalidValue */
#define NO_MEMORY 2      /* cudaErrorMemoryAllocation */
#define NOT_SUPPORTED 801 /* cudaErrorNotSupported */
#define ABI_VERSION 2

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t used;
static uint64_t next_handle = 1;

static uint64_t capacity(void) {
    const char* s = getenv("CUZK_FAKE_GPU_BYTES");
    return s ? strtoull(s, NULL, 10) : (1ull << 30);
}

/* Each allocation is preceded by its size, so that free can return it. */
static int take(uint64_t* ptr, uint64_t bytes) {
    if (!ptr) return INVALID;
    pthread_mutex_lock(&mu);
    if (used + bytes > capacity()) {
        pthread_mutex_unlock(&mu);
        return NO_MEMORY;
    }
    uint64_t* p = calloc(1, bytes + 16);
    if (!p) {
        pthread_mutex_unlock(&mu);
        return NO_MEMORY;
    }
    used += bytes;
    pthread_mutex_unlock(&mu);
    p[0] = bytes;
    *ptr = (uint64_t)(uintptr_t)(p + 2);
    return OK;
}

static int give(uint64_t ptr) {
    if (!ptr) return OK;
    uint64_t* p = (uint64_t*)(uintptr_t)ptr - 2;
    pthread_mutex_lock(&mu);
    used -= p[0];
    pthread_mutex_unlock(&mu);
    free(p);
    return OK;
}

static uint64_t handle(void) {
    pthread_mutex_lock(&mu);
    uint64_t h = next_handle++;
    pthread_mutex_unlock(&mu);
    return h;
}

int cuzk_abi_version(void) { return ABI_VERSION; }
const char* cuzk_error_name(int err) {
    switch (err) {
    case OK: return "cudaSuccess";
    case INVALID: return "cudaErrorInvalidValue";
    case NO_MEMORY: return "cudaErrorMemoryAllocation";
    case NOT_SUPPORTED: return "cudaErrorNotSupported";
    }
    return "cudaErrorUnknown";
}
const char* cuzk_error_string(int err) {
    switch (err) {
    case OK: return "no error";
    case INVALID: return "invalid argument";
    case NO_MEMORY: return "out of memory";
    case NOT_SUPPORTED: return "operation not supported (the stand-in library has no kernels)";
    }
    return "unknown error";
}

int cuzk_device_count(int* count) { *count = 1; return OK; }
int cuzk_device_props(int dev, char* name, int name_len, uint64_t* total_mem, int* sm_count, int* cc_major,
                      int* cc_minor, uint64_t* l2_bytes) {
    if (dev != 0) return INVALID;
    strncpy(name, "host stand-in", name_len - 1);
    name[name_len - 1] = 0;
    *total_mem = capacity();
    *sm_count = 1;
    *cc_major = 9;
    *cc_minor = 0;
    *l2_bytes = 0;
    return OK;
}
int cuzk_mem_info(int dev, uint64_t* free_bytes, uint64_t* total_bytes) {
    if (dev != 0) return INVALID;
    pthread_mutex_lock(&mu);
    *free_bytes = capacity() - used;
    pthread_mutex_unlock(&mu);
    *total_bytes = capacity();
    return OK;
}
int cuzk_device_sync(int dev) { return dev == 0 ? OK : INVALID; }

int cuzk_malloc(int dev, uint64_t* ptr, uint64_t bytes) { return dev == 0 ? take(ptr, bytes) : INVALID; }
int cuzk_free(int dev, uint64_t ptr) { return dev == 0 ? give(ptr) : INVALID; }
int cuzk_malloc_async(int dev, uint64_t* ptr, uint64_t bytes, uint64_t stream) { (void)stream; return cuzk_malloc(dev, ptr, bytes); }
int cuzk_free_async(int dev, uint64_t ptr, uint64_t stream) { (void)stream; return cuzk_free(dev, ptr); }
int cuzk_pool_configure(int dev, uint64_t release_threshold, int reuse_across_streams) {
    (void)release_threshold; (void)reuse_across_streams;
    return dev == 0 ? OK : INVALID;
}
int cuzk_pool_trim(int dev, uint64_t keep_bytes) { (void)keep_bytes; return dev == 0 ? OK : INVALID; }
int cuzk_host_alloc(int dev, void** ptr, uint64_t bytes) {
    (void)dev;
    *ptr = calloc(1, bytes ? bytes : 1);
    return *ptr ? OK : NO_MEMORY;
}
int cuzk_host_free(int dev, void* ptr) { (void)dev; free(ptr); return OK; }

int cuzk_memcpy_htod(int dev, uint64_t dst, const void* src, uint64_t bytes, uint64_t stream) {
    (void)dev; (void)stream;
    if (bytes && (!dst || !src)) return INVALID;
    memcpy((void*)(uintptr_t)dst, src, bytes);
    return OK;
}
int cuzk_memcpy_dtoh(int dev, void* dst, uint64_t src, uint64_t bytes, uint64_t stream) {
    (void)dev; (void)stream;
    if (bytes && (!dst || !src)) return INVALID;
    memcpy(dst, (const void*)(uintptr_t)src, bytes);
    return OK;
}
int cuzk_memcpy_dtod(int dev, uint64_t dst, uint64_t src, uint64_t bytes, uint64_t stream) {
    (void)dev; (void)stream;
    if (bytes && (!dst || !src)) return INVALID;
    memmove((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, bytes);
    return OK;
}
int cuzk_memset(int dev, uint64_t dst, int value, uint64_t bytes, uint64_t stream) {
    (void)dev; (void)stream;
    if (bytes && !dst) return INVALID;
    memset((void*)(uintptr_t)dst, value, bytes);
    return OK;
}

int cuzk_stream_create(int dev, uint64_t* stream) { (void)dev; *stream = handle(); return OK; }
int cuzk_stream_destroy(int dev, uint64_t stream) { (void)dev; (void)stream; return OK; }
int cuzk_stream_sync(int dev, uint64_t stream) { (void)dev; (void)stream; return OK; }
int cuzk_event_create(int dev, uint64_t* event) { (void)dev; *event = handle(); return OK; }
int cuzk_event_destroy(int dev, uint64_t event) { (void)dev; (void)event; return OK; }
int cuzk_event_record(int dev, uint64_t event, uint64_t stream) { (void)dev; (void)event; (void)stream; return OK; }
int cuzk_event_sync(int dev, uint64_t event) { (void)dev; (void)event; return OK; }
int cuzk_event_elapsed_ms(int dev, float* ms, uint64_t start, uint64_t end) {
    (void)dev; (void)start; (void)end;
    *ms = 0;
    return OK;
}

int cuzk_ntt_domain_create(int dev, uint64_t* domain, int log_n, const uint64_t* omega, const uint64_t* omega_inv,
                           const uint64_t* n_inv, const uint64_t* g, const uint64_t* g_inv, const uint64_t* z_inv,
                           uint64_t stream) {
    (void)dev; (void)domain; (void)log_n; (void)omega; (void)omega_inv; (void)n_inv; (void)g; (void)g_inv;
    (void)z_inv; (void)stream;
    return NOT_SUPPORTED;
}
int cuzk_ntt_domain_destroy(int dev, uint64_t domain) { (void)dev; (void)domain; return NOT_SUPPORTED; }
int cuzk_ntt(int dev, uint64_t domain, uint64_t data, int inverse, int coset, uint64_t stream) {
    (void)dev; (void)domain; (void)data; (void)inverse; (void)coset; (void)stream;
    return NOT_SUPPORTED;
}
int cuzk_groth16_h(int dev, uint64_t domain, uint64_t a, uint64_t b, uint64_t c, uint64_t stream) {
    (void)dev; (void)domain; (void)a; (void)b; (void)c; (void)stream;
    return NOT_SUPPORTED;
}
int cuzk_fixed_base_g1(int dev, uint64_t table, int window, uint64_t scalars, uint64_t n, uint64_t out_jac,
                       uint64_t stream) {
    (void)dev; (void)table; (void)window; (void)scalars; (void)n; (void)out_jac; (void)stream;
    return NOT_SUPPORTED;
}
int cuzk_fixed_base_g2(int dev, uint64_t table, int window, uint64_t scalars, uint64_t n, uint64_t out_jac,
                       uint64_t stream) {
    (void)dev; (void)table; (void)window; (void)scalars; (void)n; (void)out_jac; (void)stream;
    return NOT_SUPPORTED;
}
int cuzk_msm_g1_ex(int dev, uint64_t points, uint64_t scalars, uint64_t n, int scalars_mont, int window, int flags,
                   uint64_t* out_jac, uint64_t* counts, uint64_t stream) {
    (void)dev; (void)points; (void)scalars; (void)n; (void)scalars_mont; (void)window; (void)flags; (void)out_jac;
    (void)counts; (void)stream;
    return NOT_SUPPORTED;
}
int cuzk_msm_g2_ex(int dev, uint64_t points, uint64_t scalars, uint64_t n, int scalars_mont, int window, int flags,
                   uint64_t* out_jac, uint64_t* counts, uint64_t stream) {
    (void)dev; (void)points; (void)scalars; (void)n; (void)scalars_mont; (void)window; (void)flags; (void)out_jac;
    (void)counts; (void)stream;
    return NOT_SUPPORTED;
}
