package gpuprove_test

import (
	"errors"
	"testing"

	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/prover"
)

// standInDevice opens a Device over the stand-in kernel library
// (cuda/testdata/fakegpu.c: host memory behind the C ABI, with a capacity),
// built here with the C compiler cgo uses, so that the Device's own
// bookkeeping runs in every test run, GPU or not.
func standInDevice(t *testing.T, capacity string) *gpuprove.Device {
	t.Helper()
	t.Setenv("CUZK_FAKE_GPU_NS_PER_BYTE", "0.2") // a 64 MiB memset takes 13 ms: work is still queued when the host moves on
	cd := gpuprove.StandInCUDA(t, capacity)
	d, err := gpuprove.NewDevice(cd, gpuprove.DeviceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

// TestDevicePlacesAsyncWork runs the split and budget designs' sequences on
// the Device: a pool buffer, a copy into it, a kernel that returns at
// enqueue and the free behind it, then a stream or event sync. The copy and
// the kernel must both be given the buffer the copy named, although the free
// is submitted before the kernel runs.
func TestDevicePlacesAsyncWork(t *testing.T) {
	const size = 64 << 20
	d := standInDevice(t, "268435456")
	for _, sync := range []gpu.OpKind{gpu.OpStreamSync, gpu.OpEventSync} {
		t.Run(sync.String(), func(t *testing.T) {
			s := d.NewStream()
			r := submit(t, d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: s, Bytes: size})
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			buf := r.Buffer
			var staged, computed gpuprove.Placement
			work := gpuprove.WorkFuncs{
				StageFunc: func(pl gpuprove.Placement) error {
					staged = pl
					return pl.Device.CUDA().Memset(pl.Buffer, 1, pl.Bytes, pl.Stream)
				},
				ComputeFunc: func(pl gpuprove.Placement) error {
					computed = pl
					if pl.Buffer == 0 {
						return errors.New("kernel without its buffer")
					}
					return pl.Device.CUDA().Memset(pl.Buffer, 2, pl.Bytes, pl.Stream)
				},
			}
			k := &gpu.Kernel{Partition: "p", Work: work}
			for _, op := range []gpu.Op{
				{Kind: gpu.OpCopyIn, Stream: s, Buffer: buf, Bytes: size / 2, Kernel: k},
				{Kind: gpu.OpCompute, Stream: s, Kernel: k, Async: true},
				{Kind: gpu.OpFreeAsync, Stream: s, Buffer: buf},
			} {
				if r := submit(t, d, op); r.Err != nil {
					t.Fatalf("%s: %v", op.Kind, r.Err)
				}
			}
			last := gpu.Op{Kind: gpu.OpStreamSync, Stream: s}
			if sync == gpu.OpEventSync {
				r := submit(t, d, gpu.Op{Kind: gpu.OpRecordEvent, Stream: s})
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				last = gpu.Op{Kind: gpu.OpEventSync, Stream: s, Event: r.Event}
			}
			if r := submit(t, d, last); r.Err != nil {
				t.Fatalf("%s after the async kernel: %v", sync, r.Err)
			}
			if staged.Buffer == 0 || staged.Bytes != size || computed.Buffer != staged.Buffer || computed.Bytes != size {
				t.Fatalf("copy placed at %+v, kernel at %+v: want both on the %d-byte buffer", staged, computed, size)
			}
		})
	}
	// A partition's prover.Work needs a backend; this device has none.
	k := &gpu.Kernel{Partition: "q", Work: prover.NewWork(nil, &prover.Keys{}, &prover.Prepared{})}
	if r := submit(t, d, gpu.Op{Kind: gpu.OpCompute, Stream: d.NewStream(), Kernel: k}); r.Err == nil {
		t.Fatal("a partition's work ran on a device without a backend")
	}
	// The ledger: more than the stand-in has is an ordinary out-of-memory.
	if r := submit(t, d, gpu.Op{Kind: gpu.OpMalloc, Bytes: 1 << 30}); !errors.Is(r.Err, gpu.ErrOutOfMemory) {
		t.Fatalf("malloc beyond the capacity: %v, want out of memory", r.Err)
	}
}

// A cudaFree reports the bytes it gave back and a trim what the pool let go
// (the stand-in's pool keeps nothing, so a trim releases nothing): traces
// carry both, and the simulator's calibration charges them by those bytes.
func TestDeviceReportsWhatItReleases(t *testing.T) {
	const size = 64 << 20
	d := standInDevice(t, "268435456")
	m := submit(t, d, gpu.Op{Kind: gpu.OpMalloc, Bytes: size})
	if m.Err != nil {
		t.Fatal(m.Err)
	}
	if r := submit(t, d, gpu.Op{Kind: gpu.OpFree, Buffer: m.Buffer}); r.Err != nil || r.Released != size {
		t.Fatalf("cudaFree of 64 MiB: released %d bytes, error %v", r.Released, r.Err)
	}
	s := d.NewStream()
	a := submit(t, d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: s, Bytes: size})
	if a.Err != nil {
		t.Fatal(a.Err)
	}
	for _, op := range []gpu.Op{{Kind: gpu.OpFreeAsync, Stream: s, Buffer: a.Buffer}, {Kind: gpu.OpStreamSync, Stream: s}} {
		if r := submit(t, d, op); r.Err != nil {
			t.Fatalf("%s: %v", op.Kind, r.Err)
		}
	}
	if r := submit(t, d, gpu.Op{Kind: gpu.OpTrimPool}); r.Err != nil || r.Released != 0 {
		t.Fatalf("a trim of the stand-in's empty pool: released %d bytes, error %v", r.Released, r.Err)
	}
}
