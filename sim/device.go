package sim

import (
	"fmt"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
)

// Device is the simulated GPU. It implements gpu.Device with CUDA's semantics
// as measured on the H200 (../shared/CUDA-FACTS.md), and knows nothing of lock
// designs:
//
//   - Streams are FIFO queues of stream-ordered work (copies, kernels, frees,
//     event records, and the waits the pool inserts). An op starts when the one
//     before it on its stream has completed.
//   - Kernels of every stream share one compute engine by processor sharing;
//     host→device copies share one copy engine (the bus) the same way; the two
//     engines run concurrently.
//   - Host calls that synchronize the device (DeviceSync, Free, HostAlloc,
//     HostFree) complete only when every stream-ordered op submitted before them
//     has completed. StreamSync and EventSync wait for their own stream only.
//   - The stream-ordered pool is described on pool.
//
// Submit never calls done inline: completions are events on the kernel's
// timeline, so an actor never re-enters itself.
type Device struct {
	k      *Kernel
	info   gpu.Info
	prof   DeviceProfile
	policy gpu.PoolPolicy

	streams    map[gpu.Stream]*stream
	nextStream gpu.Stream
	nextBuffer gpu.Buffer
	nextEvent  gpu.Event

	buffers  map[gpu.Buffer]*buffer
	malloced int64 // cudaMalloc'd bytes (and the context)
	pool     pool
	events   map[gpu.Event]*devEvent
	waiters  []*syncWaiter
	blocked  []*stream // streams whose head op waits for another stream

	compute *psServer
	copier  *psServer

	peak          int64
	ooms          int
	injectedOOMs  int
	waitedAllocs  int
	deviceWaits   int
	deviceWaitDur time.Duration
}

var _ gpu.Device = (*Device)(nil)

type stream struct {
	id        gpu.Stream
	queue     []*streamOp
	head      int
	running   bool
	blocked   bool   // listed in Device.blocked
	submitted uint64 // sequence number of the last op enqueued
	completed uint64 // sequence number of the last op completed
}

type streamOpKind uint8

const (
	sopCopy streamOpKind = iota + 1
	sopKernel
	sopFree   // a FreeAsync reaching its place in the stream
	sopRecord // an event record
	sopWait   // wait until another stream has completed up to a sequence number
)

type streamOp struct {
	kind   streamOpKind
	seq    uint64
	work   float64 // solo ns on the engine
	label  string
	block  *poolBlock
	event  *devEvent
	dep    *stream
	depSeq uint64
	done   func() // host notification, if the host waits for this op
}

type buffer struct {
	bytes  int64
	pooled bool
	host   bool
}

type devEvent struct {
	stream *stream
	seq    uint64
}

// syncWaiter is a host call that waits until streams have completed up to
// given sequence numbers.
type syncWaiter struct {
	targets []streamTarget
	done    func()
}

type streamTarget struct {
	s   *stream
	seq uint64
}

func newDevice(k *Kernel, index int, total int64, prof DeviceProfile, policy gpu.PoolPolicy) *Device {
	name := prof.Name
	if name == "" {
		name = "simulated GPU"
	}
	d := &Device{
		k:          k,
		info:       gpu.Info{Index: index, Name: name, Total: total},
		prof:       prof,
		policy:     policy,
		streams:    map[gpu.Stream]*stream{},
		nextStream: 1,
		nextBuffer: 1,
		nextEvent:  1,
		buffers:    map[gpu.Buffer]*buffer{},
		events:     map[gpu.Event]*devEvent{},
		malloced:   int64(prof.ContextMiB * (1 << 20)),
	}
	d.compute = newPSServer(k, equalShare)
	d.copier = newPSServer(k, equalShare)
	d.peak = d.used()
	return d
}

// Info implements gpu.Device.
func (d *Device) Info() gpu.Info { return d.info }

// NewStream implements gpu.Device.
func (d *Device) NewStream() gpu.Stream {
	s := d.nextStream
	d.nextStream++
	d.stream(s)
	return s
}

func (d *Device) stream(id gpu.Stream) *stream {
	s, ok := d.streams[id]
	if !ok {
		s = &stream{id: id}
		d.streams[id] = s
		if id >= d.nextStream {
			d.nextStream = id + 1
		}
	}
	return s
}

// used is the device memory taken: cudaMalloc'd buffers, the context, and
// everything the pool has reserved (in use or not).
func (d *Device) used() int64 { return d.malloced + d.pool.reserved }

// free is what cudaMemGetInfo reports.
func (d *Device) free() int64 { return d.info.Total - d.used() }

