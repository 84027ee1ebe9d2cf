// Package emu is a gpu.Device that runs on the CPU with CUDA's semantics, so
// that the lock designs can be exercised for real (goroutines, wall clock,
// race detector) on machines without a GPU.
//
// What it keeps from CUDA (see ../../shared/CUDA-FACTS.md and package gpu):
// a VRAM ledger that refuses what does not fit; streams that run their work in
// order; cudaFree, cudaDeviceSynchronize and pinned host alloc/free that wait
// for every stream; a stream-ordered pool whose freed blocks are "pending"
// until a synchronization observes them, that TrimPool cannot release while
// pending, and that may hand a pending block of another stream to an
// allocation that does not otherwise fit, making the allocating stream wait;
// and one compute engine shared by the kernels of all streams.
//
// What it leaves out: copy engines are unlimited (copies of different streams
// run in parallel), blocks are byte counts rather than address ranges
// (no fragmentation), and the default stream is not special.
package emu

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cuzk/cuzk/gpu"
)

// Options configures an emulated device. Capacity is required; the rest
// default to free and instant operations.
type Options struct {
	Index    int
	Name     string // default "emu"
	Capacity int64  // bytes of device memory
	Pool     gpu.PoolPolicy
	// CopyBandwidth is host→device bytes per second; 0 makes copies instant
	// (they still wait their turn on the stream).
	CopyBandwidth float64
	// PoolGrowCost is how long growing the pool by one GiB keeps the host
	// waiting in MallocAsync (CUDA-FACTS: ~9.5 ms on the H200); 0 is free.
	PoolGrowCost time.Duration
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

type bufKind uint8

const (
	bufMalloc bufKind = iota + 1
	bufPool
	bufHost
)

type buffer struct {
	kind  bufKind
	bytes int64
}

// pendingFree is a FreeAsync not yet observed. seq is its position on its
// stream: the block is really free once the stream has run past seq.
type pendingFree struct {
	stream gpu.Stream
	seq    uint64
	bytes  int64
}

type item struct {
	seq  uint64
	run  func() gpu.Result // nil for a pure marker
	done func(gpu.Result)
	// waitStream/waitSeq make the stream wait until another stream has run
	// past waitSeq (pool reuse across streams).
	waitStream *stream
	waitSeq    uint64
}

type stream struct {
	id    gpu.Stream
	queue []item
	enq   uint64 // seq of the last enqueued item
	ran   uint64 // seq of the last completed item
}

// Device is an emulated GPU. It is safe for concurrent use.
type Device struct {
	info gpu.Info
	opt  Options

	compute sync.Mutex // the one compute engine all streams share

	mu      sync.Mutex
	cond    *sync.Cond
	streams map[gpu.Stream]*stream
	bufs    map[gpu.Buffer]buffer
	events  map[gpu.Event]pendingFree // stream and seq of a recorded event
	pending []pendingFree
	next    uint64 // buffer, event and stream ids
	stats   Stats
	closed  bool
	wg      sync.WaitGroup
}

var _ gpu.Device = (*Device)(nil)

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
	d := &Device{
		info:    gpu.Info{Index: opt.Index, Name: opt.Name, Total: opt.Capacity},
		opt:     opt,
		streams: map[gpu.Stream]*stream{},
		bufs:    map[gpu.Buffer]buffer{},
		events:  map[gpu.Event]pendingFree{},
		next:    1000,
	}
	d.cond = sync.NewCond(&d.mu)
	return d, nil
}

// Info describes the device.
func (d *Device) Info() gpu.Info { return d.info }

// Stats returns a snapshot of the memory ledger.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Close stops the stream goroutines once their queues are empty. Work
// submitted after Close fails.
func (d *Device) Close() {
	d.mu.Lock()
	d.closed = true
	d.cond.Broadcast()
	d.mu.Unlock()
	d.wg.Wait()
}

// NewStream returns a fresh stream. Submit also accepts any other nonzero
// stream number and creates its queue on first use.
func (d *Device) NewStream() gpu.Stream {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next++
	s := gpu.Stream(d.next)
	d.streamLocked(s)
	return s
}

