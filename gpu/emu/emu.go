// Package emu is a gpu.Device that runs on the CPU with CUDA's semantics, so
// that the lock designs can be exercised for real (goroutines, wall clock,
// race detector) on machines without a GPU.
//
// Every decision about order, waiting and memory is gpu/model's — the same
// state machine the simulator drives, so the two cannot disagree: a VRAM
// ledger that refuses what does not fit; streams that run their work in
// order; cudaFree, cudaDeviceSynchronize and pinned host alloc/free that wait
// for every stream; a stream-ordered pool whose freed blocks are pending until
// their stream reaches them and observed only by a synchronization, that
// TrimPool cannot release while unobserved, and that may hand a pending block
// of another stream to an allocation that does not otherwise fit, making the
// allocating stream wait (docs/cuda-facts.md). This driver adds the wall
// clock: a goroutine runs each piece of work the model starts, kernels of all
// streams take turns on one compute engine, copies of all streams take turns
// on one copy engine in the order they start (behind the work a cudaFree left
// on it), each for its bytes at the bandwidth, and growing the pool keeps the
// host waiting, one growth at a time device-wide (the H200's pool does its
// mapping work one call at a time, docs/cuda-facts.md).
//
// What it leaves out: kernels run one at a time rather than sharing the
// engine, blocks are byte counts rather than address ranges (no
// fragmentation), and the default stream is not special.
package emu

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/model"
)

// Options configures an emulated device. Capacity is required; the rest
// default to free and instant operations.
type Options struct {
	Index    int
	Name     string // default "emu"
	Capacity int64  // bytes of device memory
	Pool     gpu.PoolPolicy
	// CopyBandwidth is host→device bytes per second of the one copy engine,
	// which serves copies one at a time in the order they start on their
	// streams; 0 makes copies instant (they still wait their turn on the
	// stream and on the engine).
	CopyBandwidth float64
	// PoolGrowCost is how long a MallocAsync that grows the pool keeps the
	// host waiting, whatever it grows by (docs/cuda-facts.md: about 10 ms a
	// call on the H200, 9.3 ms for 1 GiB and 9.9 ms for 8 GiB); 0 is free.
	PoolGrowCost time.Duration
	// PoolRegrowCost is the same for a growth back to a size the pool had
	// before a trim (cheaper on the H200); 0 is free.
	PoolRegrowCost time.Duration
	// HostAllocCost is how long a pinned host allocation keeps the host
	// (docs/cuda-facts.md: 35–43 ms for 64 MiB on the H200, without
	// waiting for the device); 0 is free.
	HostAllocCost time.Duration
	// FreeCopyWorkPerGiB is the work a cudaFree leaves on the copy engine
	// per GiB freed when it returns (docs/cuda-facts.md: about 2.45 ms on
	// the H200): a copy that starts before that work is done waits for
	// what is left of it. 0: a free leaves nothing behind.
	FreeCopyWorkPerGiB time.Duration
	// TrimCopyWorkPerGiB is the same for a TrimPool, per GiB it released,
	// from the trim's start (this device's trims take no host time; the
	// H200's about 2.59 ms: docs/cuda-facts.md, "A copy after a trim").
	// 0: a trim leaves nothing behind.
	TrimCopyWorkPerGiB time.Duration
	// Scratch, if set, is told of each kernel's scratch allocation as its
	// host time ends: the kernel's partition, the host time it took
	// (PoolGrowCost or PoolRegrowCost where it grew the pool, else none)
	// and its bytes; what the card's kernel host code reports of its
	// cudaMallocAsync.
	Scratch func(partition string, took time.Duration, bytes int64)
}

// Stats is a snapshot of the device's memory ledger.
type Stats struct {
	Used         int64 // MallocUsed + PoolReserved: what the device has given out
	Peak         int64 // the largest Used ever seen
	MallocUsed   int64 // bytes held by Malloc buffers
	PoolReserved int64 // bytes the pool holds from the device (live, pending or cached)
	PoolCached   int64 // observed-free bytes in the pool, reusable by any stream
	Pending      int64 // freed with FreeAsync but not yet observed by a sync
	OOMs         int   // allocations refused
	CrossWaits   int   // allocations that reused a block pending on another stream
}

// Device is an emulated GPU. It is safe for concurrent use.
type Device struct {
	info gpu.Info
	opt  Options

	compute sync.Mutex // the one compute engine all streams share
	pool    sync.Mutex // the pool's mapping work: one growth at a time

	mu     sync.Mutex
	m      *model.Device
	closed bool
	wg     sync.WaitGroup
	// copyEngineFree is when the one copy engine is done with what it has
	// been given: the copies started so far and the work cudaFrees left on
	// it, one after another in the order given, as the H200's serves them
	// (docs/cuda-facts.md: four copies issued at once end one copy's time
	// apart).
	copyEngineFree time.Time
}

