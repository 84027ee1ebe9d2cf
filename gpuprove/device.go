package gpuprove

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/model"
	"github.com/cuzk/cuzk/prover"
)

// Device is a gpu.Device over a real GPU (cuda.Device): the lock designs'
// operations become CUDA calls, so their semantics are the hardware's own
// (cudaFree and cudaDeviceSynchronize wait for every stream, the pool keeps
// freed blocks by its release threshold, reuses them across streams by its
// policy, and so on) rather than a model of them.
//
// Each gpu.Stream is a CUDA stream created on first use. The stream-ordered
// operations are ordered by gpu/model's Streams — the state machine the
// emulated and the simulated device share — which starts each one's CUDA
// call, on a goroutine of its own, once the one before it on its stream has
// run. A synchronous copy or kernel is reported when it has really completed
// (after a stream sync); an Async one, a cudaFreeAsync and a cudaEventRecord
// return to the caller at enqueue, as in CUDA, and their completion is seen
// by a later stream, event or device sync, which waits (through the same
// order) until every call it covers has been made and then makes the CUDA
// synchronization; a failed Async op is reported by that sync. An async
// copy or kernel counts as run once its CUDA calls are issued (a synchronous
// one once its stream has drained), so the cudaFreeAsync behind an async
// kernel is made at once, behind the running kernel on the CUDA stream: it is
// pending until a sync observes it, which is what cudaMemPoolTrimTo and the
// pool's cross-stream reuse meet. cudaMallocAsync returns its pointer, so it
// is made in stream order and returns then.
// cudaFree, cudaDeviceSynchronize and cudaFreeHost wait for every stream
// that way; cudaHostAlloc does not wait (docs/cuda-facts.md).
//
// A partition's data moves at OpCopyIn: the production runtime attaches the
// partition's kernel, whose Work (a *prover.Work) the device stages with its
// backend into the buffer the op names, on the op's stream, so the copy
// happens under whatever lock the design holds there. The next OpCompute on
// the stream computes on that buffer. The stream and buffer are explicit
// arguments (a Placement) of the backend's calls; a kernel may instead carry
// a Work of this package (a synthetic kernel, a test's), which is called with
// the same Placement.
type Device struct {
	cd       *cuda.Device
	index    int
	name     string
	limit    int64        // the card's memory as the designs may use it
	reserved func() int64 // bytes held outside the designs' buffers (keys, tables, scratch)
	backend  *Backend     // runs partitions' prover.Work; nil: none
	ballast  cuda.Ptr

	mu      sync.Mutex
	order   *model.Streams // which stream-ordered operation may run when
	streams map[gpu.Stream]*stream
	bufs    map[gpu.Buffer]buffer
	events  map[gpu.Event]*recorded
	next    uint64
	closed  bool
	wg      sync.WaitGroup
}

var _ gpu.Device = (*Device)(nil)

type bufKind uint8

const (
	bufMalloc bufKind = iota + 1
	bufPool
	bufHost
)

type buffer struct {
	kind  bufKind
	ptr   cuda.Ptr         // device buffers
	host  *cuda.HostBuffer // pinned host buffers
	bytes int64
}

type stream struct {
	id      gpu.Stream
	cs      cuda.Stream
	staging gpu.Buffer // the buffer the last OpCopyIn named: the next kernel's
	// issued is set once an async copy or kernel has been issued to CUDA
	// (its host call returned, its device work may still run) and cleared
	// by a sync of the stream or the device.
	issued bool
}

// DeviceOptions configures a Device.
type DeviceOptions struct {
	// VRAMLimit makes the device behave like a card of this many bytes: the
	// rest of its free memory is held by a ballast allocation made at open.
	// Zero or more than the card has: the whole card.
	VRAMLimit int64
	// Pool sets the stream-ordered pool's release threshold and cross-stream
	// reuse; zero is gpu.DefaultPoolPolicy.
	Pool gpu.PoolPolicy
	// Reserved reports the bytes that live outside the designs' buffers
	// (resident keys, NTT tables, MSM scratch); Info().Total leaves them out
	// so that a design's VRAM ledger covers only what it can really have.
	Reserved func() int64
	// Backend stages and computes the partitions (kernels whose Work is a
	// *prover.Work) on this device; nil: the device runs only kernels whose
	// Work is a gpuprove.Work.
	Backend *Backend
}