func (d *Device) streamLocked(id gpu.Stream) *stream {
	if s, ok := d.streams[id]; ok {
		return s
	}
	s := &stream{id: id}
	d.streams[id] = s
	d.wg.Add(1)
	go d.runStream(s)
	return s
}

// runStream executes a stream's queue in order.
func (d *Device) runStream(s *stream) {
	defer d.wg.Done()
	d.mu.Lock()
	for {
		for len(s.queue) == 0 && !d.closed {
			d.cond.Wait()
		}
		if len(s.queue) == 0 {
			d.mu.Unlock()
			return
		}
		it := s.queue[0]
		if it.waitStream != nil {
			for it.waitStream.ran < it.waitSeq {
				d.cond.Wait()
			}
		}
		d.mu.Unlock()
		var r gpu.Result
		if it.run != nil {
			r = it.run()
		}
		d.mu.Lock()
		s.queue = s.queue[1:]
		s.ran = it.seq
		d.cond.Broadcast()
		if it.done != nil {
			d.mu.Unlock()
			it.done(r)
			d.mu.Lock()
		}
	}
}

// enqueueLocked appends work to stream s and returns its position.
func (d *Device) enqueueLocked(s *stream, it item) uint64 {
	s.enq++
	it.seq = s.enq
	s.queue = append(s.queue, it)
	d.cond.Broadcast()
	return it.seq
}

// Submit starts op; done is called exactly once when it completes.
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
	needsStream := op.Kind == gpu.OpMallocAsync || op.Kind == gpu.OpFreeAsync || op.Kind == gpu.OpStreamSync ||
		op.Kind == gpu.OpRecordEvent || op.Kind == gpu.OpCopyIn || op.Kind == gpu.OpCompute
	if needsStream && op.Stream == 0 {
		d.mu.Unlock()
		done(gpu.Result{Err: fmt.Errorf("device %d: %s needs a stream", d.info.Index, op.Kind)})
		return
	}
	switch op.Kind {
	case gpu.OpMemInfo:
		r := gpu.Result{Free: d.info.Total - d.stats.Used, Total: d.info.Total}
		d.mu.Unlock()
		done(r)
	case gpu.OpMalloc:
		r := d.mallocLocked(op.Bytes)
		d.mu.Unlock()
		done(r)
	case gpu.OpMallocAsync:
		r, grew := d.mallocAsyncLocked(op.Stream, op.Bytes)
		d.mu.Unlock()
		d.afterGrowth(grew, r, done)
	case gpu.OpFreeAsync:
		r := d.freeAsyncLocked(op.Stream, op.Buffer)
		d.mu.Unlock()
		done(r)
	case gpu.OpTrimPool:
		d.trimLocked(op.Bytes)
		d.mu.Unlock()
		done(gpu.Result{})
	case gpu.OpRecordEvent:
		s := d.streamLocked(op.Stream)
		d.next++
		ev := gpu.Event(d.next)
		d.events[ev] = pendingFree{stream: s.id, seq: s.enq}
		d.mu.Unlock()
		done(gpu.Result{Event: ev})
	case gpu.OpCopyIn:
		b, ok := d.bufs[op.Buffer]
		if !ok || b.kind == bufHost || op.Bytes > b.bytes || op.Bytes < 0 {
			d.mu.Unlock()
			done(gpu.Result{Err: fmt.Errorf("device %d: copy %d bytes into buffer %d: not a device buffer that large", d.info.Index, op.Bytes, op.Buffer)})
			return
		}
		bw, n, k := d.opt.CopyBandwidth, op.Bytes, op.Kernel
		d.enqueueLocked(d.streamLocked(op.Stream), item{run: func() gpu.Result {
			if bw > 0 {
				time.Sleep(time.Duration(float64(n) / bw * float64(time.Second)))
			}
			// The partition's own staging, if its kernel has one, runs
			// in the copy's place on the stream, as on a real device.
			if k != nil && k.Stage != nil {
				return d.runStage(k)
			}
			return gpu.Result{}
		}, done: done})
		d.mu.Unlock()
	case gpu.OpCompute:
		k := op.Kernel
		d.enqueueLocked(d.streamLocked(op.Stream), item{run: func() gpu.Result { return d.runKernel(k) }, done: done})
		d.mu.Unlock()
	case gpu.OpStreamSync:
		s := d.streamLocked(op.Stream)
		target := s.enq
		d.mu.Unlock()
		d.wait(func() (bool, bool) { return s.ran >= target, false }, func() {
			d.observeLocked(s.id, target)
		}, done)
	case gpu.OpEventSync:
		at, ok := d.events[op.Event]
		if !ok {
			d.mu.Unlock()
			done(gpu.Result{Err: fmt.Errorf("device %d: sync on unknown event %d", d.info.Index, op.Event)})
			return
		}
		s := d.streams[at.stream]
		d.mu.Unlock()
		d.wait(func() (bool, bool) { return s.ran >= at.seq, false }, func() {
			d.observeLocked(s.id, at.seq)
		}, done)
	case gpu.OpDeviceSync, gpu.OpFree, gpu.OpHostAlloc, gpu.OpHostFree:
		d.deviceWideLocked(op, done)
	default:
		d.mu.Unlock()
		done(gpu.Result{Err: fmt.Errorf("device %d: unknown op %s", d.info.Index, op.Kind)})
	}
}

