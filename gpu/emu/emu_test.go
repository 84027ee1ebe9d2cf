package emu

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cuzk/cuzk/gpu"
)

const gib = 1 << 30

func newDev(t *testing.T, capacity int64, pool gpu.PoolPolicy) *Device {
	t.Helper()
	return open(t, Options{Capacity: capacity, Pool: pool})
}

// open makes a device of opt, closed when the test ends.
func open(t *testing.T, opt Options) *Device {
	t.Helper()
	d, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

func submit(d *Device, op gpu.Op) chan gpu.Result {
	ch := make(chan gpu.Result, 1)
	d.Submit(op, func(r gpu.Result) { ch <- r })
	return ch
}

func call(t *testing.T, d *Device, op gpu.Op) gpu.Result {
	t.Helper()
	select {
	case r := <-submit(d, op):
		return r
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not complete", op.Kind)
		return gpu.Result{}
	}
}

// gatedKernel launches a kernel on s that runs until the returned func is
// called: "while a kernel runs" without timing.
func gatedKernel(t *testing.T, d *Device, s gpu.Stream) (release func(), done chan gpu.Result) {
	t.Helper()
	gate := make(chan struct{})
	started := make(chan struct{})
	done = submit(d, gpu.Op{Kind: gpu.OpCompute, Stream: s, Kernel: &gpu.Kernel{Partition: "gated", Run: func(context.Context) error {
		close(started)
		<-gate
		return nil
	}}})
	<-started
	return func() { close(gate) }, done
}

// waits reports whether op stays incomplete while a kernel of another stream
// runs, and completes once it ends.
func waits(t *testing.T, d *Device, op gpu.Op) (bool, gpu.Result) {
	t.Helper()
	release, kdone := gatedKernel(t, d, d.NewStream())
	ch := submit(d, op)
	var r gpu.Result
	blocked := false
	select {
	case r = <-ch:
	case <-time.After(50 * time.Millisecond):
		blocked = true
	}
	release()
	<-kdone
	if blocked {
		r = <-ch
	}
	return blocked, r
}

func TestCUDAFactsWhileAKernelRuns(t *testing.T) {
	d := newDev(t, 16*gib, gpu.DefaultPoolPolicy())
	other := d.NewStream()
	idle := d.NewStream()
	malloc := call(t, d, gpu.Op{Kind: gpu.OpMalloc, Bytes: gib})
	host := call(t, d, gpu.Op{Kind: gpu.OpHostAlloc, Bytes: 64 << 20})
	cases := []struct {
		name string
		op   gpu.Op
		want bool
	}{
		{"cudaDeviceSynchronize", gpu.Op{Kind: gpu.OpDeviceSync}, true},
		{"cudaMalloc", gpu.Op{Kind: gpu.OpMalloc, Bytes: gib}, false},
		{"cudaFree", gpu.Op{Kind: gpu.OpFree, Buffer: malloc.Buffer}, true},
		{"cudaMallocAsync on another stream", gpu.Op{Kind: gpu.OpMallocAsync, Stream: other, Bytes: gib}, false},
		{"cudaStreamSynchronize of an idle stream", gpu.Op{Kind: gpu.OpStreamSync, Stream: idle}, false},
		{"cudaMemGetInfo", gpu.Op{Kind: gpu.OpMemInfo}, false},
		{"cudaMemPoolTrimTo", gpu.Op{Kind: gpu.OpTrimPool}, false},
		// Replayed on the H200: cudaHostAlloc returned in 35–43 ms while the
		// 200 ms kernel ran; only cudaFreeHost waited.
		{"cudaHostAlloc", gpu.Op{Kind: gpu.OpHostAlloc, Bytes: 64 << 20}, false},
		{"cudaFreeHost", gpu.Op{Kind: gpu.OpHostFree, Buffer: host.Buffer}, true},
	}
	for _, c := range cases {
		got, r := waits(t, d, c.op)
		if r.Err != nil {
			t.Errorf("%s: %v", c.name, r.Err)
		}
		if got != c.want {
			t.Errorf("%s waited for the kernel: %v, want %v", c.name, got, c.want)
		}
		if c.want && !r.Waited {
			t.Errorf("%s: Result.Waited false after waiting", c.name)
		}
	}
}

func TestPoolFreeIsPendingUntilObserved(t *testing.T) {
	d := newDev(t, 139*gib, gpu.DefaultPoolPolicy())
	s := d.NewStream()
	free := func() int64 { return call(t, d, gpu.Op{Kind: gpu.OpMemInfo}).Free }
	start := free()
	b := call(t, d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: s, Bytes: 8 * gib})
	if got := start - free(); got != 8*gib {
		t.Fatalf("after 8 GiB MallocAsync free dropped by %d", got)
	}
	release, kdone := gatedKernel(t, d, s)
	call(t, d, gpu.Op{Kind: gpu.OpFreeAsync, Stream: s, Buffer: b.Buffer})
	call(t, d, gpu.Op{Kind: gpu.OpTrimPool, Bytes: 0})
	if got := start - free(); got != 8*gib {
		t.Errorf("TrimPool released a free still pending behind a kernel: %d in use", got)
	}
	release()
	<-kdone
	call(t, d, gpu.Op{Kind: gpu.OpStreamSync, Stream: s})
	if got := start - free(); got != 8*gib {
		t.Errorf("the pool gave memory back at a sync despite its release threshold: %d in use", got)
	}
	call(t, d, gpu.Op{Kind: gpu.OpTrimPool, Bytes: 0})
	if got := free(); got != start {
		t.Errorf("after sync and TrimPool(0) free = %d, want %d", got, start)
	}
}

