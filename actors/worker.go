package actors

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/cuzk/cuzk/gpu"
)

// worker walks one partition at a time through the stages: synthesize and
// prep on the CPU, the device part (stage, compute) as its lock design says,
// then b_g2 and finalize on the CPU. It is a state machine driven only by
// messages: an assignment from the scheduler, WorkDone from the runtime, and
// lease grants. Nothing it does blocks.
//
// Whatever goes wrong in an attempt — a stage error, a device error, a panic
// in a stage or in the worker itself — ends in the same place: the worker
// waits for the work it has in flight, frees the buffers and releases the
// leases it holds, and reports the attempt as failed to the scheduler, which
// retries or fails the partition. A partition therefore leaves a worker only
// through attemptEnded.
type worker struct {
	env    *env
	device int
	index  int
	stream gpu.Stream
	sched  *actor.PID
	dev    *actor.PID            // the device actor: VRAM ledger
	locks  map[string]*actor.PID // lock name → the actor serving it
	// free are the mutexes the worker takes in place while nobody holds
	// or waits for them (leaseQueue.takeFree); nil with Config.LockHops.
	free   map[string]*leaseQueue
	design design

	c    actor.Context // during Receive
	self *actor.PID

	cur     *assign // nil when idle
	proto   protocol
	stage   Stage // the stage in progress, 0 between stages
	stageAt time.Duration

	token       uint64 // last token handed to Runtime.Start
	outstanding uint64 // token of the work in flight, 0 when none
	leaseSeq    uint64
	wanted      map[string]uint64 // lock → id of a request not yet granted
	held        map[string]uint64 // lock → id of a lease held
	bufs        map[gpu.Buffer]gpu.OpKind
	vram        int64 // bytes this worker has reported to the device ledger
	// unsynced is set while the stream holds work that returned at enqueue
	// (an async launch or copy, a FreeAsync) and no sync of it has
	// returned: after a failure the worker syncs the stream before the
	// partition leaves, so that its errors and frees stay with it.
	unsynced bool
	fellBack bool // the design fell back in this attempt

	failErr error // set while cleaning up after a failed attempt

	// inPlace are grants of free mutexes taken in this handler, handled
	// when it is done, before the worker takes its next message.
	inPlace []leaseGranted
	// outbox is what the handler sent, delivered when it is done.
	outbox []outgoing
}

// outgoing is a message a handler sent.
type outgoing struct {
	to  *actor.PID
	msg any
}

// testHookWorker, when set by a test, runs at the start of every message a
// worker handles and on every grant it takes in place (to inject a panic
// into Receive).
var testHookWorker atomic.Pointer[func(device, worker int, p *PartitionID, msg any)]

// Receive handles one message. A panic anywhere below is recovered here and
// turned into a failed attempt, so the actor is never restarted with a
// partition in its hands.
func (w *worker) Receive(c actor.Context) {
	w.c = c
	defer func() {
		if r := recover(); r != nil {
			w.panicked(r)
		}
		w.flush()
		w.c = nil
	}()
	w.hook(c.Message())
	switch m := c.Message().(type) {
	case *actor.Started:
		w.self = c.Self()
		if w.cur == nil {
			w.send(w.sched, workerIdle{device: w.device, worker: w.index, pid: w.self})
		}
	case *actor.Restarting:
		// Only reached if a panic escaped the recovery above; the actor
		// object survives the restart (its producer returns it), and so does
		// the partition.
		if w.cur != nil {
			w.fail(errors.New("worker restarted"))
		}
	case assign:
		w.begin(m)
	case WorkDone:
		w.workDone(m)
	case leaseGranted:
		w.leaseGranted(m)
	case leaseRefused:
		if id, ok := w.wanted[m.lock]; ok && id == m.id {
			delete(w.wanted, m.lock)
			w.fail(m.err)
		}
	}
	// A mutex taken in place is granted as soon as the handler that asked
	// for it is done, without a message: its next step (split's launch)
	// follows in this handler too.
	for len(w.inPlace) > 0 {
		g := w.inPlace[0]
		w.inPlace = w.inPlace[1:]
		w.hook(g)
		w.leaseGranted(g)
	}
}

