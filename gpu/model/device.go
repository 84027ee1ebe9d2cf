package model

import (
	"fmt"

	"github.com/cuzk/cuzk/gpu"
)

// Options configures a Device.
type Options struct {
	Index int   // the device's index, for errors
	Total int64 // bytes of device memory; required
	// Context is device memory taken before any op (the CUDA context);
	// default 0.
	Context int64
	// Pool is the stream-ordered pool's policy; zero is
	// gpu.DefaultPoolPolicy.
	Pool gpu.PoolPolicy
	// StartFailedWork reports a work item whose start failed (a kernel's
	// scratch that did not fit) with an OutStart too, its Err set, so that
	// the driver decides when the failure returns and finishes it with
	// FinishErr; false: it completes, failed, at once.
	StartFailedWork bool
}

// Stats is a snapshot of the device's ledger and counters.
type Stats struct {
	Used         int64 // Context + Malloced + PoolReserved: what cudaMemGetInfo counts as taken
	Peak         int64 // the largest Used ever seen
	Malloced     int64 // bytes held by cudaMalloc buffers
	PoolReserved int64 // bytes the pool holds from the device (in use or free)
	PoolInUse    int64 // of which allocated
	PoolPending  int64 // freed with FreeAsync but not yet observed by a sync
	PoolObserved int64 // observed free: what TrimPool may release
	OOMs         int   // allocations refused
	CrossWaits   int   // pool allocations that made their stream wait for another stream
	DeviceWaits  int   // device-wide calls that waited for another stream's work
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

type event struct {
	s   *stream
	seq uint64
}

// Device is the clock-free model of one CUDA device: its streams, its VRAM
// ledger, its stream-ordered pool, its buffers and events. A driver submits
// each host call at the moment it is made and reports each piece of device
// work when it ends; the Device decides what starts, what completes, what
// waits on what, and what runs out of memory. It is not safe for concurrent
// use: a driver with goroutines holds a lock around it.
type Device struct {
	*Streams
	opt      Options
	buffers  map[gpu.Buffer]buffer
	events   map[gpu.Event]event
	nextBuf  gpu.Buffer
	nextEv   gpu.Event
	malloced int64
	pool     pool
	peak     int64
	ooms     int
	inject   int
	waits    int // cross-stream pool waits
	devWaits int
	poolPeak int64 // the most the pool has ever reserved
}

// New returns a device model. It fails on a total that is not positive or a
// context that does not fit.
func New(opt Options) (*Device, error) {
	if opt.Total <= 0 {
		return nil, fmt.Errorf("device %d: memory must be positive, got %d", opt.Index, opt.Total)
	}
	if opt.Context < 0 || opt.Context > opt.Total {
		return nil, fmt.Errorf("device %d: context of %d bytes does not fit in %d", opt.Index, opt.Context, opt.Total)
	}
	if opt.Pool == (gpu.PoolPolicy{}) {
		opt.Pool = gpu.DefaultPoolPolicy()
	}
	ss := NewStreams()
	ss.startFailed = opt.StartFailedWork
	d := &Device{Streams: ss, opt: opt, buffers: map[gpu.Buffer]buffer{}, events: map[gpu.Event]event{},
		nextBuf: 1, nextEv: 1}
	d.peak = d.used()
	return d, nil
}

// Total is the device's memory in bytes.
func (d *Device) Total() int64 { return d.opt.Total }

// Policy is the pool policy in force.
func (d *Device) Policy() gpu.PoolPolicy { return d.opt.Pool }

// used is the device memory taken: the context, cudaMalloc'd buffers and
// everything the pool has reserved (in use or not).
func (d *Device) used() int64 { return d.opt.Context + d.malloced + d.pool.reserved }

// Free is what cudaMemGetInfo reports free.
func (d *Device) Free() int64 { return d.opt.Total - d.used() }

// Stats returns a snapshot of the ledger and counters.
func (d *Device) Stats() Stats {
	obs := d.pool.observedFree()
	return Stats{Used: d.used(), Peak: d.peak, Malloced: d.malloced, PoolReserved: d.pool.reserved,
		PoolInUse: d.pool.inUse, PoolPending: d.pool.freeBytes() - obs, PoolObserved: obs,
		OOMs: d.ooms, CrossWaits: d.waits, DeviceWaits: d.devWaits}
}

// InjectOOM makes the next allocation fail with out-of-memory, whatever is
// free (fault injection).
func (d *Device) InjectOOM() { d.inject++ }

func (d *Device) takeInjected() bool {
	if d.inject > 0 {
		d.inject--
		return true
	}
	return false
}

// checkLedger panics, with the state printed, if the ledger is broken: a
// breach is a bug in the model, never a consequence of what was submitted.
func (d *Device) checkLedger() {
	u := d.used()
	if u > d.opt.Total || d.malloced < 0 || d.pool.inUse < 0 || d.pool.reserved != d.pool.inUse+d.pool.freeBytes() {
		panic(fmt.Sprintf("gpu/model: device %d ledger broken: used %d of %d; %+v; %d free blocks",
			d.opt.Index, u, d.opt.Total, d.Stats(), len(d.pool.free)))
	}
	if u > d.peak {
		d.peak = u
	}
}

// BufferBytes is the size of device buffer b, and whether the device holds
// it.
func (d *Device) BufferBytes(b gpu.Buffer) (int64, bool) {
	buf, ok := d.buffers[b]
	if !ok || buf.kind == bufHost {
		return 0, false
	}
	return buf.bytes, true
}

func (d *Device) newBuffer(b buffer) gpu.Buffer {
	id := d.nextBuf
	d.nextBuf++
	d.buffers[id] = b
	return id
}

// Call is the immediate decision on a submitted op.
type Call struct {
	// Result is the op's result when the host call returns at once (Item
	// and Wait nil); with an Item or a Wait it holds what is known now.
	Result gpu.Result
	// Grew is how many bytes a MallocAsync grew the pool by (growth costs
	// host time: the driver charges it).
	Grew int64
	// FirstGrowth says the growth took the pool past the largest size it
	// has had; a growth back to a size it had before a trim is a repeated
	// one, which drivers may charge less (docs/cuda-facts.md).
	FirstGrowth bool
	// Item is the stream item the op became (copy, kernel): the host call
	// completes at the item's OutComplete, with Result.Waited = Item.Waited.
	Item *Item
	// Wait is the host wait the op became (syncs, device-wide calls): the
	// host call completes after its OutMet, with what Return gives.
	Wait *Wait
}

// Submit decides a host call made now. tag travels with the Item or Wait the
// op becomes. Errors for bad input come back in Call.Result.Err, never as a
// panic; the decisions the call caused are in Outputs.
func (d *Device) Submit(op gpu.Op, tag any) Call {
	fail := func(format string, args ...any) Call {
		return Call{Result: gpu.Result{Err: fmt.Errorf("device %d: %s: %s", d.opt.Index, op.Kind, fmt.Sprintf(format, args...))}}
	}
	if !op.Kind.Valid() {
		return fail("unknown operation")
	}
	if op.Kind.NeedsStream() && op.Stream == 0 {
		return fail("needs a stream")
	}
	if op.Async && !op.Kind.OnStream() {
		return fail("cannot be asynchronous: the host call waits")
	}
	switch op.Kind {
	case gpu.OpMemInfo:
		return Call{Result: gpu.Result{Free: d.Free(), Total: d.opt.Total}}

	case gpu.OpMalloc:
		if op.Bytes <= 0 {
			return fail("allocate %d bytes", op.Bytes)
		}
		if d.takeInjected() || op.Bytes > d.Free() {
			d.ooms++
			return Call{Result: gpu.Result{Err: gpu.OOM(d.opt.Index, op.Bytes, d.Free())}}
		}
		d.malloced += op.Bytes
		d.checkLedger()
		return Call{Result: gpu.Result{Buffer: d.newBuffer(buffer{kind: bufMalloc, bytes: op.Bytes})}}

	case gpu.OpFree:
		b, ok := d.buffers[op.Buffer]
		if !ok || b.kind != bufMalloc {
			return fail("buffer %d is not a cudaMalloc'd buffer", op.Buffer)
		}
		delete(d.buffers, op.Buffer)
		// cudaFree synchronizes the whole device before it releases memory.
		c := d.deviceWide(op, tag, func(r *gpu.Result) {
			d.malloced -= b.bytes
			r.Released = b.bytes
			d.checkLedger()
		})
		c.Wait.Releases = b.bytes
		return c

	case gpu.OpMallocAsync:
		return d.mallocAsync(op)

	case gpu.OpFreeAsync:
		b, ok := d.buffers[op.Buffer]
		if !ok || b.kind != bufPool {
			return fail("buffer %d is not a pool allocation", op.Buffer)
		}
		delete(d.buffers, op.Buffer)
		s := d.stream(op.Stream)
		blk := d.pool.release(b.bytes, s, s.submitted+1)
		d.enqueue(s, &Item{Kind: ItemMark, Op: op, Tag: tag, reached: func() { d.pool.complete(blk) }})
		return Call{}

	case gpu.OpTrimPool:
		n := d.pool.trim(op.Bytes)
		d.checkLedger()
		return Call{Result: gpu.Result{Released: n}}

	case gpu.OpDeviceSync:
		return d.deviceWide(op, tag, nil)

	case gpu.OpStreamSync:
		s := d.stream(op.Stream)
		seq := s.submitted
		w := &Wait{Op: op, Tag: tag, targets: []target{{s, seq}}, errStream: s.id, observe: func() { d.observe(s, seq) }}
		d.addWait(w)
		return Call{Wait: w}

	case gpu.OpRecordEvent:
		s := d.stream(op.Stream)
		ev := event{s: s, seq: s.submitted + 1}
		id := d.nextEv
		d.nextEv++
		d.events[id] = ev
		d.enqueue(s, &Item{Kind: ItemMark, Op: op, Tag: tag})
		return Call{Result: gpu.Result{Event: id}}

	case gpu.OpEventSync:
		ev, ok := d.events[op.Event]
		if !ok {
			return fail("event %d was never recorded", op.Event)
		}
		w := &Wait{Op: op, Tag: tag, targets: []target{{ev.s, ev.seq}}, Waited: ev.s.id != op.Stream, errStream: ev.s.id,
			observe: func() { d.observe(ev.s, ev.seq) }}
		d.addWait(w)
		return Call{Wait: w}

	case gpu.OpCopyIn:
		b, ok := d.buffers[op.Buffer]
		if !ok || b.kind == bufHost || op.Bytes < 0 || op.Bytes > b.bytes {
			return fail("copy %d bytes into buffer %d: not a device buffer that large", op.Bytes, op.Buffer)
		}
		it := &Item{Kind: ItemWork, Op: op, Tag: tag}
		d.enqueue(d.stream(op.Stream), it)
		return Call{Item: it}

	case gpu.OpCompute:
		if op.Kernel == nil {
			return fail("no kernel")
		}
		if op.Kernel.Scratch < 0 {
			return fail("kernel scratch of %d bytes", op.Kernel.Scratch)
		}
		it := &Item{Kind: ItemWork, Op: op, Tag: tag}
		if op.Kernel.Scratch > 0 {
			d.scratch(it, op.Kernel.Scratch)
		}
		d.enqueue(d.stream(op.Stream), it)
		return Call{Item: it}

	case gpu.OpHostAlloc:
		// On the H200 cudaHostAlloc returned while another stream's kernel
		// ran (docs/cuda-facts.md): it costs host time, not a wait.
		if op.Bytes <= 0 {
			return fail("pinned allocation of %d bytes", op.Bytes)
		}
		return Call{Result: gpu.Result{Buffer: d.newBuffer(buffer{kind: bufHost, bytes: op.Bytes})}}

	case gpu.OpHostFree:
		b, ok := d.buffers[op.Buffer]
		if !ok || b.kind != bufHost {
			return fail("buffer %d is not pinned host memory", op.Buffer)
		}
		delete(d.buffers, op.Buffer)
		return d.deviceWide(op, tag, nil)
	}
	return fail("unknown operation")
}

// mallocAsync is cudaMallocAsync: the pool decides at call time where the
// bytes come from (see pool.allocate); reusing a block whose free is pending
// on another stream makes this stream wait for that stream, exactly where the
// allocation sits in its order.
func (d *Device) mallocAsync(op gpu.Op) Call {
	if op.Bytes <= 0 {
		return Call{Result: gpu.Result{Err: fmt.Errorf("device %d: %s: allocate %d bytes", d.opt.Index, op.Kind, op.Bytes)}}
	}
	s := d.stream(op.Stream)
	if d.takeInjected() {
		d.ooms++
		return Call{Result: gpu.Result{Err: gpu.OOM(d.opt.Index, op.Bytes, d.Free())}}
	}
	grow, deps, ok := d.pool.allocate(op.Bytes, s, d.Free(), d.opt.Pool.ReuseAcrossStreams)
	if !ok {
		d.ooms++
		return Call{Result: gpu.Result{Err: gpu.OOM(d.opt.Index, op.Bytes, d.Free())}}
	}
	d.checkLedger()
	for _, t := range deps {
		d.waitOn(s, t.s, t.seq)
	}
	if len(deps) > 0 {
		d.waits++
	}
	b := d.newBuffer(buffer{kind: bufPool, bytes: op.Bytes})
	first := grow > 0 && d.pool.reserved > d.poolPeak
	d.poolPeak = max(d.poolPeak, d.pool.reserved)
	return Call{Result: gpu.Result{Buffer: b, Waited: len(deps) > 0}, Grew: grow, FirstGrowth: first}
}

// scratch makes kernel item it take bytes from the pool on its stream when it
// starts and free them there when it ends, as an MSM's cudaMallocAsync and
// cudaFreeAsync inside the kernel do. The allocation takes blocks freed on
// the stream or completed anywhere, then grows the pool; it never waits on
// another stream (the kernel is already running). If it cannot be met the
// kernel fails with out-of-memory without running.
func (d *Device) scratch(it *Item, bytes int64) {
	var got bool
	it.start = func() {
		s := d.stream(it.Stream)
		grew, _, ok := d.pool.allocate(bytes, s, d.Free(), false)
		if !ok {
			d.ooms++
			it.Err = fmt.Errorf("kernel %s scratch: %w", it.Op.Kernel.Partition, gpu.OOM(d.opt.Index, bytes, d.Free()))
			return
		}
		got = true
		it.ScratchGrew = grew
		it.ScratchFirstGrowth = grew > 0 && d.pool.reserved > d.poolPeak
		d.poolPeak = max(d.poolPeak, d.pool.reserved)
		d.checkLedger()
	}
	it.end = func() {
		if !got {
			return
		}
		s := d.stream(it.Stream)
		d.pool.complete(d.pool.release(bytes, s, it.Seq))
		d.checkLedger()
	}
}

// deviceWide makes op wait for every stream-ordered item submitted so far on
// any stream; returning observes every free it waited for, then applies
// effect.
func (d *Device) deviceWide(op gpu.Op, tag any, effect func(*gpu.Result)) Call {
	targets, other := d.busyTargets(op.Stream)
	w := &Wait{Op: op, Tag: tag, targets: targets, Waited: other, errStream: op.Stream, effect: effect}
	w.observe = func() {
		if w.Waited {
			d.devWaits++
		}
		d.pool.observeAll(d.opt.Pool.ReleaseThreshold)
		d.checkLedger()
	}
	d.addWait(w)
	return Call{Wait: w}
}

func (d *Device) observe(s *stream, seq uint64) {
	d.pool.observe(s, seq, d.opt.Pool.ReleaseThreshold)
	d.checkLedger()
}

// Observe records that the host has returned from w: the frees it covered
// become observed (and the release threshold applies). It is idempotent and
// an error before w is met.
func (d *Device) Observe(w *Wait) error {
	switch w.State {
	case Met:
	case Observed, Returned:
		return nil
	default:
		return fmt.Errorf("device %d: observe %s before it is met", d.opt.Index, w.Op.Kind)
	}
	w.State = Observed
	if w.observe != nil {
		w.observe()
	}
	return nil
}

// Return applies w's own effect (cudaFree releases its buffer, cudaHostAlloc
// makes one), observing first if that was not done, and gives the host call's
// result. A second Return, or one before w is met, is an error.
func (d *Device) Return(w *Wait) gpu.Result {
	if w.State == Returned {
		return gpu.Result{Err: fmt.Errorf("device %d: %s returned twice", d.opt.Index, w.Op.Kind)}
	}
	if err := d.Observe(w); err != nil {
		return gpu.Result{Err: err}
	}
	w.State = Returned
	r := gpu.Result{Waited: w.Waited}
	if w.effect != nil {
		w.effect(&r)
	}
	if err := d.Errors(w); err != nil {
		r.Err = fmt.Errorf("device %d: %s: %w", d.opt.Index, w.Op.Kind, err)
	}
	return r
}