// NewDevice wraps a CUDA device. With a VRAM limit it allocates the ballast
// at once, so what follows sees a smaller card.
func NewDevice(cd *cuda.Device, opt DeviceOptions) (*Device, error) {
	props, err := cd.Properties()
	if err != nil {
		return nil, fmt.Errorf("device %d: %w", cd.Index(), err)
	}
	pool := opt.Pool
	if pool == (gpu.PoolPolicy{}) {
		pool = gpu.DefaultPoolPolicy()
	}
	if err := cd.ConfigurePool(pool); err != nil {
		return nil, fmt.Errorf("device %d: configure pool: %w", cd.Index(), err)
	}
	d := &Device{cd: cd, index: cd.Index(), name: props.Name, limit: props.TotalMemory, reserved: opt.Reserved, backend: opt.Backend,
		order: model.NewStreams(), streams: map[gpu.Stream]*stream{}, bufs: map[gpu.Buffer]buffer{},
		events: map[gpu.Event]*recorded{}, next: 1000}
	// Return what earlier runs of this process left in the pool, so the
	// ballast is measured against memory that is really free.
	if err := cd.TrimPool(0); err != nil {
		return nil, fmt.Errorf("device %d: trim pool: %w", d.index, err)
	}
	free, _, err := cd.MemInfo()
	if err != nil {
		return nil, fmt.Errorf("device %d: %w", d.index, err)
	}
	d.limit = free
	if opt.VRAMLimit > 0 && opt.VRAMLimit < free {
		p, err := cd.Malloc(free - opt.VRAMLimit)
		if err != nil {
			return nil, fmt.Errorf("device %d: ballast for a %s limit: %w", d.index, gpu.FormatBytes(opt.VRAMLimit), err)
		}
		d.ballast, d.limit = p, opt.VRAMLimit
		after, _, err := cd.MemInfo()
		if err != nil {
			return nil, fmt.Errorf("device %d: %w", d.index, err)
		}
		slog.Debug("vram limit", "device", d.index, "limit", opt.VRAMLimit, "free_before", free,
			"ballast", free-opt.VRAMLimit, "free_after", after)
		// The ballast takes a little more than asked (on the H200 under
		// 16 GiB, 0.9–2.9 MiB): the designs get what is really free.
		d.limit = min(d.limit, after)
	}
	return d, nil
}

// CUDA is the device underneath.
func (d *Device) CUDA() *cuda.Device { return d.cd }

// Limit is the memory the device had free at open, after the ballast.
func (d *Device) Limit() int64 { return d.limit }

// Info describes the device. Total is the memory the designs' buffers may
// use: the limit less what lives outside them (Reserved).
func (d *Device) Info() gpu.Info {
	total := d.limit
	if d.reserved != nil {
		total -= d.reserved()
	}
	return gpu.Info{Index: d.index, Name: d.name, Total: max(total, 0)}
}

// NewStream returns a fresh stream id; its CUDA stream is made on first use.
func (d *Device) NewStream() gpu.Stream {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.order.NewStream()
}

// streamLocked returns the stream for id, creating its CUDA stream on first
// use.
func (d *Device) streamLocked(id gpu.Stream) (*stream, error) {
	if s, ok := d.streams[id]; ok {
		return s, nil
	}
	cs, err := d.cd.NewStream()
	if err != nil {
		return nil, fmt.Errorf("device %d: create stream %d: %w", d.index, id, err)
	}
	s := &stream{id: id, cs: cs}
	d.streams[id] = s
	return s, nil
}