// runKernel runs a kernel on the shared compute engine: two kernels of two
// streams take twice as long as one, as on the H200. A panicking kernel
// fails its op instead of the process.
func (d *Device) runKernel(k *gpu.Kernel) (r gpu.Result) {
	if k == nil || k.Run == nil {
		return gpu.Result{}
	}
	d.compute.Lock()
	defer d.compute.Unlock()
	defer func() {
		if p := recover(); p != nil {
			r = gpu.Result{Err: fmt.Errorf("device %d: kernel %s panicked: %v", d.info.Index, k.Partition, p)}
		}
	}()
	if err := k.Run(context.Background()); err != nil {
		return gpu.Result{Err: fmt.Errorf("device %d: kernel %s: %w", d.info.Index, k.Partition, err)}
	}
	return gpu.Result{}
}

// runStage runs a kernel's staging on the copy engine's side: it does not
// take the compute engine, so it overlaps other streams' kernels.
func (d *Device) runStage(k *gpu.Kernel) (r gpu.Result) {
	defer func() {
		if p := recover(); p != nil {
			r = gpu.Result{Err: fmt.Errorf("device %d: staging %s panicked: %v", d.info.Index, k.Partition, p)}
		}
	}()
	if err := k.Stage(context.Background()); err != nil {
		return gpu.Result{Err: fmt.Errorf("device %d: stage %s: %w", d.info.Index, k.Partition, err)}
	}
	return gpu.Result{}
}

// snapshotLocked records how far every stream has been enqueued, and whether
// any work is still in flight.
func (d *Device) snapshotLocked() (map[*stream]uint64, bool) {
	snap := make(map[*stream]uint64, len(d.streams))
	busy := false
	for _, s := range d.streams {
		snap[s] = s.enq
		busy = busy || s.ran < s.enq
	}
	return snap, busy
}

