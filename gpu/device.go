// Package gpu defines the GPU device interface that the lock designs are written
// against, and the semantics every implementation must keep.
//
// Three implementations exist: the real CUDA device (gpuprove.Device, over
// package cuda), the emulated device for machines without a GPU (package
// gpu/emu), and the simulated device (package sim). Each reproduces what
// docs/cuda-facts.md records for the H200; the emulated and the simulated
// device take every decision about ordering, waiting and memory from one
// clock-free state machine (package gpu/model), and the real device orders
// its streams with it:
//
//   - Malloc and HostAlloc do not wait for other work; Free and HostFree wait
//     for every in-flight kernel and copy on the device (device-synchronizing).
//   - MallocAsync draws from a stream-ordered pool. A block freed with FreeAsync
//     returns to the device only after a synchronization has observed the free;
//     TrimPool cannot release an unobserved free. Growing the pool costs time.
//     With ReuseAcrossStreams on (CUDA's default), an allocation that does not fit
//     may reuse a block whose free is pending on another stream; the allocating
//     stream then waits for that stream.
//   - DeviceSync completes only when every in-flight kernel and copy of every
//     worker on the device has completed.
//   - Copies overlap compute; kernels of different streams share the compute
//     engine.
//
// A copy or a kernel launch submitted with Op.Async returns at enqueue and
// its completion is observed by a later synchronization, as in CUDA; a
// cudaFreeAsync behind such a kernel stays pending until then.
//
// Every operation is submitted, and its completion is reported through a
// callback, so that the same actors can drive a real device (completion on
// another goroutine) and a simulated one (completion as an event on a virtual
// timeline).
package gpu

import (
	"context"
	"errors"
	"fmt"
)

// ErrOutOfMemory is returned (wrapped) by an allocation that the device cannot
// satisfy. Callers test for it with errors.Is.
var ErrOutOfMemory = errors.New("out of device memory")

// Buffer names a device allocation. Zero is never a valid buffer.
type Buffer uint64

// Stream names an ordered queue of device work. Stream 0 is the legacy default
// stream, which the designs do not use.
type Stream uint32

// Event names a marker recorded on a stream.
type Event uint64

// OpKind says what an Op does.
type OpKind uint8

// The operations a lock design may ask of a device.
const (
	OpMemInfo     OpKind = iota + 1 // free and total memory; does not wait
	OpMalloc                        // cudaMalloc: does not wait for other work
	OpFree                          // cudaFree: waits for the whole device
	OpMallocAsync                   // cudaMallocAsync from the device pool, ordered on Stream
	OpFreeAsync                     // cudaFreeAsync, ordered on Stream
	OpTrimPool                      // cudaMemPoolTrimTo(Bytes): releases observed free blocks
	OpDeviceSync                    // cudaDeviceSynchronize: waits for every stream
	OpStreamSync                    // cudaStreamSynchronize(Stream)
	OpRecordEvent                   // cudaEventRecord on Stream; the result names the event
	OpEventSync                     // cudaEventSynchronize(Event)
	OpCopyIn                        // host→device copy of Bytes into Buffer, ordered on Stream
	OpCompute                       // launch Kernel on Stream; completes when the kernel has run (at enqueue when Async)
	OpHostAlloc                     // cudaHostAlloc of pinned host memory: does not wait for other work
	OpHostFree                      // cudaFreeHost: waits for the whole device
)

var opNames = map[OpKind]string{
	OpMemInfo: "mem_info", OpMalloc: "malloc", OpFree: "free", OpMallocAsync: "malloc_async",
	OpFreeAsync: "free_async", OpTrimPool: "trim_pool", OpDeviceSync: "device_sync",
	OpStreamSync: "stream_sync", OpRecordEvent: "record_event", OpEventSync: "event_sync",
	OpCopyIn: "copy_in", OpCompute: "compute", OpHostAlloc: "host_alloc", OpHostFree: "host_free",
}

// OnStream says whether the op is ordered on its Stream: it takes effect on
// the device after the stream's earlier work (cudaMallocAsync, cudaFreeAsync,
// cudaEventRecord, a copy, a kernel launch).
func (k OpKind) OnStream() bool {
	switch k {
	case OpMallocAsync, OpFreeAsync, OpRecordEvent, OpCopyIn, OpCompute:
		return true
	}
	return false
}

// NeedsStream says whether the op must name a stream: the stream-ordered ops,
// and cudaStreamSynchronize.
func (k OpKind) NeedsStream() bool { return k.OnStream() || k == OpStreamSync }

// DeviceWide says whether the op waits, as CUDA does, for every stream's work
// submitted before it (cudaDeviceSynchronize, cudaFree, cudaFreeHost). On the
// H200 cudaHostAlloc returned in 35–43 ms while a 200 ms kernel ran on another
// stream: it does not wait (docs/cuda-facts.md).
func (k OpKind) DeviceWide() bool {
	switch k {
	case OpDeviceSync, OpFree, OpHostFree:
		return true
	}
	return false
}