var _ gpu.Device = (*Device)(nil)

// work is what the driver keeps with a stream item: the host call to
// complete when it completes (nil for an Async op, whose call returned at
// enqueue).
type work struct {
	done func(gpu.Result)
}

// New returns an emulated device. It fails on a capacity that is not positive.
func New(opt Options) (*Device, error) {
	if opt.Capacity <= 0 {
		return nil, fmt.Errorf("emulated device %d: capacity must be positive, got %d", opt.Index, opt.Capacity)
	}
	if opt.Name == "" {
		opt.Name = "emu"
	}
	if opt.Pool == (gpu.PoolPolicy{}) {
		opt.Pool = gpu.DefaultPoolPolicy()
	}
	m, err := model.New(model.Options{Index: opt.Index, Total: opt.Capacity, Pool: opt.Pool})
	if err != nil {
		return nil, fmt.Errorf("emulated device %d: %w", opt.Index, err)
	}
	return &Device{info: gpu.Info{Index: opt.Index, Name: opt.Name, Total: opt.Capacity}, opt: opt, m: m}, nil
}

// Info describes the device.
func (d *Device) Info() gpu.Info { return d.info }

// Stats returns a snapshot of the memory ledger.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	s := d.m.Stats()
	d.mu.Unlock()
	return Stats{Used: s.Used, Peak: s.Peak, MallocUsed: s.Malloced, PoolReserved: s.PoolReserved,
		PoolCached: s.PoolObserved, Pending: s.PoolPending, OOMs: s.OOMs, CrossWaits: s.CrossWaits}
}

// Close waits for the work already submitted to finish. Work submitted after
// Close fails.
func (d *Device) Close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.wg.Wait()
}

// NewStream returns a fresh stream. Submit also accepts any other nonzero
// stream number and creates its queue on first use.
func (d *Device) NewStream() gpu.Stream {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m.NewStream()
}

// Submit starts op; done is called exactly once when it completes, never
// while Submit holds the device.
func (d *Device) Submit(op gpu.Op, done func(gpu.Result)) {
	if done == nil {
		done = func(gpu.Result) {}
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		done(gpu.Result{Err: fmt.Errorf("device %d: %s after close", d.info.Index, op.Kind)})
		return
	}
	var tag any = done
	if op.Kind == gpu.OpCopyIn || op.Kind == gpu.OpCompute {
		w := &work{done: done}
		if op.Async {
			w.done = nil
		}
		tag = w
	}
	c := d.m.Submit(op, tag)
	calls, starts := d.dispatchLocked()
	if c.Item != nil && op.Async {
		// A launch returns once it is enqueued; its completion is seen by
		// a later synchronization.
		calls = append([]func(){func() { done(gpu.Result{}) }}, calls...)
	}
	if c.Item == nil && c.Wait == nil {
		r := c.Result
		if op.Kind == gpu.OpTrimPool && r.Err == nil && r.Released > 0 {
			d.leaveCopyWork(d.opt.TrimCopyWorkPerGiB, r.Released)
		}
		var cost time.Duration
		switch {
		case op.Kind == gpu.OpHostAlloc:
			cost = d.opt.HostAllocCost
		case c.Grew > 0 && c.FirstGrowth:
			cost = d.opt.PoolGrowCost
		case c.Grew > 0:
			cost = d.opt.PoolRegrowCost
		}
		if cost > 0 && r.Err == nil {
			d.wg.Add(1)
			grows := c.Grew > 0
			starts = append(starts, func() {
				defer d.wg.Done()
				if grows {
					d.grow(cost)
				} else {
					time.Sleep(cost)
				}
				done(r)
			})
		} else {
			calls = append(calls, func() { done(r) })
		}
	}
	d.mu.Unlock()
	run(calls, starts)
}

// grow keeps its caller for a pool growth's cost, one growth at a time.
func (d *Device) grow(cost time.Duration) {
	d.pool.Lock()
	defer d.pool.Unlock()
	time.Sleep(cost)
}

// run completes host calls in the order the model decided, then starts the
// work it started, each on a goroutine of its own.
func run(calls, starts []func()) {
	for _, c := range calls {
		c()
	}
	for _, s := range starts {
		go s()
	}
}