// send posts msg to an actor when the handler is done (flush), as the
// simulator delivers what a handler sends: whatever the handler does after
// it, a launch after releasing mem_mtx included, comes first. With
// Config.LockHops, the runtime before, it is sent at once.
func (w *worker) send(to *actor.PID, msg any) {
	if w.env.cfg.LockHops {
		w.c.Send(to, msg)
		return
	}
	w.outbox = append(w.outbox, outgoing{to, msg})
}

// flush delivers what the handler sent, in the order it sent it.
func (w *worker) flush() {
	for i, o := range w.outbox {
		w.c.Send(o.to, o.msg)
		w.outbox[i] = outgoing{}
	}
	w.outbox = w.outbox[:0]
}

// hook runs the test hook, if any, on msg: each message the worker takes
// and each grant it takes in place.
func (w *worker) hook(msg any) {
	if hook := testHookWorker.Load(); hook != nil {
		var p *PartitionID
		if w.cur != nil {
			p = &w.cur.p
		}
		(*hook)(w.device, w.index, p, msg)
	}
}

func (w *worker) panicked(r any) {
	if w.cur == nil {
		return
	}
	err := fmt.Errorf("%s: panic in worker %d of device %d: %v", w.cur.p, w.index, w.device, r)
	if w.failErr != nil {
		// A panic during cleanup: give up on the cleanup (leaking what it
		// could not free) rather than on the partition.
		w.abandon(err)
		return
	}
	w.fail(err)
}

func (w *worker) begin(m assign) {
	if w.cur != nil {
		// The scheduler never assigns to a busy worker; refuse rather than
		// drop either partition.
		w.send(w.sched, attemptEnded{device: w.device, worker: w.index, pid: w.self, attempt: m.attempt, p: m.p,
			err: fmt.Errorf("%s: worker %d of device %d is busy with %s", m.p, w.index, w.device, w.cur.p)})
		return
	}
	w.cur = &m
	w.proto = nil
	w.wanted = map[string]uint64{}
	w.held = map[string]uint64{}
	w.bufs = map[gpu.Buffer]gpu.OpKind{}
	w.vram = 0
	w.failErr = nil
	w.fellBack = false
	w.inPlace = nil
	if m.prepared {
		// The scheduler ran the stages before the device part (host.go).
		w.startDevicePart()
		return
	}
	w.nextStage(0)
}

func (w *worker) startCPU(s Stage) {
	w.beginStage(s)
	w.start(StageWork{Stage: s, Partition: w.cur.p, Size: w.cur.size})
}

func (w *worker) start(work Work) {
	w.token++
	w.env.rt.Start(w.self, w.token, work)
	w.outstanding = w.token
}

func (w *worker) workDone(m WorkDone) {
	if w.cur == nil || m.Token != w.outstanding {
		return // stale: from before a failure that was already handled
	}
	w.outstanding = 0
	err := m.Err
	dw, isDevice := m.Work.(DeviceWork)
	if isDevice {
		if err == nil {
			err = m.Result.Err
		}
		w.noteDeviceOp(dw.Op, m, err)
	}
	if w.failErr != nil {
		w.cleanup()
		return
	}
	if isDevice {
		r := m.Result
		r.Err = err
		w.proto.done(w, dw.Op, r)
		return
	}
	w.endStage(err)
	if err != nil {
		w.fail(fmt.Errorf("%s: %s: %w", w.cur.p, w.stageName(m.Work), err))
		return
	}
	w.nextStage(m.Work.(StageWork).Stage)
}

// nextStage goes on from the CPU stage done (0: none yet) along the
// configured stages: those before the device part, the design's protocol,
// those after it; the partition is done after the last.
func (w *worker) nextStage(done Stage) {
	before, after := w.env.cfg.Before, w.env.cfg.After
	if i := slices.Index(after, done); i >= 0 {
		if i+1 < len(after) {
			w.startCPU(after[i+1])
			return
		}
		w.end(nil)
		return
	}
	i := slices.Index(before, done) // -1 when done is 0
	if i+1 < len(before) {
		w.startCPU(before[i+1])
		return
	}
	w.startDevicePart()
}

// startDevicePart begins the design's protocol for the current partition.
func (w *worker) startDevicePart() {
	w.proto = w.design.new()
	w.proto.start(w)
}

func (w *worker) stageName(work Work) string {
	if s, ok := work.(StageWork); ok {
		return s.Stage.String()
	}
	return "device"
}