// Synchronizes says whether the host call returns only once device work it
// covers has completed, observing the pool frees in that work: the device-wide
// ops, cudaStreamSynchronize and cudaEventSynchronize.
func (k OpKind) Synchronizes() bool {
	return k.DeviceWide() || k == OpStreamSync || k == OpEventSync
}

// CanBeAsync says whether an Op of this kind may set Async: the device work
// a host call enqueues and need not wait for (a copy, a kernel launch).
// cudaMallocAsync, cudaFreeAsync and cudaEventRecord return at enqueue
// whatever Async says.
func (k OpKind) CanBeAsync() bool { return k == OpCopyIn || k == OpCompute }

// Valid says whether k names one of the operations above.
func (k OpKind) Valid() bool { _, ok := opNames[k]; return ok }

// String names the op as traces and errors print it.
func (k OpKind) String() string {
	if s, ok := opNames[k]; ok {
		return s
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// Kernel is the device work of one partition's compute stage. Run performs it
// for real (production, emulated device); Size and Bytes describe it for a
// model (simulator), which never calls Run.
type Kernel struct {
	Partition string // for traces
	Size      int    // constraints (the FFT domain follows from it)
	Bytes     int64  // device memory the kernel touches
	// Stage copies the partition's inputs to the device. A device calls it
	// for an OpCopyIn that carries the kernel, so that the copy happens where
	// the design placed it (under mem_mtx, say); nil, or a device that does
	// not call it, leaves the copy to Run.
	Stage func(ctx context.Context) error
	Run   func(ctx context.Context) error
	// Work is the same device work as data, for a device that runs it itself
	// with the stream and buffer the design placed it on as explicit
	// arguments (gpuprove.Device takes a *prover.Work or a gpuprove.Work);
	// such a device does not call Stage and Run. Nil: none.
	Work any
	// Scratch is device memory the kernel allocates from the device's
	// stream-ordered pool on its stream when it starts and frees there when
	// it ends (an MSM's sort buffers and buckets). A model takes it from the
	// same pool as the designs' buffers, so that a cached block the kernel
	// left behind is one an allocation can meet; zero is none.
	Scratch int64
}

// Op is one request to a device.
type Op struct {
	Kind   OpKind
	Stream Stream
	Buffer Buffer
	Event  Event
	Bytes  int64
	Kernel *Kernel
	// Async makes a copy or a kernel launch (CanBeAsync) return to the host
	// as soon as it is enqueued on Stream, as cudaMemcpyAsync and a kernel
	// launch do: its Result then reports only what the call itself refused.
	// Its completion on the device is observed later, by a StreamSync of
	// Stream, an EventSync of an event recorded behind it, or a device-wide
	// call; the work's own error is reported by the first such
	// synchronization that names Stream (Op.Stream, or the event's stream),
	// as CUDA reports a failed kernel at the next sync.
	Async bool
}

// Result is the outcome of an Op.
type Result struct {
	Buffer Buffer // OpMalloc, OpMallocAsync, OpHostAlloc
	Event  Event  // OpRecordEvent
	Free   int64  // OpMemInfo: free bytes as cudaMemGetInfo reports them
	Total  int64  // OpMemInfo
	// Waited is true when the operation had to wait for work of another stream
	// (a device-wide sync, or pool reuse of a block freed on another stream).
	Waited bool
	// Released is how many bytes the call gave back to the device: a
	// cudaFree its buffer, a cudaMemPoolTrimTo what the pool let go; 0 for
	// every other op.
	Released int64
	// Copied is the bytes an OpCopyIn really moved where its stage said
	// (a partition staged with a alone copies less than the op's Bytes);
	// 0: the op's Bytes.
	Copied int64
	Err    error
}

// Info describes a device.
type Info struct {
	Index int
	Name  string
	Total int64 // bytes of device memory
}

// PoolPolicy configures the stream-ordered pool of a device.
type PoolPolicy struct {
	// ReleaseThreshold is how many bytes of freed blocks the pool keeps at a
	// synchronization before returning the rest to the device. cuzk sets it to
	// the maximum (keep everything), so only TrimPool returns memory.
	ReleaseThreshold int64
	// ReuseAcrossStreams lets an allocation reuse a block whose free is still
	// pending on another stream, making the allocating stream wait for that
	// stream (cudaMemPoolReuseAllowInternalDependencies; on by default).
	ReuseAcrossStreams bool
}

// DefaultPoolPolicy is CUDA's default reuse with cuzk's release threshold.
func DefaultPoolPolicy() PoolPolicy {
	return PoolPolicy{ReleaseThreshold: 1<<63 - 1, ReuseAcrossStreams: true}
}

// Device is one GPU as the lock designs see it.
//
// Submit starts op and returns at once; done is called exactly once when the op
// completes, possibly on another goroutine. NewStream never waits.
type Device interface {
	Info() Info
	NewStream() Stream
	Submit(op Op, done func(Result))
}

// OOM wraps ErrOutOfMemory with what was asked and what was free.
func OOM(device int, want, free int64) error {
	return fmt.Errorf("device %d: allocate %s with %s free: %w", device, FormatBytes(want), FormatBytes(free), ErrOutOfMemory)
}

// FormatBytes prints a byte count in binary units.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.2f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