func TestReleaseThresholdReturnsMemoryAtSync(t *testing.T) {
	d := newDev(t, 16*gib, gpu.PoolPolicy{ReleaseThreshold: 0, ReuseAcrossStreams: true})
	s := d.NewStream()
	b := call(t, d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: s, Bytes: 4 * gib})
	call(t, d, gpu.Op{Kind: gpu.OpFreeAsync, Stream: s, Buffer: b.Buffer})
	call(t, d, gpu.Op{Kind: gpu.OpEventSync, Event: call(t, d, gpu.Op{Kind: gpu.OpRecordEvent, Stream: s}).Event})
	if st := d.Stats(); st.Used != 0 {
		t.Errorf("with threshold 0, %d bytes kept after the free was observed", st.Used)
	}
}

func TestOutOfMemory(t *testing.T) {
	d := newDev(t, 16*gib, gpu.DefaultPoolPolicy())
	if r := call(t, d, gpu.Op{Kind: gpu.OpMalloc, Bytes: 10 * gib}); r.Err != nil {
		t.Fatal(r.Err)
	}
	for _, op := range []gpu.Op{{Kind: gpu.OpMalloc, Bytes: 10 * gib}, {Kind: gpu.OpMallocAsync, Stream: 1, Bytes: 10 * gib}} {
		r := call(t, d, op)
		if !errors.Is(r.Err, gpu.ErrOutOfMemory) {
			t.Errorf("%s of 10 GiB with 6 free: err = %v, want ErrOutOfMemory", op.Kind, r.Err)
		}
	}
	if st := d.Stats(); st.Peak > 16*gib || st.OOMs != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestPoolReuseAcrossStreams is the pool's hidden serialization: an
// allocation that does not fit takes a block whose free is pending behind
// another stream's kernel, and everything after it on the allocating stream
// waits for that kernel. With the policy off, the same allocation fails.
func TestPoolReuseAcrossStreams(t *testing.T) {
	for _, reuse := range []bool{true, false} {
		d := newDev(t, 16*gib, gpu.PoolPolicy{ReleaseThreshold: 1<<63 - 1, ReuseAcrossStreams: reuse})
		a, b := d.NewStream(), d.NewStream()
		blk := call(t, d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: a, Bytes: 12 * gib})
		release, kdone := gatedKernel(t, d, a)
		call(t, d, gpu.Op{Kind: gpu.OpFreeAsync, Stream: a, Buffer: blk.Buffer})
		r := call(t, d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: b, Bytes: 12 * gib})
		if !reuse {
			if !errors.Is(r.Err, gpu.ErrOutOfMemory) {
				t.Errorf("reuse off: err = %v, want OOM", r.Err)
			}
			release()
			<-kdone
			continue
		}
		if r.Err != nil || !r.Waited {
			t.Fatalf("reuse on: %+v, want a buffer with Waited", r)
		}
		copied := submit(d, gpu.Op{Kind: gpu.OpCopyIn, Stream: b, Buffer: r.Buffer, Bytes: gib})
		select {
		case <-copied:
			t.Errorf("the copy after a cross-stream reuse ran before the other stream's kernel ended")
		case <-time.After(50 * time.Millisecond):
		}
		release()
		<-kdone
		if c := <-copied; c.Err != nil {
			t.Error(c.Err)
		}
		if st := d.Stats(); st.Used > 16*gib || st.CrossWaits != 1 {
			t.Errorf("stats %+v", st)
		}
	}
}