// noteDeviceOp reports a completed device op and keeps the worker's own
// record of the buffers it holds, so that cleanup never depends on the
// protocol's state.
func (w *worker) noteDeviceOp(op gpu.Op, m WorkDone, err error) {
	e := Event{Kind: EvDeviceOp, Device: w.device, Worker: w.index, Partition: w.cur.p, Op: op.Kind.String(),
		Took: m.Took, Waited: m.Result.Waited, Bytes: op.Bytes, Async: op.Async}
	if now := w.env.rt.Now(); m.At > 0 && now > m.At {
		e.Late = now - m.At
	}
	switch op.Kind {
	case gpu.OpFree, gpu.OpTrimPool:
		// What a free or a trim gave back, which their costs follow.
		e.Bytes = m.Result.Released
	case gpu.OpMemInfo:
		// What the device said was free: under a VRAM limit, what the
		// limit really left (sim calibrate --ballast-trace).
		e.Bytes = m.Result.Free
	case gpu.OpCopyIn:
		// What the stage really copied, where it says and that differs
		// from the op's bytes (sim calibrate fits the link's bandwidth
		// from it).
		if m.Result.Copied > 0 && m.Result.Copied != op.Bytes {
			e.Copied = m.Result.Copied
		}
	}
	if err != nil {
		e.Err = err.Error()
	}
	w.env.emit(e)
	if isOOM(err) {
		w.env.emit(Event{Kind: EvOOM, Device: w.device, Worker: w.index, Partition: w.cur.p, Op: op.Kind.String(),
			Bytes: op.Bytes, Err: err.Error(), Stage: w.stage, Fallback: w.fellBack})
	}
	switch {
	case op.Async || op.Kind == gpu.OpFreeAsync:
		w.unsynced = true
	case op.Kind.Synchronizes() && err == nil:
		w.unsynced = false
	}
	switch op.Kind {
	case gpu.OpMalloc, gpu.OpMallocAsync:
		if err == nil {
			w.bufs[m.Result.Buffer] = op.Kind
		}
	case gpu.OpFree, gpu.OpFreeAsync:
		// A failed free is forgotten too: trying it again would loop.
		delete(w.bufs, op.Buffer)
	}
}

func (w *worker) leaseGranted(m leaseGranted) {
	id, ok := w.wanted[m.lock]
	if !ok || id != m.id || w.cur == nil {
		return
	}
	delete(w.wanted, m.lock)
	w.held[m.lock] = id
	if w.failErr != nil {
		w.release(m.lock)
		return
	}
	w.proto.granted(w, m.lock)
}

// The protocol's means of action.

func (w *worker) acquire(lock string, bytes int64) {
	w.reserve(lock, bytes, 0)
}

// reserve asks lock for bytes and room for scratch beside them (the budget
// design's reservation; a mutex ignores both).
func (w *worker) reserve(lock string, bytes, scratch int64) {
	pid, ok := w.locks[lock]
	if !ok {
		w.fail(fmt.Errorf("%s: design %s has no lock %q on device %d", w.cur.p, w.design.name, lock, w.device))
		return
	}
	w.leaseSeq++
	w.wanted[lock] = w.leaseSeq
	m := acquireLease{worker: w.index, pid: w.self, id: w.leaseSeq, bytes: bytes, scratch: scratch, p: w.cur.p}
	if q, ok := w.free[lock]; ok && q.takeFree(m) {
		w.inPlace = append(w.inPlace, leaseGranted{lock: lock, id: m.id})
		return
	}
	w.send(pid, m)
}

func (w *worker) release(lock string) {
	id, ok := w.held[lock]
	if !ok {
		return
	}
	delete(w.held, lock)
	w.send(w.locks[lock], releaseLease{worker: w.index, id: id})
}

// submit starts op on the worker's stream; a synchronization names it too,
// so that it reports the errors of the worker's own async work and knows
// whether it waited for another stream.
func (w *worker) submit(op gpu.Op) {
	if op.Kind.NeedsStream() || op.Kind.Synchronizes() {
		op.Stream = w.stream
	}
	w.start(DeviceWork{Device: w.device, Partition: w.cur.p, Op: op})
}

