package gpuprove

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

typedef int (*gp_host_alloc_fn)(int, void**, uint64_t);
typedef int (*gp_host_free_fn)(int, void*);

static void* gp_sym(const char* path, const char* name) {
	// The library is already loaded by package cuda: this takes a reference
	// to the same handle rather than loading a second copy.
	void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) return NULL;
	return dlsym(h, name);
}
static int gp_host_alloc(void* f, int dev, void** p, uint64_t n) { return ((gp_host_alloc_fn)f)(dev, p, n); }
static int gp_host_free(void* f, int dev, void* p) { return ((gp_host_free_fn)f)(dev, p); }
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpu"
)

// hostAllocator reaches the kernel library's pinned host allocation
// (cudaHostAlloc / cudaFreeHost), which package cuda loads but does not
// export.
type hostAllocator struct {
	dev           int
	allocF, freeF unsafe.Pointer
}

func newHostAllocator(cd *cuda.Device) (*hostAllocator, error) {
	path := C.CString(cd.Lib().Path())
	defer C.free(unsafe.Pointer(path))
	h := &hostAllocator{dev: cd.Index()}
	for name, dst := range map[string]*unsafe.Pointer{"cuzk_host_alloc": &h.allocF, "cuzk_host_free": &h.freeF} {
		cname := C.CString(name)
		*dst = C.gp_sym(path, cname)
		C.free(unsafe.Pointer(cname))
		if *dst == nil {
			return nil, fmt.Errorf("%s: no symbol %s", cd.Lib().Path(), name)
		}
	}
	return h, nil
}

// cudaErrorMemoryAllocation, as in package cuda.
const codeMemoryAllocation = 2

// alloc is cudaHostAlloc: it waits for the whole device.
func (h *hostAllocator) alloc(bytes int64) (unsafe.Pointer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("device %d: host_alloc of %d bytes", h.dev, bytes)
	}
	var p unsafe.Pointer
	rc := C.gp_host_alloc(h.allocF, C.int(h.dev), &p, C.uint64_t(bytes))
	switch {
	case rc == codeMemoryAllocation:
		return nil, fmt.Errorf("device %d: pinned host memory of %s: %w", h.dev, gpu.FormatBytes(bytes), gpu.ErrOutOfMemory)
	case rc != 0:
		return nil, fmt.Errorf("device %d: cuzk_host_alloc of %s: CUDA error %d", h.dev, gpu.FormatBytes(bytes), int(rc))
	}
	return p, nil
}

// free is cudaFreeHost: it waits for the whole device.
func (h *hostAllocator) free(p unsafe.Pointer) error {
	if rc := C.gp_host_free(h.freeF, C.int(h.dev), p); rc != 0 {
		return fmt.Errorf("device %d: cuzk_host_free: CUDA error %d", h.dev, int(rc))
	}
	return nil
}
