// A stand-in for the kernel library on a machine without a GPU: one device
// whose memory is host memory, with a capacity and a ledger, so that the Go
// layers above the C ABI (cuda, gpuprove.Device) can be tested in CI.
// Stream-ordered calls keep CUDA's asynchrony: each stream is a host thread
// that runs its queue in order (a memset, a copy, a free, an event record),
// and the call returns at enqueue; a stream or event sync waits for the
// queue, cudaFree and cudaFreeHost wait for every stream, as CUDA's do.
// CUZK_FAKE_GPU_NS_PER_BYTE slows the device's memsets so that work is
// still queued when the host moves on. The kernels (NTT, MSM) are not
// provided. Built by the tests with the host C compiler: cc -shared -fPIC.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#define OK 0
#define INVALID 1        /* cudaErrorInvalidValue */
#define NO_MEMORY 2      /* cudaErrorMemoryAllocation */
#define NOT_SUPPORTED 801 /* cudaErrorNotSupported */
#define ABI_VERSION 3

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t used;

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


/* ---- streams: a host thread each, running its queue in order ---- */

enum { T_MEMSET, T_COPY, T_FREE, T_RECORD };
typedef struct task {
    int kind;
    void* dst;
    const void* src;
    uint64_t bytes;
    int value;
    struct event* ev;
    struct task* next;
} task;

typedef struct event {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t recorded, reached; /* records enqueued, records run */
} event;

typedef struct stream {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    task *head, *tail;
    int busy, stop;
    struct stream* next_stream;
} stream;

static stream* streams; /* every live stream, for the device-wide waits */

static void slow(uint64_t bytes) {
    const char* s = getenv("CUZK_FAKE_GPU_NS_PER_BYTE");
    if (!s) return;
    double ns = strtod(s, NULL) * (double)bytes;
    if (ns <= 0) return;
    struct timespec ts = {(time_t)(ns / 1e9), (long)((uint64_t)ns % 1000000000ull)};
    nanosleep(&ts, NULL);
}

static int give(uint64_t ptr);

static void run_task(task* t) {
    switch (t->kind) {
    case T_MEMSET: slow(t->bytes); memset(t->dst, t->value, t->bytes); break;
    case T_COPY: memmove(t->dst, t->src, t->bytes); break;
    case T_FREE: give((uint64_t)(uintptr_t)t->dst); break;
    case T_RECORD:
        pthread_mutex_lock(&t->ev->mu);
        t->ev->reached++;
        pthread_cond_broadcast(&t->ev->cv);
        pthread_mutex_unlock(&t->ev->mu);
        break;
    }
}

static void* stream_main(void* arg) {
    stream* s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
        if (!s->head && s->stop) break;
        task* t = s->head;
        s->head = t->next;
        if (!s->head) s->tail = NULL;
        s->busy = 1;
        pthread_mutex_unlock(&s->mu);
        run_task(t);
        free(t);
        pthread_mutex_lock(&s->mu);
        s->busy = 0;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* enqueue runs t on stream handle h, or at once on the default stream (0). */
static int enqueue(uint64_t h, task t) {
    if (h == 0) {
        run_task(&t);
        return OK;
    }
    stream* s = (stream*)(uintptr_t)h;
    task* q = malloc(sizeof *q);
    if (!q) return NO_MEMORY;
    *q = t;
    q->next = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->tail) s->tail->next = q; else s->head = q;
    s->tail = q;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return OK;
}