// enqueueLocked runs f after everything enqueued on stream op.Stream before
// it has run; f returns the CUDA call's error, which an Async op (op.Async)
// leaves with its stream for the next synchronization of it to report. It
// returns the item f became.
func (d *Device) enqueueLocked(op gpu.Op, f func(s *stream) error) (*model.Item, error) {
	s, err := d.streamLocked(op.Stream)
	if err != nil {
		return nil, err
	}
	it, err := d.order.Enqueue(model.ItemWork, op, func() error { return f(s) })
	if err != nil {
		return nil, fmt.Errorf("device %d: %w", d.index, err)
	}
	d.startLocked()
	return it, nil
}

// startLocked starts, each on a goroutine, the operations the stream order
// lets run now, each telling the order when it has run, and the host waits
// whose streams have run up to where they wait.
func (d *Device) startLocked() {
	for _, o := range d.order.Outputs() {
		switch o.Kind {
		case model.OutStart:
			it := o.Item
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				err := it.Tag.(func() error)()
				d.mu.Lock()
				defer d.mu.Unlock()
				if s, ok := d.streams[it.Stream]; ok && it.Op.Async && it.Op.Kind.CanBeAsync() {
					s.issued = true
				}
				if ferr := d.order.FinishErr(it, err); ferr != nil {
					panic(fmt.Sprintf("gpuprove: %v", ferr)) // only a started item is ever finished
				}
				d.startLocked()
			}()
		case model.OutMet:
			w := o.Wait
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				w.Tag.(func(*model.Wait))(w)
			}()
		}
	}
}

// waitLocked makes op a host wait: once every stream it covers has run the
// operations enqueued before it (so that no CUDA call it must cover is still
// to be made), call makes the CUDA call on a goroutine of its own, since it
// may block for as long as other streams work; the errors of async work the
// wait reports are added to its result.
func (d *Device) waitLocked(op gpu.Op, on *model.Item, call func(w *model.Wait) gpu.Result, done func(gpu.Result)) {
	tag := func(w *model.Wait) {
		r := call(w)
		d.mu.Lock()
		aerr := d.order.Errors(w)
		d.mu.Unlock()
		if aerr != nil {
			r.Err = errors.Join(r.Err, d.wrap(aerr))
		}
		done(r)
	}
	switch {
	case on != nil:
		d.order.WaitItem(on, op, tag)
	case op.Kind.DeviceWide():
		d.order.WaitDevice(op, tag)
	default:
		d.order.WaitStream(op, tag)
	}
	d.startLocked()
}