func TestCopiesOverlapComputeAndKernelsShareTheEngine(t *testing.T) {
	d := newDev(t, 16*gib, gpu.DefaultPoolPolicy())
	a, b := d.NewStream(), d.NewStream()
	buf := call(t, d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: b, Bytes: gib})
	release, kdone := gatedKernel(t, d, a)
	if r := call(t, d, gpu.Op{Kind: gpu.OpCopyIn, Stream: b, Buffer: buf.Buffer, Bytes: gib}); r.Err != nil {
		t.Fatal(r.Err)
	}
	release()
	<-kdone

	var running, most atomic.Int32
	k := &gpu.Kernel{Run: func(context.Context) error {
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
		running.Add(-1)
		return nil
	}}
	x := submit(d, gpu.Op{Kind: gpu.OpCompute, Stream: a, Kernel: k})
	y := submit(d, gpu.Op{Kind: gpu.OpCompute, Stream: b, Kernel: k})
	<-x
	<-y
	if most.Load() != 1 {
		t.Errorf("%d kernels ran at once; the compute engine is shared", most.Load())
	}
}

func TestStreamsRunInOrder(t *testing.T) {
	d := newDev(t, 16*gib, gpu.DefaultPoolPolicy())
	s := d.NewStream()
	var order []int
	var chans []chan gpu.Result
	for i := range 5 {
		chans = append(chans, submit(d, gpu.Op{Kind: gpu.OpCompute, Stream: s, Kernel: &gpu.Kernel{Run: func(context.Context) error {
			order = append(order, i) // stream order also orders this write
			return nil
		}}}))
	}
	for _, c := range chans {
		<-c
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("order %v", order)
		}
	}
}

func TestKernelPanicFailsTheOp(t *testing.T) {
	d := newDev(t, gib, gpu.DefaultPoolPolicy())
	r := call(t, d, gpu.Op{Kind: gpu.OpCompute, Stream: 1, Kernel: &gpu.Kernel{Run: func(context.Context) error { panic("boom") }}})
	if r.Err == nil {
		t.Fatal("a panicking kernel succeeded")
	}
}

func TestPoolGrowthCostsHostTimeButReuseDoesNot(t *testing.T) {
	d, err := New(Options{Capacity: 16 * gib, PoolGrowCost: 80 * time.Millisecond, PoolRegrowCost: 45 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := d.NewStream()
	start := time.Now()
	b := call(t, d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: s, Bytes: 2 * gib})
	if took := time.Since(start); took < 80*time.Millisecond {
		t.Errorf("growing the pool by 2 GiB took %v, want at least 80 ms", took)
	}
	call(t, d, gpu.Op{Kind: gpu.OpFreeAsync, Stream: s, Buffer: b.Buffer})
	call(t, d, gpu.Op{Kind: gpu.OpStreamSync, Stream: s})
	start = time.Now()
	c := call(t, d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: s, Bytes: 2 * gib})
	if took := time.Since(start); took > 40*time.Millisecond {
		t.Errorf("reusing a cached block took %v", took)
	}
	// Freed, trimmed, then grown again to the size it had: the repeated
	// growth's cost, not the first's.
	call(t, d, gpu.Op{Kind: gpu.OpFreeAsync, Stream: s, Buffer: c.Buffer})
	call(t, d, gpu.Op{Kind: gpu.OpStreamSync, Stream: s})
	call(t, d, gpu.Op{Kind: gpu.OpTrimPool})
	start = time.Now()
	call(t, d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: s, Bytes: 2 * gib})
	if took := time.Since(start); took < 45*time.Millisecond || took > 78*time.Millisecond {
		t.Errorf("growing the pool again to its former size took %v, want the repeated growth's 45 ms", took)
	}
}

