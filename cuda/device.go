package cuda

/*
#include "bridge.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/cuzk/cuzk/gpu"
)

// Ptr is a device address. Zero is never a valid allocation.
type Ptr uint64

// Add offsets a device address by bytes.
func (p Ptr) Add(bytes int64) Ptr { return p + Ptr(bytes) }

// Stream is a CUDA stream handle; DefaultStream is the legacy default stream.
type Stream uint64

// DefaultStream is the legacy default stream (handle 0).
const DefaultStream Stream = 0

// Event is a CUDA event handle.
type Event uint64

// Device is one GPU. Its methods may be called from any goroutine: every call
// selects the device on the calling thread first.
type Device struct {
	lib *Lib
	idx int
}

// Properties describes a device.
type Properties struct {
	Index        int
	Name         string
	TotalMemory  int64
	SMs          int
	Major, Minor int // compute capability
	L2Bytes      int64
}

// Lib is the library the device was opened through.
func (d *Device) Lib() *Lib { return d.lib }

// Index is the CUDA device ordinal.
func (d *Device) Index() int { return d.idx }

func (d *Device) dev() C.int { return C.int(d.idx) }

// Properties reads the device's name, memory, multiprocessors and cache.
func (d *Device) Properties() (Properties, error) {
	var name [256]C.char
	var mem, l2 C.uint64_t
	var sm, maj, mnr C.int
	rc := C.cz_props(d.lib.fn.deviceProps, d.dev(), &name[0], C.int(len(name)), &mem, &sm, &maj, &mnr, &l2)
	if err := d.lib.check("cuzk_device_props", rc); err != nil {
		return Properties{}, err
	}
	return Properties{Index: d.idx, Name: C.GoString(&name[0]), TotalMemory: int64(mem), SMs: int(sm),
		Major: int(maj), Minor: int(mnr), L2Bytes: int64(l2)}, nil
}

// Info is the device as package gpu describes it.
func (d *Device) Info() (gpu.Info, error) {
	p, err := d.Properties()
	if err != nil {
		return gpu.Info{}, err
	}
	return gpu.Info{Index: d.idx, Name: p.Name, Total: p.TotalMemory}, nil
}

// MemInfo returns free and total device memory as cudaMemGetInfo reports
// them (it does not wait for other work).
func (d *Device) MemInfo() (free, total int64, err error) {
	var f, t C.uint64_t
	if err := d.lib.check("cuzk_mem_info", C.cz_i_pu_pu(d.lib.fn.memInfo, d.dev(), &f, &t)); err != nil {
		return 0, 0, err
	}
	return int64(f), int64(t), nil
}

// Sync waits for all work of all streams on the device (cudaDeviceSynchronize).
func (d *Device) Sync() error {
	return d.lib.check("cuzk_device_sync", C.cz_i(d.lib.fn.deviceSync, d.dev()))
}

func (d *Device) allocErr(op string, rc C.int, bytes int64) error {
	err := d.lib.check(op, rc)
	if err == nil {
		return nil
	}
	if ce, ok := err.(*Error); ok && ce.Code == codeMemoryAllocation {
		free, _, ierr := d.MemInfo()
		if ierr != nil {
			free = -1
		}
		// The exact bytes too: a limit's shortfall is a few MiB.
		return fmt.Errorf("%w (%d of %d bytes free; %v)", gpu.OOM(d.idx, bytes, free), free, bytes, err)
	}
	if bytes <= 0 {
		return fmt.Errorf("device %d: %w", d.idx, err)
	}
	return fmt.Errorf("device %d: allocate %s: %w", d.idx, gpu.FormatBytes(bytes), err)
}

// Malloc allocates device memory with cudaMalloc, which does not wait for
// other work.
func (d *Device) Malloc(bytes int64) (Ptr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuda: malloc of %d bytes", bytes)
	}
	var p C.uint64_t
	if err := d.allocErr("cuzk_malloc", C.cz_i_pu_u(d.lib.fn.malloc, d.dev(), &p, C.uint64_t(bytes)), bytes); err != nil {
		return 0, err
	}
	return Ptr(p), nil
}

// Free releases memory from Malloc; cudaFree waits for the whole device.
func (d *Device) Free(p Ptr) error {
	return d.lib.check("cuzk_free", C.cz_i_u(d.lib.fn.free, d.dev(), C.uint64_t(p)))
}

// MallocAsync allocates from the device's stream-ordered pool, ordered on s.
func (d *Device) MallocAsync(bytes int64, s Stream) (Ptr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuda: malloc of %d bytes", bytes)
	}
	var p C.uint64_t
	rc := C.cz_i_pu_u_u(d.lib.fn.mallocAsync, d.dev(), &p, C.uint64_t(bytes), C.uint64_t(s))
	if err := d.allocErr("cuzk_malloc_async", rc, bytes); err != nil {
		return 0, err
	}
	return Ptr(p), nil
}

// FreeAsync returns memory to the pool, ordered on s. The pool keeps it until
// a synchronization observes the free (see package gpu).
func (d *Device) FreeAsync(p Ptr, s Stream) error {
	return d.lib.check("cuzk_free_async", C.cz_i_u_u(d.lib.fn.freeAsync, d.dev(), C.uint64_t(p), C.uint64_t(s)))
}

// ConfigurePool sets the release threshold and cross-stream reuse of the
// device's default pool.
func (d *Device) ConfigurePool(p gpu.PoolPolicy) error {
	thr := p.ReleaseThreshold
	if thr < 0 {
		thr = 0
	}
	reuse := C.int(0)
	if p.ReuseAcrossStreams {
		reuse = 1
	}
	return d.lib.check("cuzk_pool_configure",
		C.cz_i_u_i(d.lib.fn.poolConfigure, d.dev(), C.uint64_t(thr), reuse))
}

// TrimPool returns observed free pool blocks to the device, keeping at least
// keep bytes.
func (d *Device) TrimPool(keep int64) error {
	if keep < 0 {
		keep = 0
	}
	return d.lib.check("cuzk_pool_trim", C.cz_i_u(d.lib.fn.poolTrim, d.dev(), C.uint64_t(keep)))
}

// NewStream creates a non-blocking stream.
func (d *Device) NewStream() (Stream, error) {
	var s C.uint64_t
	if err := d.lib.check("cuzk_stream_create", C.cz_pu(d.lib.fn.streamCreate, d.dev(), &s)); err != nil {
		return 0, err
	}
	return Stream(s), nil
}

// DestroyStream releases a stream from NewStream.
func (d *Device) DestroyStream(s Stream) error {
	return d.lib.check("cuzk_stream_destroy", C.cz_i_u(d.lib.fn.streamDestroy, d.dev(), C.uint64_t(s)))
}

// StreamSync waits for the work queued on s.
func (d *Device) StreamSync(s Stream) error {
	return d.lib.check("cuzk_stream_sync", C.cz_i_u(d.lib.fn.streamSync, d.dev(), C.uint64_t(s)))
}

// NewEvent creates an event with timing enabled.
func (d *Device) NewEvent() (Event, error) {
	var e C.uint64_t
	if err := d.lib.check("cuzk_event_create", C.cz_pu(d.lib.fn.eventCreate, d.dev(), &e)); err != nil {
		return 0, err
	}
	return Event(e), nil
}

// DestroyEvent releases an event from NewEvent.
func (d *Device) DestroyEvent(e Event) error {
	return d.lib.check("cuzk_event_destroy", C.cz_i_u(d.lib.fn.eventDestroy, d.dev(), C.uint64_t(e)))
}

// RecordEvent records e on s.
func (d *Device) RecordEvent(e Event, s Stream) error {
	return d.lib.check("cuzk_event_record",
		C.cz_i_u_u(d.lib.fn.eventRecord, d.dev(), C.uint64_t(e), C.uint64_t(s)))
}

// EventSync waits until e has completed.
func (d *Device) EventSync(e Event) error {
	return d.lib.check("cuzk_event_sync", C.cz_i_u(d.lib.fn.eventSync, d.dev(), C.uint64_t(e)))
}

// Elapsed is the device time between two completed events.
func (d *Device) Elapsed(start, end Event) (time.Duration, error) {
	var ms C.float
	rc := C.cz_elapsed(d.lib.fn.eventElapsed, d.dev(), &ms, C.uint64_t(start), C.uint64_t(end))
	if err := d.lib.check("cuzk_event_elapsed_ms", rc); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// CopyToDevice copies bytes from host memory at src to dst, ordered on s, and
// waits for the copy (the host memory is Go memory, which must not be read
// by the device after the call returns).
func (d *Device) CopyToDevice(dst Ptr, src unsafe.Pointer, bytes int64, s Stream) error {
	if bytes == 0 {
		return nil
	}
	rc := C.cz_htod(d.lib.fn.memcpyHtoD, d.dev(), C.uint64_t(dst), src, C.uint64_t(bytes), C.uint64_t(s))
	if err := d.lib.check("cuzk_memcpy_htod", rc); err != nil {
		return err
	}
	return d.StreamSync(s)
}

// CopyToHost copies bytes from src to host memory at dst, ordered on s, and
// waits for the copy.
func (d *Device) CopyToHost(dst unsafe.Pointer, src Ptr, bytes int64, s Stream) error {
	if bytes == 0 {
		return nil
	}
	rc := C.cz_dtoh(d.lib.fn.memcpyDtoH, d.dev(), dst, C.uint64_t(src), C.uint64_t(bytes), C.uint64_t(s))
	if err := d.lib.check("cuzk_memcpy_dtoh", rc); err != nil {
		return err
	}
	return d.StreamSync(s)
}

// CopyDevice copies bytes between device buffers, ordered on s.
func (d *Device) CopyDevice(dst, src Ptr, bytes int64, s Stream) error {
	rc := C.cz_dtod(d.lib.fn.memcpyDtoD, d.dev(), C.uint64_t(dst), C.uint64_t(src), C.uint64_t(bytes), C.uint64_t(s))
	return d.lib.check("cuzk_memcpy_dtod", rc)
}

// Memset fills bytes of dst with value, ordered on s.
func (d *Device) Memset(dst Ptr, value byte, bytes int64, s Stream) error {
	rc := C.cz_memset(d.lib.fn.memset, d.dev(), C.uint64_t(dst), C.int(value), C.uint64_t(bytes), C.uint64_t(s))
	return d.lib.check("cuzk_memset", rc)
}

// Upload allocates device memory for the elements of v (plain values: field
// elements, points) and copies them in.
func Upload[T any](d *Device, v []T, s Stream) (Ptr, error) {
	var zero T
	bytes := int64(len(v)) * int64(unsafe.Sizeof(zero))
	if bytes == 0 {
		bytes = int64(unsafe.Sizeof(zero))
		if bytes == 0 {
			bytes = 1
		}
		return d.Malloc(bytes)
	}
	p, err := d.Malloc(bytes)
	if err != nil {
		return 0, err
	}
	if err := d.CopyToDevice(p, unsafe.Pointer(&v[0]), bytes, s); err != nil {
		_ = d.Free(p)
		return 0, err
	}
	return p, nil
}

// CopyIn copies the elements of v to dst.
func CopyIn[T any](d *Device, dst Ptr, v []T, s Stream) error {
	if len(v) == 0 {
		return nil
	}
	var zero T
	return d.CopyToDevice(dst, unsafe.Pointer(&v[0]), int64(len(v))*int64(unsafe.Sizeof(zero)), s)
}

// CopyOut fills v from src.
func CopyOut[T any](d *Device, v []T, src Ptr, s Stream) error {
	if len(v) == 0 {
		return nil
	}
	var zero T
	return d.CopyToHost(unsafe.Pointer(&v[0]), src, int64(len(v))*int64(unsafe.Sizeof(zero)), s)
}

// HostBuffer is pinned (page-locked) host memory from HostAlloc: copies from
// and to it can run asynchronously, overlapping kernels.
type HostBuffer struct {
	p     unsafe.Pointer
	bytes int64
	// borrowed: memory HostAlloc gave someone else, lent for copies; HostFree
	// leaves it to its owner.
	borrowed bool
}

// BorrowHost lends bytes of pinned memory at p (from HostAlloc, owned
// elsewhere: prover.Keys.PinPoints's points) as a HostBuffer for copies;
// HostFree of it frees nothing. The owner keeps p valid while it is used.
func BorrowHost(p unsafe.Pointer, bytes int64) *HostBuffer {
	return &HostBuffer{p: p, bytes: bytes, borrowed: true}
}

// Pointer is the buffer's address; it stays valid until HostFree.
func (h *HostBuffer) Pointer() unsafe.Pointer { return h.p }

// Len is the buffer's size in bytes.
func (h *HostBuffer) Len() int64 { return h.bytes }

// HostAlloc allocates pinned host memory (cudaHostAlloc, which waits for the
// whole device).
func (d *Device) HostAlloc(bytes int64) (*HostBuffer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("cuda: host alloc of %d bytes", bytes)
	}
	var p unsafe.Pointer
	if err := d.lib.check("cuzk_host_alloc", C.cz_i_pp_u(d.lib.fn.hostAlloc, d.dev(), &p, C.uint64_t(bytes))); err != nil {
		return nil, fmt.Errorf("device %d: pinned host alloc of %s: %w", d.idx, gpu.FormatBytes(bytes), err)
	}
	return &HostBuffer{p: p, bytes: bytes}, nil
}

// HostFree releases a HostAlloc buffer (cudaFreeHost, which waits for the
// whole device).
func (d *Device) HostFree(h *HostBuffer) error {
	if h == nil || h.p == nil {
		return nil
	}
	if h.borrowed {
		h.p = nil
		return nil
	}
	err := d.lib.check("cuzk_host_free", C.cz_i_p(d.lib.fn.hostFree, d.dev(), h.p))
	h.p = nil
	return err
}

// CopyInAsync queues a copy of bytes from the pinned buffer (at offset) to dst
// on s and returns at once; the buffer must stay untouched until s reaches
// the copy (StreamSync or an event).
func (d *Device) CopyInAsync(dst Ptr, h *HostBuffer, offset, bytes int64, s Stream) error {
	if h == nil || h.p == nil || offset < 0 || bytes < 0 || offset+bytes > h.bytes {
		return fmt.Errorf("cuda: async copy of [%d, %d) outside the pinned buffer", offset, offset+bytes)
	}
	src := unsafe.Add(h.p, offset)
	rc := C.cz_htod(d.lib.fn.memcpyHtoD, d.dev(), C.uint64_t(dst), src, C.uint64_t(bytes), C.uint64_t(s))
	return d.lib.check("cuzk_memcpy_htod", rc)
}

// CopyOutAsync queues a copy of bytes from src into the pinned buffer (at
// offset) on s and returns at once.
func (d *Device) CopyOutAsync(h *HostBuffer, offset int64, src Ptr, bytes int64, s Stream) error {
	if h == nil || h.p == nil || offset < 0 || bytes < 0 || offset+bytes > h.bytes {
		return fmt.Errorf("cuda: async copy of [%d, %d) outside the pinned buffer", offset, offset+bytes)
	}
	dst := unsafe.Add(h.p, offset)
	rc := C.cz_dtoh(d.lib.fn.memcpyDtoH, d.dev(), dst, C.uint64_t(src), C.uint64_t(bytes), C.uint64_t(s))
	return d.lib.check("cuzk_memcpy_dtoh", rc)
}