// Submit starts op; done is called exactly once when it has completed (an
// Async copy or kernel, a cudaFreeAsync and a cudaEventRecord: once enqueued).
func (d *Device) Submit(op gpu.Op, done func(gpu.Result)) {
	if done == nil {
		done = func(gpu.Result) {}
	}
	fail := func(err error) { done(gpu.Result{Err: err}) }
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		fail(fmt.Errorf("device %d: %s after close", d.index, op.Kind))
		return
	}
	if op.Kind.NeedsStream() && op.Stream == 0 {
		d.mu.Unlock()
		fail(fmt.Errorf("device %d: %s needs a stream", d.index, op.Kind))
		return
	}
	if op.Async && !op.Kind.OnStream() {
		d.mu.Unlock()
		fail(fmt.Errorf("device %d: %s cannot be asynchronous", d.index, op.Kind))
		return
	}
	var err error
	now := false // done at enqueue
	switch op.Kind {
	case gpu.OpMemInfo:
		d.mu.Unlock()
		free, _, err := d.cd.MemInfo()
		if err != nil {
			fail(fmt.Errorf("device %d: %w", d.index, err))
			return
		}
		done(gpu.Result{Free: free, Total: d.limit})
		return
	case gpu.OpMalloc:
		d.mu.Unlock()
		p, err := d.cd.Malloc(op.Bytes)
		if err != nil {
			fail(err)
			return
		}
		done(gpu.Result{Buffer: d.addBuffer(buffer{kind: bufMalloc, ptr: p, bytes: op.Bytes})})
		return
	case gpu.OpTrimPool:
		d.mu.Unlock()
		// What the trim released is the free memory it added: traces
		// carry it, and the simulator's calibration charges a trim by it.
		// Another thread's allocation between the two readings makes it
		// read low; the calibration runs have one worker.
		before, _, err := d.cd.MemInfo()
		if err == nil {
			err = d.cd.TrimPool(op.Bytes)
		}
		var after int64
		if err == nil {
			after, _, err = d.cd.MemInfo()
		}
		if err != nil {
			fail(fmt.Errorf("device %d: %w", d.index, err))
			return
		}
		done(gpu.Result{Released: max(after-before, 0)})
		return
	case gpu.OpMallocAsync:
		// The pointer is the result, so the call is made (and returns) in
		// stream order: behind an async kernel on its own stream it waits
		// for that kernel, which the designs never ask for.
		_, err = d.enqueueLocked(op, func(s *stream) error {
			p, err := d.cd.MallocAsync(op.Bytes, s.cs)
			if err != nil {
				done(gpu.Result{Err: err})
				return nil
			}
			done(gpu.Result{Buffer: d.addBuffer(buffer{kind: bufPool, ptr: p, bytes: op.Bytes})})
			return nil
		})
	case gpu.OpFreeAsync:
		b, ok := d.bufs[op.Buffer]
		if !ok || b.kind != bufPool {
			err = fmt.Errorf("device %d: free_async buffer %d: not a pool buffer", d.index, op.Buffer)
			break
		}
		delete(d.bufs, op.Buffer)
		// cudaFreeAsync returns at once; the free is made behind the work
		// before it on the stream and stays pending until a sync.
		op.Async, now = true, true
		_, err = d.enqueueLocked(op, func(s *stream) error { return d.cd.FreeAsync(b.ptr, s.cs) })
	case gpu.OpStreamSync:
		d.waitLocked(op, nil, func(*model.Wait) gpu.Result {
			s, err := d.streamOf(op.Stream)
			if err == nil {
				if err = d.cd.StreamSync(s.cs); err == nil {
					d.mu.Lock()
					s.issued = false
					d.mu.Unlock()
				}
			}
			return gpu.Result{Err: d.wrap(err)}
		}, done)
	case gpu.OpRecordEvent:
		d.next++
		id := gpu.Event(d.next)
		rec := &recorded{}
		op.Async, now = true, true
		rec.item, err = d.enqueueLocked(op, func(s *stream) error {
			e, err := d.cd.NewEvent()
			if err == nil {
				if err = d.cd.RecordEvent(e, s.cs); err != nil {
					_ = d.cd.DestroyEvent(e)
				}
			}
			if err != nil {
				return err
			}
			d.mu.Lock()
			rec.e = e
			d.mu.Unlock()
			return nil
		})
		if err == nil {
			d.events[id] = rec
			d.mu.Unlock()
			done(gpu.Result{Event: id})
			return
		}
	case gpu.OpEventSync:
		rec, ok := d.events[op.Event]
		if !ok {
			err = fmt.Errorf("device %d: sync on unknown event %d", d.index, op.Event)
			break
		}
		// An event sync waits for its own stream only, up to the record.
		d.waitLocked(op, rec.item, func(w *model.Wait) gpu.Result {
			d.mu.Lock()
			e := rec.e
			d.mu.Unlock()
			if e == 0 {
				return gpu.Result{Waited: w.Waited} // the record failed: its error is the stream's
			}
			return gpu.Result{Err: d.wrap(d.cd.EventSync(e)), Waited: w.Waited}
		}, done)
	case gpu.OpCopyIn:
		b, ok := d.bufs[op.Buffer]
		if !ok || b.kind == bufHost || op.Bytes < 0 || op.Bytes > b.bytes {
			err = fmt.Errorf("device %d: copy %d bytes into buffer %d: not a device buffer that large", d.index, op.Bytes, op.Buffer)
			break
		}
		// The placement is taken now, in submission order: by the time the
		// copy runs, a later op (a FreeAsync behind an async kernel) may
		// have dropped the buffer from the table.
		var pl Placement
		if pl, err = d.placeLocked(op.Stream, &op.Buffer); err != nil {
			break
		}
		now = op.Async
		_, err = d.enqueueLocked(op, func(s *stream) error { return d.report(op, done, d.runStage(s, pl, op.Kernel, !op.Async)) })
	case gpu.OpCompute:
		var pl Placement
		if pl, err = d.placeLocked(op.Stream, nil); err != nil {
			break
		}
		now = op.Async
		_, err = d.enqueueLocked(op, func(s *stream) error { return d.report(op, done, d.runKernel(s, pl, op.Kernel, !op.Async)) })
	case gpu.OpDeviceSync:
		other := d.issuedElsewhereLocked(op.Stream)
		d.waitLocked(op, nil, func(w *model.Wait) gpu.Result {
			err := d.cd.Sync()
			if err == nil {
				d.mu.Lock()
				for _, s := range d.streams {
					s.issued = false
				}
				d.mu.Unlock()
			}
			return gpu.Result{Err: d.wrap(err), Waited: w.Waited || other}
		}, done)
	case gpu.OpFree:
		b, ok := d.bufs[op.Buffer]
		if !ok || b.kind != bufMalloc {
			err = fmt.Errorf("device %d: free buffer %d: not a Malloc buffer", d.index, op.Buffer)
			break
		}
		delete(d.bufs, op.Buffer)
		// cudaFree synchronizes the device: it waits for every stream's
		// work, including what is enqueued here and not yet issued.
		other := d.issuedElsewhereLocked(op.Stream)
		d.waitLocked(op, nil, func(w *model.Wait) gpu.Result {
			err := d.wrap(d.cd.Free(b.ptr))
			r := gpu.Result{Err: err, Waited: w.Waited || other}
			if err == nil {
				r.Released = b.bytes
			}
			return r
		}, done)
	case gpu.OpHostAlloc:
		d.mu.Unlock()
		// cudaHostAlloc does not wait for the device (docs/cuda-facts.md),
		// but takes tens of milliseconds: off the caller's goroutine.
		d.blocking(func() gpu.Result {
			p, err := d.cd.HostAlloc(op.Bytes)
			if err != nil {
				return gpu.Result{Err: err}
			}
			return gpu.Result{Buffer: d.addBuffer(buffer{kind: bufHost, host: p, bytes: op.Bytes})}
		}, done)
		return
	case gpu.OpHostFree:
		b, ok := d.bufs[op.Buffer]
		if !ok || b.kind != bufHost {
			err = fmt.Errorf("device %d: free host buffer %d: not a host buffer", d.index, op.Buffer)
			break
		}
		delete(d.bufs, op.Buffer)
		other := d.issuedElsewhereLocked(op.Stream)
		d.waitLocked(op, nil, func(w *model.Wait) gpu.Result {
			return gpu.Result{Err: d.wrap(d.cd.HostFree(b.host)), Waited: w.Waited || other}
		}, done)
	default:
		err = fmt.Errorf("device %d: unknown op %s", d.index, op.Kind)
	}
	d.mu.Unlock()
	switch {
	case err != nil:
		fail(err)
	case now:
		done(gpu.Result{})
	}
}