static void drain(stream* s) {
    pthread_mutex_lock(&s->mu);
    while (s->head || s->busy) pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

static void drain_all(void) {
    pthread_mutex_lock(&mu);
    stream* list = streams;
    pthread_mutex_unlock(&mu);
    for (stream* s = list; s; s = s->next_stream) drain(s);
}

int cuzk_abi_version(void) { return ABI_VERSION; }
const char* cuzk_build_info(void) { return "stand-in msm_accumulate=none"; }
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
int cuzk_device_sync(int dev) {
    if (dev != 0) return INVALID;
    drain_all();
    return OK;
}

int cuzk_malloc(int dev, uint64_t* ptr, uint64_t bytes) { return dev == 0 ? take(ptr, bytes) : INVALID; }
/* cudaFree waits for every stream. */
int cuzk_free(int dev, uint64_t ptr) {
    if (dev != 0) return INVALID;
    drain_all();
    return give(ptr);
}
/* The pool keeps nothing: an allocation is made at once (cudaMallocAsync
 * returns its pointer), a free in stream order. */
int cuzk_malloc_async(int dev, uint64_t* ptr, uint64_t bytes, uint64_t stream) {
    (void)stream;
    return cuzk_malloc(dev, ptr, bytes);
}
int cuzk_free_async(int dev, uint64_t ptr, uint64_t stream) {
    if (dev != 0) return INVALID;
    return enqueue(stream, (task){.kind = T_FREE, .dst = (void*)(uintptr_t)ptr});
}
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
/* cudaFreeHost waits for every stream. */
int cuzk_host_free(int dev, void* ptr) {
    (void)dev;
    drain_all();
    free(ptr);
    return OK;
}

static int copy(uint64_t stream, void* dst, const void* src, uint64_t bytes) {
    if (bytes && (!dst || !src)) return INVALID;
    return enqueue(stream, (task){.kind = T_COPY, .dst = dst, .src = src, .bytes = bytes});
}
int cuzk_memcpy_htod(int dev, uint64_t dst, const void* src, uint64_t bytes, uint64_t stream) {
    (void)dev;
    return copy(stream, (void*)(uintptr_t)dst, src, bytes);
}
int cuzk_memcpy_dtoh(int dev, void* dst, uint64_t src, uint64_t bytes, uint64_t stream) {
    (void)dev;
    return copy(stream, dst, (const void*)(uintptr_t)src, bytes);
}
int cuzk_memcpy_dtod(int dev, uint64_t dst, uint64_t src, uint64_t bytes, uint64_t stream) {
    (void)dev;
    return copy(stream, (void*)(uintptr_t)dst, (const void*)(uintptr_t)src, bytes);
}
int cuzk_memset(int dev, uint64_t dst, int value, uint64_t bytes, uint64_t stream) {
    (void)dev;
    if (bytes && !dst) return INVALID;
    return enqueue(stream, (task){.kind = T_MEMSET, .dst = (void*)(uintptr_t)dst, .value = value, .bytes = bytes});
}

int cuzk_stream_create(int dev, uint64_t* out) {
    (void)dev;
    stream* s = calloc(1, sizeof *s);
    if (!s) return NO_MEMORY;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->th, NULL, stream_main, s) != 0) {
        free(s);
        return NO_MEMORY;
    }
    pthread_mutex_lock(&mu);
    s->next_stream = streams;
    streams = s;
    pthread_mutex_unlock(&mu);
    *out = (uint64_t)(uintptr_t)s;
    return OK;
}
int cuzk_stream_destroy(int dev, uint64_t h) {
    (void)dev;
    if (!h) return INVALID;
    stream* s = (stream*)(uintptr_t)h;
    pthread_mutex_lock(&mu);
    for (stream** p = &streams; *p; p = &(*p)->next_stream) {
        if (*p == s) {
            *p = s->next_stream;
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL); /* runs what was queued first, as CUDA does */
    free(s);
    return OK;
}
int cuzk_stream_sync(int dev, uint64_t h) {
    (void)dev;
    if (h) drain((stream*)(uintptr_t)h); else drain_all();
    return OK;
}
int cuzk_event_create(int dev, uint64_t* out) {
    (void)dev;
    event* e = calloc(1, sizeof *e);
    if (!e) return NO_MEMORY;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    *out = (uint64_t)(uintptr_t)e;
    return OK;
}
int cuzk_event_destroy(int dev, uint64_t h) {
    (void)dev;
    free((event*)(uintptr_t)h);
    return OK;
}
int cuzk_event_record(int dev, uint64_t h, uint64_t stream) {
    (void)dev;
    event* e = (event*)(uintptr_t)h;
    if (!e) return INVALID;
    pthread_mutex_lock(&e->mu);
    e->recorded++;
    pthread_mutex_unlock(&e->mu);
    return enqueue(stream, (task){.kind = T_RECORD, .ev = e});
}
int cuzk_event_sync(int dev, uint64_t h) {
    (void)dev;
    event* e = (event*)(uintptr_t)h;
    if (!e) return INVALID;
    pthread_mutex_lock(&e->mu);
    while (e->reached < e->recorded) pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    return OK;
}
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
int cuzk_ntt_domain_bytes(int log_n, uint64_t* bytes) { (void)log_n; (void)bytes; return NOT_SUPPORTED; }
int cuzk_ntt_scratch_bytes(int log_n, uint64_t* bytes) { (void)log_n; (void)bytes; return NOT_SUPPORTED; }
int cuzk_ntt(int dev, uint64_t domain, uint64_t data, int inverse, int coset, uint64_t scratch, uint64_t scratch_bytes,
             uint64_t stream) {
    (void)dev; (void)domain; (void)data; (void)inverse; (void)coset; (void)scratch; (void)scratch_bytes; (void)stream;
    return NOT_SUPPORTED;
}
int cuzk_groth16_h(int dev, uint64_t domain, uint64_t a, uint64_t b, uint64_t c, uint64_t stream) {
    (void)dev; (void)domain; (void)a; (void)b; (void)c; (void)stream;
    return NOT_SUPPORTED;
}
int cuzk_groth16_mul(int dev, uint64_t domain, uint64_t a, uint64_t b, uint64_t stream) {
    (void)dev; (void)domain; (void)a; (void)b; (void)stream;
    return NOT_SUPPORTED;
}
int cuzk_groth16_sub_div(int dev, uint64_t domain, uint64_t a, uint64_t c, uint64_t stream) {
    (void)dev; (void)domain; (void)a; (void)c; (void)stream;
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
                   uint64_t scratch, uint64_t scratch_bytes, uint64_t* out_jac, uint64_t* counts, uint64_t stream) {
    (void)dev; (void)points; (void)scalars; (void)n; (void)scalars_mont; (void)window; (void)flags; (void)scratch;
    (void)scratch_bytes; (void)out_jac; (void)counts; (void)stream;
    return NOT_SUPPORTED;
}
int cuzk_msm_g2_ex(int dev, uint64_t points, uint64_t scalars, uint64_t n, int scalars_mont, int window, int flags,
                   uint64_t scratch, uint64_t scratch_bytes, uint64_t* out_jac, uint64_t* counts, uint64_t stream) {
    (void)dev; (void)points; (void)scalars; (void)n; (void)scalars_mont; (void)window; (void)flags; (void)scratch;
    (void)scratch_bytes; (void)out_jac; (void)counts; (void)stream;
    return NOT_SUPPORTED;
}
int cuzk_msm_scratch_bytes(int dev, int g2, uint64_t n, int window, int flags, uint64_t* bytes) {
    (void)dev; (void)g2; (void)n; (void)window; (void)flags; (void)bytes;
    return NOT_SUPPORTED;
}