// dispatchLocked turns the model's outputs into host completions to make and
// work to start once the device is released.
func (d *Device) dispatchLocked() (calls, starts []func()) {
	for _, o := range d.m.Outputs() {
		switch o.Kind {
		case model.OutStart:
			it := o.Item
			// A copy takes its turn on the engine when it starts on its
			// stream: it ends its own time after what the engine had
			// before it.
			var copyEnd time.Time
			if it.Op.Kind == gpu.OpCopyIn {
				copyEnd = later(d.copyEngineFree, time.Now())
				if bw := d.opt.CopyBandwidth; bw > 0 {
					copyEnd = copyEnd.Add(time.Duration(float64(it.Op.Bytes) / bw * float64(time.Second)))
				}
				d.copyEngineFree = copyEnd
			}
			d.wg.Add(1)
			starts = append(starts, func() {
				defer d.wg.Done()
				d.runItem(it, copyEnd)
			})
		case model.OutComplete:
			w := o.Item.Tag.(*work)
			if w.done == nil {
				continue
			}
			r := gpu.Result{Waited: o.Item.Waited, Err: o.Item.Err}
			calls = append(calls, func() { w.done(r) })
		case model.OutMet:
			done := o.Wait.Tag.(func(gpu.Result))
			r := d.m.Return(o.Wait)
			if r.Err == nil && r.Released > 0 {
				d.leaveCopyWork(d.opt.FreeCopyWorkPerGiB, r.Released)
			}
			calls = append(calls, func() { done(r) })
		}
	}
	return calls, starts
}

// runItem performs a started copy (which the copy engine finishes at
// copyEnd) or kernel, then reports it to the model.
func (d *Device) runItem(it *model.Item, copyEnd time.Time) {
	var err error
	switch k := it.Op.Kernel; it.Op.Kind {
	case gpu.OpCopyIn:
		if wait := time.Until(copyEnd); wait > 0 {
			time.Sleep(wait)
		}
		// The partition's own staging, if its kernel has one, runs in the
		// copy's place on the stream, as on a real device.
		if k != nil && k.Stage != nil {
			err = d.runStage(k)
		}
	case gpu.OpCompute:
		// Growing the pool for the kernel's scratch is host time inside
		// the kernel's run.
		began := time.Now()
		if it.ScratchGrew > 0 {
			cost := d.opt.PoolRegrowCost
			if it.ScratchFirstGrowth {
				cost = d.opt.PoolGrowCost
			}
			d.grow(cost)
		}
		if d.opt.Scratch != nil && k != nil && k.Scratch > 0 {
			d.opt.Scratch(k.Partition, time.Since(began), k.Scratch)
		}
		err = d.runKernel(k)
	}
	d.mu.Lock()
	if ferr := d.m.FinishErr(it, err); ferr != nil {
		panic(fmt.Sprintf("emu: %v", ferr)) // the driver finished what the model did not start
	}
	calls, starts := d.dispatchLocked()
	d.mu.Unlock()
	run(calls, starts)
}

// leaveCopyWork puts perGiB of work for every GiB released on the copy
// engine, after what it has now: a copy that starts before that work is done
// waits for what is left of it. Called with d.mu held.
func (d *Device) leaveCopyWork(perGiB time.Duration, released int64) {
	if perGiB <= 0 {
		return
	}
	work := time.Duration(float64(perGiB) * float64(released) / (1 << 30))
	d.copyEngineFree = later(d.copyEngineFree, time.Now()).Add(work)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// runKernel runs a kernel on the shared compute engine: two kernels of two
// streams take twice as long as one, as on the H200. A panicking kernel
// fails its op instead of the process.
func (d *Device) runKernel(k *gpu.Kernel) (err error) {
	if k == nil || k.Run == nil {
		return nil
	}
	d.compute.Lock()
	defer d.compute.Unlock()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("device %d: kernel %s panicked: %v", d.info.Index, k.Partition, p)
		}
	}()
	if err := k.Run(context.Background()); err != nil {
		return fmt.Errorf("device %d: kernel %s: %w", d.info.Index, k.Partition, err)
	}
	return nil
}

// runStage runs a kernel's staging on the copy engine's side: it does not
// take the compute engine, so it overlaps other streams' kernels.
func (d *Device) runStage(k *gpu.Kernel) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("device %d: staging %s panicked: %v", d.info.Index, k.Partition, p)
		}
	}()
	if err := k.Stage(context.Background()); err != nil {
		return fmt.Errorf("device %d: stage %s: %w", d.info.Index, k.Partition, err)
	}
	return nil
}