// report completes a synchronous copy or kernel with its result; an Async
// one returned at enqueue, so its error goes to its stream instead.
func (d *Device) report(op gpu.Op, done func(gpu.Result), r gpu.Result) error {
	if op.Async {
		return r.Err
	}
	done(r)
	return nil
}

// recorded is an event as the designs name it: the stream item that records
// it, and the CUDA event once that has run.
type recorded struct {
	item *model.Item
	e    cuda.Event
}

// issuedElsewhereLocked says whether a stream other than own has async work
// issued to CUDA that no sync has covered: a device-wide call may wait for
// it (its Waited is then reported, conservatively, even if that work has
// just ended).
func (d *Device) issuedElsewhereLocked(own gpu.Stream) bool {
	for id, s := range d.streams {
		if id != own && s.issued {
			return true
		}
	}
	return false
}

// streamOf returns the CUDA stream for id (made on first use).
func (d *Device) streamOf(id gpu.Stream) (*stream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.streamLocked(id)
}

func (d *Device) wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("device %d: %w", d.index, err)
}

func (d *Device) addBuffer(b buffer) gpu.Buffer {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next++
	id := gpu.Buffer(d.next)
	d.bufs[id] = b
	return id
}

// blocking runs a call that may wait for other streams on a goroutine of its
// own, so that Submit never blocks.
func (d *Device) blocking(f func() gpu.Result, done func(gpu.Result)) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		done(f())
	}()
}