func (d *Device) noteUsage() {
	u := d.used()
	// VRAM in use never exceeds the device: every path that takes memory checks
	// free() first, so a breach is a bug in this model, not a scenario error.
	if u > d.info.Total {
		panic(fmt.Sprintf("sim: device %d uses %d bytes of %d", d.info.Index, u, d.info.Total))
	}
	if u > d.peak {
		d.peak = u
	}
}

// InjectOOM makes the next allocation on the device fail with out-of-memory,
// whatever is free.
func (d *Device) InjectOOM() { d.injectedOOMs++ }

// Stats is what a device did over a run.
type DeviceStats struct {
	Peak         int64         // highest device memory in use, bytes
	ComputeBusy  time.Duration // time at least one kernel ran
	CopyBusy     time.Duration
	OOMs         int // allocations that failed
	WaitedAllocs int // pool allocations that made their stream wait for another stream
	DeviceWaits  int // device-wide waits (sync, free, pinned alloc) that waited for work
	DeviceWaited time.Duration
	PoolReserved int64
}

// Stats reports the device's counters.
func (d *Device) Stats() DeviceStats {
	return DeviceStats{
		Peak: d.peak, ComputeBusy: d.compute.busyUntilNow(), CopyBusy: d.copier.busyUntilNow(),
		OOMs: d.ooms, WaitedAllocs: d.waitedAllocs, DeviceWaits: d.deviceWaits, DeviceWaited: d.deviceWaitDur,
		PoolReserved: d.pool.reserved,
	}
}

