// Package cuda is cuzk's real GPU backend: a bridge to the CUDA kernel library
// (libcuzkgpu.so, built from cuda/src by `make cuda`) that it loads at run
// time with dlopen, so that building cuzk never needs the CUDA toolkit.
//
// The library exposes a C ABI (cuda/include/cuzkgpu.h): devices, memory
// (plain and stream-ordered pool allocations), streams, events, copies, the
// Fr NTT, Groth16's quotient step, the G1 and G2 MSMs and the batch fixed-base
// multiplication of key generation. Every failure comes back as
// an *Error carrying the CUDA error name; an allocation failure also matches
// gpu.ErrOutOfMemory, and a missing library or GPU matches ErrUnavailable.
package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"github.com/cuzk/cuzk/gpu"
)

// LibraryName is the file name of the kernel library.
const LibraryName = "libcuzkgpu.so"

// EnvLibrary names the environment variable that overrides the library path.
const EnvLibrary = "CUZK_GPU_LIB"

// abiVersion is the cuzkgpu.h CUZK_ABI_VERSION this bridge was written for.
const abiVersion = 3

// ErrUnavailable is returned (wrapped) when the kernel library cannot be found
// or loaded, or when it loads but finds no usable GPU. Callers that can fall
// back to the CPU test for it with errors.Is.
var ErrUnavailable = errors.New("cuda: GPU backend unavailable")

// Error is a failed CUDA call.
type Error struct {
	Op   string // the library call, e.g. "cuzk_malloc"
	Code int    // the cudaError_t value
	Name string // cudaGetErrorName, e.g. "cudaErrorMemoryAllocation"
	Msg  string // cudaGetErrorString
}

func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%d): %s", e.Op, e.Name, e.Code, e.Msg)
}

// Is makes an allocation failure match gpu.ErrOutOfMemory, and a missing
// driver or device match ErrUnavailable.
func (e *Error) Is(target error) bool {
	switch target {
	case gpu.ErrOutOfMemory:
		return e.Code == codeMemoryAllocation
	case ErrUnavailable:
		return e.Code == codeNoDevice || e.Code == codeInsufficientDriver
	}
	return false
}

// cudaError_t values the bridge tells apart.
const (
	codeInvalidValue       = 1
	codeMemoryAllocation   = 2
	codeInsufficientDriver = 35
	codeNoDevice           = 100
)

// Lib is the loaded kernel library. It is safe for concurrent use.
type Lib struct {
	path string
	h    unsafe.Pointer
	fn   funcs
}

type funcs struct {
	abiVersion, errorName, errorString, deviceCount, deviceProps, memInfo, deviceSync,
	malloc, free, mallocAsync, freeAsync, poolConfigure, poolTrim, hostAlloc, hostFree,
	memcpyHtoD, memcpyDtoH, memcpyDtoD, memset,
	streamCreate, streamDestroy, streamSync, eventCreate, eventDestroy, eventRecord, eventSync, eventElapsed,
	nttDomainCreate, nttDomainDestroy, ntt, groth16H unsafe.Pointer
	msmG1Ex, msmG2Ex, msmScratchBytes unsafe.Pointer
	nttDomainBytes, nttScratchBytes   unsafe.Pointer
	groth16Mul, groth16SubDiv         unsafe.Pointer

	fixedBaseG1, fixedBaseG2 unsafe.Pointer

	buildInfo unsafe.Pointer // optional: nil in libraries built before it
	// optional: nil in libraries built before precomputed tables
	msmTableShape, msmTableG1, msmTableG2 unsafe.Pointer
}

var (
	loadMu sync.Mutex
	loaded = map[string]*Lib{}
)

// Load finds and loads the kernel library. The search order: path if not
// empty (only there), $CUZK_GPU_LIB if set (only there), then libcuzkgpu.so
// next to the executable, build/libcuzkgpu.so under the working directory, and
// build/libcuzkgpu.so under each parent of the working directory up to the
// repository root. A library that cannot be found or opened gives an error
// matching ErrUnavailable.
func Load(path string) (*Lib, error) {
	var candidates []string
	switch {
	case path != "":
		candidates = []string{path}
	case os.Getenv(EnvLibrary) != "":
		candidates = []string{os.Getenv(EnvLibrary)}
	default:
		candidates = defaultCandidates()
	}
	var tried []string
	for _, c := range candidates {
		abs, err := filepath.Abs(c)
		if err != nil {
			abs = c
		}
		if _, err := os.Stat(abs); err != nil {
			tried = append(tried, abs)
			continue
		}
		return open(abs)
	}
	return nil, fmt.Errorf("%w: %s not found (tried %s)", ErrUnavailable, LibraryName, strings.Join(tried, ", "))
}