// deviceWideLocked runs an op that, as in CUDA, first waits for every
// stream's work submitted before it: cudaDeviceSynchronize, cudaFree,
// cudaHostAlloc and cudaFreeHost.
func (d *Device) deviceWideLocked(op gpu.Op, done func(gpu.Result)) {
	if op.Kind == gpu.OpFree {
		b, ok := d.bufs[op.Buffer]
		if !ok || b.kind != bufMalloc {
			d.mu.Unlock()
			done(gpu.Result{Err: fmt.Errorf("device %d: free buffer %d: not a Malloc buffer", d.info.Index, op.Buffer)})
			return
		}
	}
	if op.Kind == gpu.OpHostFree {
		if b, ok := d.bufs[op.Buffer]; !ok || b.kind != bufHost {
			d.mu.Unlock()
			done(gpu.Result{Err: fmt.Errorf("device %d: free host buffer %d: not a host buffer", d.info.Index, op.Buffer)})
			return
		}
	}
	snap, busy := d.snapshotLocked()
	d.mu.Unlock()
	all := func() (bool, bool) {
		for s, at := range snap {
			if s.ran < at {
				return false, busy
			}
		}
		return true, busy
	}
	var r gpu.Result
	d.wait(all, func() {
		for s, at := range snap {
			d.observeLocked(s.id, at)
		}
		switch op.Kind {
		case gpu.OpFree:
			if b, ok := d.bufs[op.Buffer]; ok {
				delete(d.bufs, op.Buffer)
				d.stats.MallocUsed -= b.bytes
				d.stats.Used -= b.bytes
			} else {
				r.Err = fmt.Errorf("device %d: free buffer %d: freed twice", d.info.Index, op.Buffer)
			}
		case gpu.OpHostAlloc:
			d.next++
			r.Buffer = gpu.Buffer(d.next)
			d.bufs[r.Buffer] = buffer{kind: bufHost, bytes: op.Bytes}
		case gpu.OpHostFree:
			delete(d.bufs, op.Buffer)
		}
	}, func(w gpu.Result) {
		r.Waited = w.Waited
		done(r)
	})
}

// wait completes done on its own goroutine once ready holds; then, under the
// device lock, it runs observe (what the host learns by having waited).
func (d *Device) wait(ready func() (ok, busy bool), observe func(), done func(gpu.Result)) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.mu.Lock()
		waited := false
		for {
			ok, busy := ready()
			if ok {
				waited = waited || busy
				break
			}
			waited = true
			d.cond.Wait()
		}
		observe()
		d.mu.Unlock()
		done(gpu.Result{Waited: waited})
	}()
}

func (d *Device) mallocLocked(n int64) gpu.Result {
	if n <= 0 {
		return gpu.Result{Err: fmt.Errorf("device %d: malloc %d bytes", d.info.Index, n)}
	}
	if free := d.info.Total - d.stats.Used; n > free {
		d.stats.OOMs++
		return gpu.Result{Err: gpu.OOM(d.info.Index, n, free)}
	}
	d.stats.MallocUsed += n
	d.addUsedLocked(n)
	d.next++
	b := gpu.Buffer(d.next)
	d.bufs[b] = buffer{kind: bufMalloc, bytes: n}
	return gpu.Result{Buffer: b}
}

func (d *Device) addUsedLocked(n int64) {
	d.stats.Used += n
	if d.stats.Used > d.stats.Peak {
		d.stats.Peak = d.stats.Used
	}
}

// mallocAsyncLocked serves a pool allocation on stream sid, in the order a
// CUDA pool does: observed-free blocks first; then blocks freed earlier on the
// same stream (stream order makes them safe); then new memory from the device;
// and only then, with ReuseAcrossStreams, blocks whose free is still pending
// on another stream — which makes this stream wait for that one. It returns
// how many bytes the pool grew by.
func (d *Device) mallocAsyncLocked(sid gpu.Stream, n int64) (gpu.Result, int64) {
	if n <= 0 {
		return gpu.Result{Err: fmt.Errorf("device %d: malloc_async %d bytes", d.info.Index, n)}, 0
	}
	s := d.streamLocked(sid)
	var same, other int64
	for _, p := range d.pending {
		if p.stream == sid {
			same += p.bytes
		} else {
			other += p.bytes
		}
	}
	free := d.info.Total - d.stats.Used
	avail := d.stats.PoolCached + same + free
	if d.opt.Pool.ReuseAcrossStreams {
		avail += other
	}
	if n > avail {
		d.stats.OOMs++
		// What cudaMemGetInfo would call free, plus what the pool could hand out:
		// the error says what this allocation could have had.
		return gpu.Result{Err: gpu.OOM(d.info.Index, n, avail)}, 0
	}
	need := n
	take := min(need, d.stats.PoolCached)
	d.stats.PoolCached -= take
	need -= take
	need = d.takePendingLocked(need, func(p pendingFree) bool { return p.stream == sid }, nil)
	grow := min(need, free)
	d.stats.PoolReserved += grow
	d.addUsedLocked(grow)
	need -= grow
	waited := false
	if need > 0 {
		need = d.takePendingLocked(need, func(p pendingFree) bool { return p.stream != sid }, func(p pendingFree) {
			// The block is still in use until its stream runs past the free:
			// everything this stream does next waits for that.
			d.enqueueLocked(s, item{waitStream: d.streams[p.stream], waitSeq: p.seq})
			waited = true
		})
		d.stats.CrossWaits++
	}
	if need != 0 {
		// Unreachable: avail covered n.
		return gpu.Result{Err: fmt.Errorf("device %d: pool ledger inconsistent (%d bytes unserved)", d.info.Index, need)}, grow
	}
	d.next++
	b := gpu.Buffer(d.next)
	d.bufs[b] = buffer{kind: bufPool, bytes: n}
	return gpu.Result{Buffer: b, Waited: waited}, grow
}