// Submit implements gpu.Device.
func (d *Device) Submit(op gpu.Op, done func(gpu.Result)) {
	if done == nil {
		done = func(gpu.Result) {}
	}
	now := d.k.now
	reply := func(after time.Duration, r gpu.Result) {
		d.k.At(now+after, func() { done(r) })
	}
	fail := func(err error) { reply(0, gpu.Result{Err: fmt.Errorf("device %d %s: %w", d.info.Index, op.Kind, err)}) }
	switch op.Kind {
	case gpu.OpMemInfo:
		reply(ms(d.prof.MemInfoMs), gpu.Result{Free: d.free(), Total: d.info.Total})

	case gpu.OpMalloc:
		if op.Bytes <= 0 {
			fail(fmt.Errorf("allocate %d bytes", op.Bytes))
			return
		}
		if d.takeInjected() || op.Bytes > d.free() {
			d.ooms++
			reply(ms(d.prof.MallocMs), gpu.Result{Err: gpu.OOM(d.info.Index, op.Bytes, d.free())})
			return
		}
		d.malloced += op.Bytes
		d.noteUsage()
		b := d.newBuffer(&buffer{bytes: op.Bytes})
		reply(ms(d.prof.MallocMs), gpu.Result{Buffer: b})

	case gpu.OpFree:
		b, ok := d.buffers[op.Buffer]
		if !ok || b.pooled || b.host {
			fail(fmt.Errorf("free of buffer %d, which is not a cudaMalloc'd buffer", op.Buffer))
			return
		}
		delete(d.buffers, op.Buffer)
		// cudaFree synchronizes the whole device before it releases memory.
		d.deviceWide(op.Stream, 0, func(waited bool) {
			d.malloced -= b.bytes
			done(gpu.Result{Waited: waited})
		})

	case gpu.OpMallocAsync:
		d.mallocAsync(op, reply)

	case gpu.OpFreeAsync:
		b, ok := d.buffers[op.Buffer]
		if !ok || !b.pooled {
			fail(fmt.Errorf("free_async of buffer %d, which is not a pool allocation", op.Buffer))
			return
		}
		delete(d.buffers, op.Buffer)
		s := d.stream(op.Stream)
		blk := d.pool.release(b.bytes, s, s.submitted+1)
		d.enqueue(s, &streamOp{kind: sopFree, block: blk})
		reply(0, gpu.Result{})

	case gpu.OpTrimPool:
		d.pool.trim(op.Bytes)
		reply(0, gpu.Result{})

	case gpu.OpDeviceSync:
		d.deviceWide(op.Stream, 0, func(waited bool) { done(gpu.Result{Waited: waited}) })

	case gpu.OpStreamSync:
		s := d.stream(op.Stream)
		target := s.submitted
		d.wait([]streamTarget{{s, target}}, func() {
			d.pool.observe(s, target, d.policy.ReleaseThreshold)
			done(gpu.Result{})
		})

	case gpu.OpRecordEvent:
		s := d.stream(op.Stream)
		ev := &devEvent{stream: s, seq: s.submitted + 1}
		id := d.nextEvent
		d.nextEvent++
		d.events[id] = ev
		d.enqueue(s, &streamOp{kind: sopRecord, event: ev})
		reply(0, gpu.Result{Event: id})

	case gpu.OpEventSync:
		ev, ok := d.events[op.Event]
		if !ok {
			fail(fmt.Errorf("event %d was never recorded", op.Event))
			return
		}
		d.wait([]streamTarget{{ev.stream, ev.seq}}, func() {
			d.pool.observe(ev.stream, ev.seq, d.policy.ReleaseThreshold)
			done(gpu.Result{Waited: ev.stream.id != op.Stream})
		})

	case gpu.OpCopyIn:
		if op.Bytes < 0 {
			fail(fmt.Errorf("copy of %d bytes", op.Bytes))
			return
		}
		work := float64(op.Bytes) / (d.prof.H2DGBps * 1e9) * 1e9
		start := now
		d.enqueue(d.stream(op.Stream), &streamOp{kind: sopCopy, work: work, label: fmt.Sprintf("copy %s", gpu.FormatBytes(op.Bytes)),
			done: func() {
				d.k.At(d.k.now, func() { done(gpu.Result{Waited: d.k.now-start > time.Duration(work)+time.Microsecond}) })
			}})

	case gpu.OpCompute:
		if op.Kernel == nil {
			fail(fmt.Errorf("compute without a kernel"))
			return
		}
		cost, err := d.k.profile.stageCost(actors.StageCompute, op.Kernel.Size)
		if err != nil {
			fail(err)
			return
		}
		cost = d.k.jitter(cost)
		d.enqueue(d.stream(op.Stream), &streamOp{kind: sopKernel, work: float64(cost), label: op.Kernel.Partition,
			done: func() { d.k.At(d.k.now, func() { done(gpu.Result{}) }) }})

	case gpu.OpHostAlloc:
		if op.Bytes <= 0 {
			fail(fmt.Errorf("pinned allocation of %d bytes", op.Bytes))
			return
		}
		cost := ms(d.prof.HostAllocMs + d.prof.HostAllocMsPerGiB*float64(op.Bytes)/float64(gib))
		d.deviceWide(op.Stream, cost, func(waited bool) {
			b := d.newBuffer(&buffer{bytes: op.Bytes, host: true})
			done(gpu.Result{Buffer: b, Waited: waited})
		})

	case gpu.OpHostFree:
		b, ok := d.buffers[op.Buffer]
		if !ok || !b.host {
			fail(fmt.Errorf("host_free of buffer %d, which is not pinned host memory", op.Buffer))
			return
		}
		delete(d.buffers, op.Buffer)
		d.deviceWide(op.Stream, 0, func(waited bool) { done(gpu.Result{Waited: waited}) })

	default:
		fail(fmt.Errorf("unknown operation"))
	}
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func (d *Device) takeInjected() bool {
	if d.injectedOOMs > 0 {
		d.injectedOOMs--
		return true
	}
	return false
}

func (d *Device) newBuffer(b *buffer) gpu.Buffer {
	id := d.nextBuffer
	d.nextBuffer++
	d.buffers[id] = b
	return id
}

// mallocAsync is cudaMallocAsync: the pool decides at call time where the
// bytes come from (see pool.allocate); growing the pool costs host time, and
// reusing a block whose free is pending on another stream makes this stream
// wait for that stream, exactly where the allocation sits in its order.
func (d *Device) mallocAsync(op gpu.Op, reply func(time.Duration, gpu.Result)) {
	if op.Bytes <= 0 {
		reply(0, gpu.Result{Err: fmt.Errorf("device %d malloc_async: allocate %d bytes", d.info.Index, op.Bytes)})
		return
	}
	s := d.stream(op.Stream)
	if d.takeInjected() {
		d.ooms++
		reply(0, gpu.Result{Err: gpu.OOM(d.info.Index, op.Bytes, d.free())})
		return
	}
	grow, deps, ok := d.pool.allocate(op.Bytes, s, d.free(), d.policy.ReuseAcrossStreams)
	if !ok {
		d.ooms++
		reply(0, gpu.Result{Err: gpu.OOM(d.info.Index, op.Bytes, d.free())})
		return
	}
	d.noteUsage()
	for _, t := range deps {
		d.enqueue(s, &streamOp{kind: sopWait, dep: t.s, depSeq: t.seq})
	}
	if len(deps) > 0 {
		d.waitedAllocs++
	}
	b := d.newBuffer(&buffer{bytes: op.Bytes, pooled: true})
	cost := ms(d.prof.PoolGrowthMsPerGiB * float64(grow) / float64(gib))
	reply(cost, gpu.Result{Buffer: b, Waited: len(deps) > 0})
}

// deviceWide runs done(waited) once every stream-ordered op submitted so far on
// any stream has completed, plus cost. A device-wide synchronization observes
// every free it waited for.
func (d *Device) deviceWide(own gpu.Stream, cost time.Duration, done func(waited bool)) {
	var targets []streamTarget
	waited := false
	for _, s := range d.orderedStreams() {
		if s.completed < s.submitted {
			targets = append(targets, streamTarget{s, s.submitted})
			if s.id != own {
				waited = true
			}
		}
	}
	start := d.k.now
	d.wait(targets, func() {
		if waited {
			d.deviceWaits++
			d.deviceWaitDur += d.k.now - start
		}
		d.pool.observeAll(d.policy.ReleaseThreshold)
		if cost > 0 {
			d.k.At(d.k.now+cost, func() { done(waited) })
			return
		}
		done(waited)
	})
}

// orderedStreams lists streams by id, so that nothing depends on map order.
func (d *Device) orderedStreams() []*stream {
	out := make([]*stream, 0, len(d.streams))
	for id := gpu.Stream(0); id < d.nextStream; id++ {
		if s, ok := d.streams[id]; ok {
			out = append(out, s)
		}
	}
	return out
}

// wait calls done (from the timeline, never inline) once every target is met.
func (d *Device) wait(targets []streamTarget, done func()) {
	w := &syncWaiter{targets: targets, done: done}
	if w.met() {
		d.k.At(d.k.now, done)
		return
	}
	d.waiters = append(d.waiters, w)
}

func (w *syncWaiter) met() bool {
	for _, t := range w.targets {
		if t.s.completed < t.seq {
			return false
		}
	}
	return true
}

func (d *Device) enqueue(s *stream, op *streamOp) {
	s.submitted++
	op.seq = s.submitted
	s.queue = append(s.queue, op)
	d.pump(s)
}

// pump starts the op at the head of s if the stream is idle.
func (d *Device) pump(s *stream) {
	for !s.running && s.head < len(s.queue) {
		op := s.queue[s.head]
		s.running = true
		switch op.kind {
		case sopCopy:
			d.copier.add(&psJob{remaining: op.work, label: op.label, done: func(start time.Duration) {
				d.activity("copy", s, op.label, start)
				d.complete(s, op)
			}})
			return
		case sopKernel:
			d.compute.add(&psJob{remaining: op.work, label: op.label, done: func(start time.Duration) {
				d.activity("compute", s, op.label, start)
				d.complete(s, op)
			}})
			return
		case sopWait:
			if op.dep.completed < op.depSeq {
				// Picked up again by checkWaiters when the other stream moves.
				s.running = false
				if !s.blocked {
					s.blocked = true
					d.blocked = append(d.blocked, s)
				}
				return
			}
			d.finish(s, op)
		case sopFree:
			d.pool.complete(op.block)
			d.finish(s, op)
		case sopRecord:
			d.finish(s, op)
		}
	}
}

// finish retires the head op of s without recursing into pump.
func (d *Device) finish(s *stream, op *streamOp) {
	s.queue[s.head] = nil
	s.head++
	if s.head > 64 && s.head*2 > len(s.queue) {
		s.queue = append(s.queue[:0], s.queue[s.head:]...)
		s.head = 0
	}
	s.completed = op.seq
	s.running = false
	if op.done != nil {
		op.done()
	}
	d.checkWaiters()
}

func (d *Device) complete(s *stream, op *streamOp) {
	d.finish(s, op)
	d.pump(s)
}

// checkWaiters releases host waits that are now met and restarts streams
// blocked on another stream's progress.
func (d *Device) checkWaiters() {
	if len(d.waiters) > 0 {
		kept := d.waiters[:0]
		var ready []*syncWaiter
		for _, w := range d.waiters {
			if w.met() {
				ready = append(ready, w)
			} else {
				kept = append(kept, w)
			}
		}
		for i := len(kept); i < len(d.waiters); i++ {
			d.waiters[i] = nil
		}
		d.waiters = kept
		for _, w := range ready {
			d.k.At(d.k.now, w.done)
		}
	}
	if len(d.blocked) > 0 {
		blocked := d.blocked
		d.blocked = nil
		for _, s := range blocked {
			s.blocked = false
			d.pump(s)
		}
	}
}

// DeviceActivity is a stretch of engine work, for timelines.
type DeviceActivity struct {
	Device     int
	Engine     string // "compute" or "copy"
	Stream     gpu.Stream
	Label      string
	Start, End time.Duration
}

func (d *Device) activity(engine string, s *stream, label string, start time.Duration) {
	if d.k.onDevice != nil {
		d.k.onDevice(DeviceActivity{Device: d.info.Index, Engine: engine, Stream: s.id, Label: label, Start: start, End: d.k.now})
	}
}