// kernel describes this partition's compute for the device; the production
// runtime fills in Run from the Executor.
func (w *worker) kernel() *gpu.Kernel {
	return &gpu.Kernel{Partition: w.cur.p.String(), Size: w.cur.size, Bytes: w.cur.vram}
}

func (w *worker) vramChange(delta int64) {
	w.vram += delta
	w.send(w.dev, vramDelta{worker: w.index, bytes: delta})
}

// oom is the design's own out-of-memory: what op (cudaMemGetInfo) found free
// is less than the partition needs. It is reported as an EvOOM, like the
// device's, and returned as the attempt's error.
func (w *worker) oom(op gpu.Op, free int64) error {
	err := opErr(w, op, gpu.OOM(w.device, w.cur.vram, free))
	w.env.emit(Event{Kind: EvOOM, Device: w.device, Worker: w.index, Partition: w.cur.p, Op: op.Kind.String(),
		Bytes: w.cur.vram, Err: err.Error(), Stage: w.stage, Fallback: w.fellBack})
	return err
}

func (w *worker) fallback(reason error) {
	w.fellBack = true
	w.env.emit(Event{Kind: EvFallback, Device: w.device, Worker: w.index, Partition: w.cur.p, Stage: w.stage,
		Bytes: w.cur.vram, Err: reason.Error()})
}

func (w *worker) beginStage(s Stage) {
	w.stage, w.stageAt = s, w.env.rt.Now()
	w.env.emit(Event{Kind: EvStageStart, Device: w.device, Worker: w.index, Partition: w.cur.p, Stage: s})
}

func (w *worker) endStage(err error) {
	if w.stage == 0 {
		return
	}
	e := Event{Kind: EvStageEnd, Device: w.device, Worker: w.index, Partition: w.cur.p, Stage: w.stage,
		Took: w.env.rt.Now() - w.stageAt}
	if err != nil {
		e.Err = err.Error()
	}
	w.env.emit(e)
	w.stage = 0
}

// finish ends the device part; the partition goes on to the stages after it.
func (w *worker) finish() {
	w.proto = nil
	w.startCPU(w.env.cfg.After[0])
}

// fail ends the attempt with err once the worker has cleaned up.
func (w *worker) fail(err error) {
	if w.failErr != nil {
		return
	}
	w.endStage(err)
	w.failErr = err
	for _, lock := range sortedKeys(w.wanted) {
		w.send(w.locks[lock], releaseLease{worker: w.index, id: w.wanted[lock]})
	}
	clear(w.wanted)
	w.cleanup()
}

// cleanup takes one step towards a clean worker: wait for the work in flight,
// then free buffers one at a time, then release leases and report.
func (w *worker) cleanup() {
	if w.outstanding != 0 {
		return
	}
	if len(w.bufs) > 0 {
		bufs := make([]gpu.Buffer, 0, len(w.bufs))
		for b := range w.bufs {
			bufs = append(bufs, b)
		}
		slices.Sort(bufs)
		b := bufs[0]
		if w.bufs[b] == gpu.OpMallocAsync {
			w.submit(gpu.Op{Kind: gpu.OpFreeAsync, Buffer: b})
		} else {
			w.submit(gpu.Op{Kind: gpu.OpFree, Buffer: b})
		}
		return
	}
	if w.unsynced {
		// Whatever it reports belongs to this failed attempt; the sync
		// is cleanup, and its outcome (success or not) ends it.
		w.unsynced = false
		w.submit(gpu.Op{Kind: gpu.OpStreamSync})
		return
	}
	for _, lock := range sortedKeys(w.held) {
		w.release(lock)
	}
	if w.vram != 0 {
		w.vramChange(-w.vram)
	}
	w.end(w.failErr)
}

// abandon reports the attempt failed without waiting for anything.
func (w *worker) abandon(err error) {
	for _, lock := range sortedKeys(w.held) {
		w.release(lock)
	}
	if w.vram != 0 {
		w.vramChange(-w.vram)
	}
	w.outstanding = 0
	w.end(err)
}

func (w *worker) end(err error) {
	m := attemptEnded{device: w.device, worker: w.index, pid: w.self, attempt: w.cur.attempt, p: w.cur.p, err: err}
	w.cur, w.proto, w.failErr, w.stage = nil, nil, nil, 0
	w.send(w.sched, m)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