// takePendingLocked moves up to need bytes out of pending frees that match,
// oldest first, and returns what is still needed.
func (d *Device) takePendingLocked(need int64, match func(pendingFree) bool, took func(pendingFree)) int64 {
	kept := d.pending[:0]
	for _, p := range d.pending {
		if need > 0 && match(p) {
			t := min(need, p.bytes)
			need -= t
			d.stats.Pending -= t
			if took != nil {
				took(p)
			}
			p.bytes -= t
		}
		if p.bytes > 0 {
			kept = append(kept, p)
		}
	}
	d.pending = kept
	return need
}

func (d *Device) afterGrowth(grew int64, r gpu.Result, done func(gpu.Result)) {
	if grew == 0 || d.opt.PoolGrowCost == 0 || r.Err != nil {
		done(r)
		return
	}
	cost := time.Duration(float64(d.opt.PoolGrowCost) * float64(grew) / (1 << 30))
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		time.Sleep(cost)
		done(r)
	}()
}

func (d *Device) freeAsyncLocked(sid gpu.Stream, buf gpu.Buffer) gpu.Result {
	b, ok := d.bufs[buf]
	if !ok || b.kind != bufPool {
		return gpu.Result{Err: fmt.Errorf("device %d: free_async buffer %d: not a pool buffer", d.info.Index, buf)}
	}
	delete(d.bufs, buf)
	s := d.streamLocked(sid)
	seq := d.enqueueLocked(s, item{})
	d.pending = append(d.pending, pendingFree{stream: sid, seq: seq, bytes: b.bytes})
	d.stats.Pending += b.bytes
	return gpu.Result{}
}

// observeLocked turns the pending frees of stream sid at or before seq into
// cached pool memory — the host has synchronized past them — and then
// returns to the device what the release threshold does not let the pool keep.
func (d *Device) observeLocked(sid gpu.Stream, seq uint64) {
	kept := d.pending[:0]
	for _, p := range d.pending {
		if p.stream == sid && p.seq <= seq {
			d.stats.Pending -= p.bytes
			d.stats.PoolCached += p.bytes
			continue
		}
		kept = append(kept, p)
	}
	d.pending = kept
	if over := d.stats.PoolReserved - d.opt.Pool.ReleaseThreshold; over > 0 {
		d.releaseCachedLocked(over)
	}
}

// trimLocked is cudaMemPoolTrimTo(keep): it returns cached blocks until the
// pool holds at most keep bytes; live and pending blocks stay.
func (d *Device) trimLocked(keep int64) {
	if over := d.stats.PoolReserved - max(keep, 0); over > 0 {
		d.releaseCachedLocked(over)
	}
}

func (d *Device) releaseCachedLocked(n int64) {
	r := min(n, d.stats.PoolCached)
	d.stats.PoolCached -= r
	d.stats.PoolReserved -= r
	d.stats.Used -= r
}