func defaultCandidates() []string {
	var out []string
	if exe, err := os.Executable(); err == nil {
		out = append(out, filepath.Join(filepath.Dir(exe), LibraryName))
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; {
			out = append(out, filepath.Join(dir, "build", LibraryName))
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break // the repository root
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return out
}

func open(path string) (*Lib, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if l, ok := loaded[path]; ok {
		return l, nil
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	h := C.cz_open(cpath)
	if h == nil {
		return nil, fmt.Errorf("%w: dlopen %s: %s", ErrUnavailable, path, C.GoString(C.cz_dlerror()))
	}
	l := &Lib{path: path, h: h}
	syms := []struct {
		name string
		dst  *unsafe.Pointer
	}{
		{"cuzk_abi_version", &l.fn.abiVersion}, {"cuzk_error_name", &l.fn.errorName},
		{"cuzk_error_string", &l.fn.errorString}, {"cuzk_device_count", &l.fn.deviceCount},
		{"cuzk_device_props", &l.fn.deviceProps}, {"cuzk_mem_info", &l.fn.memInfo},
		{"cuzk_device_sync", &l.fn.deviceSync}, {"cuzk_malloc", &l.fn.malloc}, {"cuzk_free", &l.fn.free},
		{"cuzk_malloc_async", &l.fn.mallocAsync}, {"cuzk_free_async", &l.fn.freeAsync},
		{"cuzk_pool_configure", &l.fn.poolConfigure}, {"cuzk_pool_trim", &l.fn.poolTrim},
		{"cuzk_host_alloc", &l.fn.hostAlloc}, {"cuzk_host_free", &l.fn.hostFree},
		{"cuzk_memcpy_htod", &l.fn.memcpyHtoD}, {"cuzk_memcpy_dtoh", &l.fn.memcpyDtoH},
		{"cuzk_memcpy_dtod", &l.fn.memcpyDtoD}, {"cuzk_memset", &l.fn.memset},
		{"cuzk_stream_create", &l.fn.streamCreate}, {"cuzk_stream_destroy", &l.fn.streamDestroy},
		{"cuzk_stream_sync", &l.fn.streamSync}, {"cuzk_event_create", &l.fn.eventCreate},
		{"cuzk_event_destroy", &l.fn.eventDestroy}, {"cuzk_event_record", &l.fn.eventRecord},
		{"cuzk_event_sync", &l.fn.eventSync}, {"cuzk_event_elapsed_ms", &l.fn.eventElapsed},
		{"cuzk_ntt_domain_create", &l.fn.nttDomainCreate}, {"cuzk_ntt_domain_destroy", &l.fn.nttDomainDestroy},
		{"cuzk_ntt", &l.fn.ntt}, {"cuzk_groth16_h", &l.fn.groth16H},
		{"cuzk_fixed_base_g1", &l.fn.fixedBaseG1}, {"cuzk_fixed_base_g2", &l.fn.fixedBaseG2},
		{"cuzk_msm_g1_ex", &l.fn.msmG1Ex}, {"cuzk_msm_g2_ex", &l.fn.msmG2Ex},
		{"cuzk_msm_scratch_bytes", &l.fn.msmScratchBytes},
		{"cuzk_ntt_domain_bytes", &l.fn.nttDomainBytes}, {"cuzk_ntt_scratch_bytes", &l.fn.nttScratchBytes},
		{"cuzk_groth16_mul", &l.fn.groth16Mul}, {"cuzk_groth16_sub_div", &l.fn.groth16SubDiv},
	}
	for _, s := range syms {
		cname := C.CString(s.name)
		p := C.cz_sym(h, cname)
		C.free(unsafe.Pointer(cname))
		if p == nil {
			return nil, fmt.Errorf("%w: %s: missing symbol %s", ErrUnavailable, path, s.name)
		}
		*s.dst = p
	}
	for _, s := range []struct {
		name string
		dst  *unsafe.Pointer
	}{
		{"cuzk_build_info", &l.fn.buildInfo}, {"cuzk_msm_table_shape", &l.fn.msmTableShape},
		{"cuzk_msm_table_g1", &l.fn.msmTableG1}, {"cuzk_msm_table_g2", &l.fn.msmTableG2},
	} {
		cname := C.CString(s.name)
		*s.dst = C.cz_sym(h, cname)
		C.free(unsafe.Pointer(cname))
	}
	if v := int(C.cz_v(l.fn.abiVersion)); v != abiVersion {
		return nil, fmt.Errorf("%w: %s: ABI version %d, want %d", ErrUnavailable, path, v, abiVersion)
	}
	loaded[path] = l
	return l, nil
}

// Path is the file the library was loaded from.
func (l *Lib) Path() string { return l.path }

// BuildInfo is the library's build-time switches, as cuzk_build_info gives
// them ("fp_mul=2 fr_mul=2 msm_accumulate=xyzz"), or "" for a library built
// before it had the call.
func (l *Lib) BuildInfo() string {
	if l.fn.buildInfo == nil {
		return ""
	}
	return C.GoString(C.cz_s(l.fn.buildInfo))
}

// BuildSwitch is the value of one of BuildInfo's switches ("" if absent):
// BuildSwitch("msm_accumulate") is "xyzz" or "affine".
func (l *Lib) BuildSwitch(name string) string {
	for _, w := range strings.Fields(l.BuildInfo()) {
		if k, v, ok := strings.Cut(w, "="); ok && k == name {
			return v
		}
	}
	return ""
}

func (l *Lib) check(op string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	code := int(rc)
	return &Error{
		Op:   op,
		Code: code,
		Name: C.GoString(C.cz_str(l.fn.errorName, rc)),
		Msg:  C.GoString(C.cz_str(l.fn.errorString, rc)),
	}
}

// DeviceCount is the number of CUDA devices. No driver or no device gives an
// error matching ErrUnavailable.
func (l *Lib) DeviceCount() (int, error) {
	var n C.int
	if err := l.check("cuzk_device_count", C.cz_pi(l.fn.deviceCount, &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device returns device i, configured with gpu.DefaultPoolPolicy.
func (l *Lib) Device(i int) (*Device, error) {
	n, err := l.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: no CUDA device", ErrUnavailable)
	}
	if i < 0 || i >= n {
		return nil, fmt.Errorf("cuda: device %d out of range [0, %d)", i, n)
	}
	d := &Device{lib: l, idx: i}
	if err := d.ConfigurePool(gpu.DefaultPoolPolicy()); err != nil {
		return nil, err
	}
	return d, nil
}

// Open loads the library (see Load) and returns device 0: the one call a
// command needs. Its errors match ErrUnavailable when there is no library or
// no GPU.
func Open(path string) (*Device, error) {
	l, err := Load(path)
	if err != nil {
		return nil, err
	}
	return l.Device(0)
}
