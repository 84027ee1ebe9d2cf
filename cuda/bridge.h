// C side of the cgo bridge: dlopen/dlsym, and one trampoline per C ABI
// signature that calls a function pointer taken from the kernel library.
#ifndef CUZK_BRIDGE_H
#define CUZK_BRIDGE_H
#include <stdint.h>

void* cz_open(const char* path);
const char* cz_dlerror(void);
void* cz_sym(void* h, const char* name);
int cz_v(void* f);
const char* cz_s(void* f);
const char* cz_str(void* f, int e);
int cz_pi(void* f, int* a);
int cz_props(void* f, int d, char* name, int len, uint64_t* mem, int* sm, int* maj, int* min, uint64_t* l2);
int cz_i_pu_pu(void* f, int d, uint64_t* a, uint64_t* b);
int cz_i(void* f, int d);
int cz_i_pu_u(void* f, int d, uint64_t* a, uint64_t b);
int cz_i_u(void* f, int d, uint64_t a);
int cz_i_pu_u_u(void* f, int d, uint64_t* a, uint64_t b, uint64_t c);
int cz_i_u_u(void* f, int d, uint64_t a, uint64_t b);
int cz_i_u_i(void* f, int d, uint64_t a, int b);
int cz_i_pp_u(void* f, int d, void** a, uint64_t b);
int cz_i_p(void* f, int d, void* a);
int cz_htod(void* f, int d, uint64_t dst, const void* src, uint64_t n, uint64_t s);
int cz_dtoh(void* f, int d, void* dst, uint64_t src, uint64_t n, uint64_t s);
int cz_dtod(void* f, int d, uint64_t dst, uint64_t src, uint64_t n, uint64_t s);
int cz_memset(void* f, int d, uint64_t dst, int v, uint64_t n, uint64_t s);
int cz_pu(void* f, int d, uint64_t* a);
int cz_elapsed(void* f, int d, float* ms, uint64_t a, uint64_t b);
int cz_domain(void* f, int d, uint64_t* dom, int logn, const uint64_t* w, const uint64_t* wi,
                     const uint64_t* ni, const uint64_t* g, const uint64_t* gi, const uint64_t* zi, uint64_t s);
int cz_ntt(void* f, int d, uint64_t dom, uint64_t data, int inv, int coset, uint64_t scratch, uint64_t scratch_bytes,
           uint64_t s);
int cz_i_pu(void* f, int a, uint64_t* b);
int cz_i_u_u_u_u(void* f, int d, uint64_t a, uint64_t b, uint64_t c, uint64_t s);
int cz_msm_scratch(void* f, int d, int g2, uint64_t n, int window, int flags, uint64_t* bytes);
int cz_h(void* f, int d, uint64_t dom, uint64_t a, uint64_t b, uint64_t c, uint64_t s);
int cz_fixed_base(void* f, int d, uint64_t table, int window, uint64_t sc, uint64_t n, uint64_t out, uint64_t s);
int cz_msm_ex(void* f, int d, uint64_t pts, uint64_t sc, uint64_t n, int mont, int window, int flags, uint64_t scratch,
              uint64_t scratch_bytes, uint64_t* out, uint64_t* counts, uint64_t s);
int cz_table_shape(void* f, int d, int g2, uint64_t n, int window, int copies, int* w, int* c, uint64_t* b);
int cz_table(void* f, int d, uint64_t pts, uint64_t n, int window, int copies, uint64_t table, uint64_t s);

#endif