// Two workers growing the pool at once take turns: the H200's pool does its
// mapping work one call at a time (docs/cuda-facts.md), so the second growth
// returns one growth after the first.
func TestPoolGrowthsTakeTurns(t *testing.T) {
	const grow = 60 * time.Millisecond
	d, err := New(Options{Capacity: 16 * gib, PoolGrowCost: grow})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	start := time.Now()
	var wg sync.WaitGroup
	took := make([]time.Duration, 2)
	for i := range took {
		s := d.NewStream()
		wg.Add(1)
		go func() {
			defer wg.Done()
			call(t, d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: s, Bytes: 2 * gib})
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	if last := max(took[0], took[1]); last < 2*grow {
		t.Errorf("two growths at once: the later returned after %v, want at least %v (one after the other)", last, 2*grow)
	}
}

// TestCopyInRunsTheKernelsStage checks that an OpCopyIn carrying a kernel runs
// its Stage on the copy's stream, beside another stream's running kernel (the
// copy engine overlaps compute), and that a failing Stage fails the op.
func TestCopyInRunsTheKernelsStage(t *testing.T) {
	d := newDev(t, 1<<30, gpu.DefaultPoolPolicy())
	buf := call(t, d, gpu.Op{Kind: gpu.OpMalloc, Bytes: 1 << 20}).Buffer
	release, kdone := gatedKernel(t, d, 1)
	staged := false
	k := &gpu.Kernel{Partition: "p", Stage: func(context.Context) error { staged = true; return nil }}
	if r := call(t, d, gpu.Op{Kind: gpu.OpCopyIn, Stream: 2, Buffer: buf, Bytes: 1 << 20, Kernel: k}); r.Err != nil || !staged {
		t.Fatalf("copy in: %v, staged %v", r.Err, staged)
	}
	release()
	<-kdone
	bad := &gpu.Kernel{Partition: "p", Stage: func(context.Context) error { return context.Canceled }}
	if r := call(t, d, gpu.Op{Kind: gpu.OpCopyIn, Stream: 2, Buffer: buf, Bytes: 1 << 20, Kernel: bad}); r.Err == nil {
		t.Fatal("a failing stage did not fail the copy")
	}
}

// TestAsyncLaunchReturnsAtEnqueue: an asynchronous kernel launch returns while
// the kernel runs; the cudaFreeAsync enqueued behind it stays pending (no trim
// releases it) until a stream sync observes it, and the kernel's error is
// reported by that sync.
func TestAsyncLaunchReturnsAtEnqueue(t *testing.T) {
	d := newDev(t, 16*gib, gpu.DefaultPoolPolicy())
	s := d.NewStream()
	b := call(t, d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: s, Bytes: 8 * gib})
	gate := make(chan struct{})
	k := &gpu.Kernel{Partition: "k", Run: func(context.Context) error { <-gate; return errors.New("bad kernel") }}
	select {
	case r := <-submit(d, gpu.Op{Kind: gpu.OpCompute, Stream: s, Kernel: k, Async: true}):
		if r.Err != nil {
			t.Fatalf("launch: %v", r.Err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("an asynchronous launch waited for its kernel")
	}
	call(t, d, gpu.Op{Kind: gpu.OpFreeAsync, Stream: s, Buffer: b.Buffer})
	call(t, d, gpu.Op{Kind: gpu.OpTrimPool})
	if st := d.Stats(); st.Pending != 8*gib || st.PoolReserved != 8*gib {
		t.Fatalf("while the kernel runs: %+v, want 8 GiB pending and reserved", st)
	}
	sync := submit(d, gpu.Op{Kind: gpu.OpStreamSync, Stream: s})
	select {
	case <-sync:
		t.Fatal("the stream sync returned before the kernel ended")
	case <-time.After(30 * time.Millisecond):
	}
	close(gate)
	if r := <-sync; r.Err == nil || !strings.Contains(r.Err.Error(), "bad kernel") {
		t.Fatalf("stream sync after a failed kernel: %v, want its error", r.Err)
	}
	call(t, d, gpu.Op{Kind: gpu.OpTrimPool})
	if st := d.Stats(); st.PoolReserved != 0 {
		t.Fatalf("after the sync and a trim: %+v, want the pool empty", st)
	}
	if r := call(t, d, gpu.Op{Kind: gpu.OpStreamSync, Stream: s}); r.Err != nil {
		t.Fatalf("a second sync reported the error again: %v", r.Err)
	}
}

// One copy engine serves the copies of every stream one at a time in the
// order they start, as the H200's does: four 1 GiB copies issued at once on
// four streams at 20 GiB/s end about 50 ms apart (at 50, 100, 150 and 200 ms),
// not all together; a cudaFree's work on the engine delays the copy issued
// after it by all of itself.
func TestCopiesTakeTurnsOnOneEngine(t *testing.T) {
	const bw = 20 << 30 // bytes a second: 50 ms a GiB
	d := open(t, Options{Capacity: 16 * gib, CopyBandwidth: bw, FreeCopyWorkPerGiB: 40 * time.Millisecond})
	var bufs []gpu.Buffer
	var streams []gpu.Stream
	for range 4 {
		s := d.NewStream()
		r := call(t, d, gpu.Op{Kind: gpu.OpMalloc, Stream: s, Bytes: gib})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		bufs, streams = append(bufs, r.Buffer), append(streams, s)
	}
	start := time.Now()
	var chs []chan gpu.Result
	for i := range 4 {
		chs = append(chs, submit(d, gpu.Op{Kind: gpu.OpCopyIn, Stream: streams[i], Buffer: bufs[i], Bytes: gib}))
	}
	var ends []time.Duration
	for _, ch := range chs {
		<-ch
		ends = append(ends, time.Since(start))
	}
	for i, e := range ends {
		want := time.Duration(i+1) * 50 * time.Millisecond
		if e < want-5*time.Millisecond || e > want+40*time.Millisecond {
			t.Errorf("copy %d ended at %v; one engine in order ends it at %v (all: %v)", i+1, e, want, ends)
		}
	}
	// A free of 1 GiB leaves 40 ms on the engine: the next copy takes 90.
	if r := call(t, d, gpu.Op{Kind: gpu.OpFree, Buffer: bufs[0]}); r.Err != nil {
		t.Fatal(r.Err)
	}
	start = time.Now()
	call(t, d, gpu.Op{Kind: gpu.OpCopyIn, Stream: streams[1], Buffer: bufs[1], Bytes: gib})
	if e := time.Since(start); e < 85*time.Millisecond || e > 130*time.Millisecond {
		t.Errorf("a copy right after a free of 1 GiB took %v; want about 90 ms (40 of the free's work, 50 its own)", e)
	}
}

// A trim that releases memory leaves its work on the copy engine as a free
// does, by the bytes it released: a copy right after a trim of 1 GiB at
// 40 ms a GiB waits 40 ms, one after a trim that released nothing does not.
func TestTrimLeavesCopyWork(t *testing.T) {
	const bw = 20 << 30 // bytes a second: 50 ms a GiB
	d := open(t, Options{Capacity: 16 * gib, CopyBandwidth: bw, TrimCopyWorkPerGiB: 40 * time.Millisecond})
	s := d.NewStream()
	dst := call(t, d, gpu.Op{Kind: gpu.OpMalloc, Stream: s, Bytes: gib})
	if dst.Err != nil {
		t.Fatal(dst.Err)
	}
	copyAfter := func() time.Duration {
		start := time.Now()
		if r := call(t, d, gpu.Op{Kind: gpu.OpCopyIn, Stream: s, Buffer: dst.Buffer, Bytes: gib}); r.Err != nil {
			t.Fatal(r.Err)
		}
		return time.Since(start)
	}
	if r := call(t, d, gpu.Op{Kind: gpu.OpTrimPool}); r.Err != nil || r.Released != 0 {
		t.Fatalf("a trim of an empty pool: %+v", r)
	}
	if e := copyAfter(); e < 45*time.Millisecond || e > 85*time.Millisecond {
		t.Errorf("a copy after a trim that released nothing took %v; want about 50 ms", e)
	}
	a := call(t, d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: s, Bytes: gib})
	if a.Err != nil {
		t.Fatal(a.Err)
	}
	call(t, d, gpu.Op{Kind: gpu.OpFreeAsync, Stream: s, Buffer: a.Buffer})
	call(t, d, gpu.Op{Kind: gpu.OpStreamSync, Stream: s})
	if r := call(t, d, gpu.Op{Kind: gpu.OpTrimPool}); r.Err != nil || r.Released != gib {
		t.Fatalf("a trim after the free was observed: %+v, want 1 GiB released", r)
	}
	if e := copyAfter(); e < 85*time.Millisecond || e > 130*time.Millisecond {
		t.Errorf("a copy right after a trim of 1 GiB took %v; want about 90 ms (40 of the trim's work, 50 its own)", e)
	}
}
