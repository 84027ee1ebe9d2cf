// See bridge.h.
#include <dlfcn.h>
#include <stdlib.h>
#include "bridge.h"

void* cz_open(const char* path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
const char* cz_dlerror(void) { return dlerror(); }
void* cz_sym(void* h, const char* name) { return dlsym(h, name); }

typedef int (*fn_v)(void);
typedef const char* (*fn_s)(void);
typedef const char* (*fn_str)(int);
typedef int (*fn_pi)(int*);
typedef int (*fn_props)(int, char*, int, uint64_t*, int*, int*, int*, uint64_t*);
typedef int (*fn_i_pu_pu)(int, uint64_t*, uint64_t*);
typedef int (*fn_i)(int);
typedef int (*fn_i_pu_u)(int, uint64_t*, uint64_t);
typedef int (*fn_i_u)(int, uint64_t);
typedef int (*fn_i_pu_u_u)(int, uint64_t*, uint64_t, uint64_t);
typedef int (*fn_i_u_u)(int, uint64_t, uint64_t);
typedef int (*fn_i_u_i)(int, uint64_t, int);
typedef int (*fn_i_pp_u)(int, void**, uint64_t);
typedef int (*fn_i_p)(int, void*);
typedef int (*fn_htod)(int, uint64_t, const void*, uint64_t, uint64_t);
typedef int (*fn_dtoh)(int, void*, uint64_t, uint64_t, uint64_t);
typedef int (*fn_dtod)(int, uint64_t, uint64_t, uint64_t, uint64_t);
typedef int (*fn_memset)(int, uint64_t, int, uint64_t, uint64_t);
typedef int (*fn_pu)(int, uint64_t*);
typedef int (*fn_elapsed)(int, float*, uint64_t, uint64_t);
typedef int (*fn_domain)(int, uint64_t*, int, const uint64_t*, const uint64_t*, const uint64_t*, const uint64_t*,
                         const uint64_t*, const uint64_t*, uint64_t);
typedef int (*fn_ntt)(int, uint64_t, uint64_t, int, int, uint64_t, uint64_t, uint64_t);
typedef int (*fn_h)(int, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
typedef int (*fn_fixed_base)(int, uint64_t, int, uint64_t, uint64_t, uint64_t, uint64_t);
typedef int (*fn_msm_ex)(int, uint64_t, uint64_t, uint64_t, int, int, int, uint64_t, uint64_t, uint64_t*, uint64_t*,
                         uint64_t);
typedef int (*fn_i_pu)(int, uint64_t*);
typedef int (*fn_i_u_u_u_u)(int, uint64_t, uint64_t, uint64_t, uint64_t);
typedef int (*fn_msm_scratch)(int, int, uint64_t, int, int, uint64_t*);
typedef int (*fn_table_shape)(int, int, uint64_t, int, int, int*, int*, uint64_t*);
typedef int (*fn_table)(int, uint64_t, uint64_t, int, int, uint64_t, uint64_t);

int cz_v(void* f) { return ((fn_v)f)(); }
const char* cz_s(void* f) { return ((fn_s)f)(); }
const char* cz_str(void* f, int e) { return ((fn_str)f)(e); }
int cz_pi(void* f, int* a) { return ((fn_pi)f)(a); }
int cz_props(void* f, int d, char* name, int len, uint64_t* mem, int* sm, int* maj, int* min, uint64_t* l2) {
	return ((fn_props)f)(d, name, len, mem, sm, maj, min, l2);
}
int cz_i_pu_pu(void* f, int d, uint64_t* a, uint64_t* b) { return ((fn_i_pu_pu)f)(d, a, b); }
int cz_i(void* f, int d) { return ((fn_i)f)(d); }
int cz_i_pu_u(void* f, int d, uint64_t* a, uint64_t b) { return ((fn_i_pu_u)f)(d, a, b); }
int cz_i_u(void* f, int d, uint64_t a) { return ((fn_i_u)f)(d, a); }
int cz_i_pu_u_u(void* f, int d, uint64_t* a, uint64_t b, uint64_t c) { return ((fn_i_pu_u_u)f)(d, a, b, c); }
int cz_i_u_u(void* f, int d, uint64_t a, uint64_t b) { return ((fn_i_u_u)f)(d, a, b); }
int cz_i_u_i(void* f, int d, uint64_t a, int b) { return ((fn_i_u_i)f)(d, a, b); }
int cz_i_pp_u(void* f, int d, void** a, uint64_t b) { return ((fn_i_pp_u)f)(d, a, b); }
int cz_i_p(void* f, int d, void* a) { return ((fn_i_p)f)(d, a); }
int cz_htod(void* f, int d, uint64_t dst, const void* src, uint64_t n, uint64_t s) {
	return ((fn_htod)f)(d, dst, src, n, s);
}
int cz_dtoh(void* f, int d, void* dst, uint64_t src, uint64_t n, uint64_t s) {
	return ((fn_dtoh)f)(d, dst, src, n, s);
}
int cz_dtod(void* f, int d, uint64_t dst, uint64_t src, uint64_t n, uint64_t s) {
	return ((fn_dtod)f)(d, dst, src, n, s);
}
int cz_memset(void* f, int d, uint64_t dst, int v, uint64_t n, uint64_t s) {
	return ((fn_memset)f)(d, dst, v, n, s);
}
int cz_pu(void* f, int d, uint64_t* a) { return ((fn_pu)f)(d, a); }
int cz_elapsed(void* f, int d, float* ms, uint64_t a, uint64_t b) { return ((fn_elapsed)f)(d, ms, a, b); }
int cz_domain(void* f, int d, uint64_t* dom, int logn, const uint64_t* w, const uint64_t* wi,
                     const uint64_t* ni, const uint64_t* g, const uint64_t* gi, const uint64_t* zi, uint64_t s) {
	return ((fn_domain)f)(d, dom, logn, w, wi, ni, g, gi, zi, s);
}
int cz_ntt(void* f, int d, uint64_t dom, uint64_t data, int inv, int coset, uint64_t scratch, uint64_t scratch_bytes,
           uint64_t s) {
	return ((fn_ntt)f)(d, dom, data, inv, coset, scratch, scratch_bytes, s);
}
int cz_i_pu(void* f, int a, uint64_t* b) { return ((fn_i_pu)f)(a, b); }
int cz_i_u_u_u_u(void* f, int d, uint64_t a, uint64_t b, uint64_t c, uint64_t s) { return ((fn_i_u_u_u_u)f)(d, a, b, c, s); }
int cz_msm_scratch(void* f, int d, int g2, uint64_t n, int window, int flags, uint64_t* bytes) {
	return ((fn_msm_scratch)f)(d, g2, n, window, flags, bytes);
}
int cz_h(void* f, int d, uint64_t dom, uint64_t a, uint64_t b, uint64_t c, uint64_t s) {
	return ((fn_h)f)(d, dom, a, b, c, s);
}
int cz_fixed_base(void* f, int d, uint64_t table, int window, uint64_t sc, uint64_t n, uint64_t out, uint64_t s) {
	return ((fn_fixed_base)f)(d, table, window, sc, n, out, s);
}
int cz_msm_ex(void* f, int d, uint64_t pts, uint64_t sc, uint64_t n, int mont, int window, int flags, uint64_t scratch,
              uint64_t scratch_bytes, uint64_t* out, uint64_t* counts, uint64_t s) {
	return ((fn_msm_ex)f)(d, pts, sc, n, mont, window, flags, scratch, scratch_bytes, out, counts, s);
}
int cz_table_shape(void* f, int d, int g2, uint64_t n, int window, int copies, int* w, int* c, uint64_t* b) {
	return ((fn_table_shape)f)(d, g2, n, window, copies, w, c, b);
}
int cz_table(void* f, int d, uint64_t pts, uint64_t n, int window, int copies, uint64_t table, uint64_t s) {
	return ((fn_table)f)(d, pts, n, window, copies, table, s);
}