// runStage copies a partition's inputs into the buffer an OpCopyIn named, on
// its stream, when the op carries work that stages; with drain the op
// completes when the copy has, else once it is issued.
func (d *Device) runStage(s *stream, pl Placement, k *gpu.Kernel, drain bool) gpu.Result {
	w, err := d.workOf(k)
	if w == nil {
		return gpu.Result{Err: err}
	}
	// A partition's stage says what it copied (a alone, or everything).
	var copied int64
	if pw, ok := w.(partitionWork); ok {
		pw.copied = &copied
		w = pw
	}
	r := d.runPartition(s, pl, k.Partition, "staging", "stage", w.Stage, drain)
	if r.Err == nil {
		r.Copied = copied
	}
	return r
}

// runKernel runs a partition's compute on stream s, into the buffer the
// stream's last OpCopyIn named; with drain it reports it when the stream has
// drained, else once its work is issued (an async launch: the next call on
// the stream, a cudaFreeAsync say, is then made behind the running kernel).
func (d *Device) runKernel(s *stream, pl Placement, k *gpu.Kernel, drain bool) gpu.Result {
	w, err := d.workOf(k)
	if w == nil {
		return gpu.Result{Err: err}
	}
	return d.runPartition(s, pl, k.Partition, "kernel", "kernel", w.Compute, drain)
}

// workOf is what the device runs for kernel k: a partition's prover.Work
// with the device's backend, a Work of this package as it is, or the
// kernel's Stage and Run (which take no placement). Nil, and no error, when
// there is nothing to run.
func (d *Device) workOf(k *gpu.Kernel) (Work, error) {
	if k == nil {
		return nil, nil
	}
	switch w := k.Work.(type) {
	case *prover.Work:
		return partitionWork{d: d, w: w}, nil
	case Work:
		return w, nil
	case nil:
		if k.Stage == nil && k.Run == nil {
			return nil, nil
		}
		closure := func(f func(context.Context) error) func(Placement) error {
			if f == nil {
				return nil
			}
			return func(Placement) error { return f(context.Background()) }
		}
		return WorkFuncs{StageFunc: closure(k.Stage), ComputeFunc: closure(k.Run)}, nil
	}
	return nil, fmt.Errorf("device %d: %s: work of type %T", d.index, k.Partition, k.Work)
}

// partitionWork runs a partition's prover.Work with the device's backend,
// where its design placed it.
type partitionWork struct {
	d      *Device
	w      *prover.Work
	copied *int64 // if set, Stage's bytes copied go there
}

func (p partitionWork) stage(pl Placement) func() (prover.Staged, error) {
	return func() (prover.Staged, error) {
		st, err := p.d.backend.stage(p.w.Ctx, &pl, p.w.Keys, p.w.Prep)
		if s, ok := st.(*staged); ok && err == nil && p.copied != nil {
			*p.copied = s.copied
		}
		return st, err
	}
}

// Stage implements Work.
func (p partitionWork) Stage(pl Placement) error {
	if p.d.backend == nil {
		return errNoBackend
	}
	return p.w.StageWith(p.stage(pl))
}

// Compute implements Work.
func (p partitionWork) Compute(pl Placement) error {
	if p.d.backend == nil {
		return errNoBackend
	}
	return p.w.ComputeWith(p.stage(pl),
		func(st prover.Staged) (*prover.Computed, error) { return p.d.backend.Compute(p.w.Ctx, p.w.Keys, st) })
}

var errNoBackend = errors.New("a partition's work on a device opened without a backend")

// runPartition runs f, a partition's stage or kernel, on stream s at
// placement pl, and with drain returns once whatever f left queued on the
// stream is done. A panicking f fails its op (named doing in the error), not
// the process.
func (d *Device) runPartition(s *stream, pl Placement, partition, doing, what string, f func(Placement) error, drain bool) (r gpu.Result) {
	defer func() {
		if p := recover(); p != nil {
			r = gpu.Result{Err: fmt.Errorf("device %d: %s %s panicked: %v", d.index, doing, partition, p)}
		}
	}()
	err := f(pl)
	if drain {
		err = errors.Join(err, d.cd.StreamSync(s.cs))
	}
	if err != nil {
		return gpu.Result{Err: fmt.Errorf("device %d: %s %s: %w", d.index, what, partition, err)}
	}
	return gpu.Result{}
}

// placeLocked is where the next copy or kernel on stream id works: its
// stream and the buffer of the stream's last OpCopyIn. A copy names its
// buffer (staging), which becomes the stream's from then on, in submission
// order, as the ops run.
func (d *Device) placeLocked(id gpu.Stream, staging *gpu.Buffer) (Placement, error) {
	s, err := d.streamLocked(id)
	if err != nil {
		return Placement{}, err
	}
	if staging != nil {
		s.staging = *staging
	}
	pl := Placement{Device: d, Stream: s.cs}
	if b, ok := d.bufs[s.staging]; ok && b.kind != bufHost {
		pl.Buffer, pl.Bytes = b.ptr, b.bytes
	}
	return pl, nil
}

// Close waits for the work queued on the streams, then destroys them and the
// events, frees what the designs left allocated and the ballast. Work
// submitted after Close fails.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	d.wg.Wait()
	var errs []error
	for _, s := range d.streams {
		errs = append(errs, d.cd.DestroyStream(s.cs))
	}
	for _, e := range d.events {
		if e.e != 0 {
			errs = append(errs, d.cd.DestroyEvent(e.e))
		}
	}
	for _, b := range d.bufs {
		switch b.kind {
		case bufMalloc:
			errs = append(errs, d.cd.Free(b.ptr))
		case bufPool:
			errs = append(errs, d.cd.FreeAsync(b.ptr, cuda.DefaultStream))
		case bufHost:
			errs = append(errs, d.cd.HostFree(b.host))
		}
	}
	if d.ballast != 0 {
		errs = append(errs, d.cd.Free(d.ballast))
	}
	d.streams, d.events, d.bufs = nil, nil, nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close device %d: %w", d.index, err)
	}
	return nil
}

// Placement is where a kernel run by a Device stages and computes: the
// partition's stream and the buffer its design allocated.
type Placement struct {
	Device *Device
	Stream cuda.Stream
	Buffer cuda.Ptr // zero when the design named no buffer
	Bytes  int64
}

// Work is device work that runs where its design placed it: a Device calls
// Stage at the OpCopyIn that carries it and Compute at the OpCompute, each
// with the stream and buffer as a Placement.
type Work interface {
	Stage(pl Placement) error
	Compute(pl Placement) error
}

// WorkFuncs is a Work of two functions; a nil one does nothing.
type WorkFuncs struct {
	StageFunc, ComputeFunc func(Placement) error
}

// Stage implements Work.
func (w WorkFuncs) Stage(pl Placement) error {
	if w.StageFunc == nil {
		return nil
	}
	return w.StageFunc(pl)
}

// Compute implements Work.
func (w WorkFuncs) Compute(pl Placement) error {
	if w.ComputeFunc == nil {
		return nil
	}
	return w.ComputeFunc(pl)
}
