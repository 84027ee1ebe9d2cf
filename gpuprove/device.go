package gpuprove

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/model"
)

// Device is a gpu.Device over a real GPU (cuda.Device): the lock designs'
// operations become CUDA calls, so their semantics are the hardware's own
// (cudaFree and cudaDeviceSynchronize wait for every stream, the pool keeps
// freed blocks by its release threshold, reuses them across streams by its
// policy, and so on) rather than a model of them.
//
// Each gpu.Stream is a CUDA stream created on first use. The stream-ordered
// operations are ordered by gpu/model's Streams — the state machine the
// emulated and the simulated device share — which starts each one, on a
// goroutine of its own, once the one before it on its stream has been
// reported; each is reported only when it has really completed: a copy or
// kernel after a stream sync, an allocation or a free when the call has
// returned (CUDA orders them on the stream; the host does not wait for them).
// Device-wide operations (cudaFree, cudaDeviceSynchronize, pinned host
// alloc/free) and event syncs run on a goroutine of their own, since they
// block for as long as other streams work.
//
// A partition's data moves at OpCopyIn: the production runtime attaches the
// partition's kernel, whose Stage copies the inputs into the buffer the op
// names, on the op's stream, so the copy happens under whatever lock the
// design holds there. The next OpCompute on the stream computes on that
// buffer. A kernel without Stage copies its inputs in Run instead.
type Device struct {
	cd       *cuda.Device
	index    int
	name     string
	limit    int64        // the card's memory as the designs may use it
	reserved func() int64 // bytes held outside the designs' buffers (keys, tables, scratch)
	ballast  cuda.Ptr

	mu      sync.Mutex
	order   *model.Streams // which stream-ordered operation may run when
	streams map[gpu.Stream]*stream
	bufs    map[gpu.Buffer]buffer
	events  map[gpu.Event]cuda.Event
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
	d := &Device{cd: cd, index: cd.Index(), name: props.Name, limit: props.TotalMemory, reserved: opt.Reserved,
		order: model.NewStreams(), streams: map[gpu.Stream]*stream{}, bufs: map[gpu.Buffer]buffer{},
		events: map[gpu.Event]cuda.Event{}, next: 1000}
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
// it has been reported; f reports its own completion.
func (d *Device) enqueueLocked(op gpu.Op, f func(s *stream)) error {
	s, err := d.streamLocked(op.Stream)
	if err != nil {
		return err
	}
	if _, err := d.order.Enqueue(model.ItemWork, op, func() { f(s) }); err != nil {
		return fmt.Errorf("device %d: %w", d.index, err)
	}
	d.startLocked()
	return nil
}

// startLocked starts, each on a goroutine, the operations the stream order
// lets run now; each tells the order when it has run.
func (d *Device) startLocked() {
	for _, o := range d.order.Outputs() {
		if o.Kind != model.OutStart {
			continue
		}
		it := o.Item
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			it.Tag.(func())()
			d.mu.Lock()
			defer d.mu.Unlock()
			if err := d.order.Finish(it); err != nil {
				panic(fmt.Sprintf("gpuprove: %v", err)) // only a started item is ever finished
			}
			d.startLocked()
		}()
	}
}

// Submit starts op; done is called exactly once when it has completed.
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
	var err error
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
		if err := d.cd.TrimPool(op.Bytes); err != nil {
			fail(fmt.Errorf("device %d: %w", d.index, err))
			return
		}
		done(gpu.Result{})
		return
	case gpu.OpMallocAsync:
		err = d.enqueueLocked(op, func(s *stream) {
			p, err := d.cd.MallocAsync(op.Bytes, s.cs)
			if err != nil {
				done(gpu.Result{Err: err})
				return
			}
			done(gpu.Result{Buffer: d.addBuffer(buffer{kind: bufPool, ptr: p, bytes: op.Bytes})})
		})
	case gpu.OpFreeAsync:
		b, ok := d.bufs[op.Buffer]
		if !ok || b.kind != bufPool {
			err = fmt.Errorf("device %d: free_async buffer %d: not a pool buffer", d.index, op.Buffer)
			break
		}
		delete(d.bufs, op.Buffer)
		err = d.enqueueLocked(op, func(s *stream) {
			if err := d.cd.FreeAsync(b.ptr, s.cs); err != nil {
				done(gpu.Result{Err: fmt.Errorf("device %d: %w", d.index, err)})
				return
			}
			done(gpu.Result{})
		})
	case gpu.OpStreamSync:
		err = d.enqueueLocked(op, func(s *stream) {
			done(gpu.Result{Err: d.wrap(d.cd.StreamSync(s.cs))})
		})
	case gpu.OpRecordEvent:
		d.next++
		id := gpu.Event(d.next)
		err = d.enqueueLocked(op, func(s *stream) {
			e, err := d.cd.NewEvent()
			if err == nil {
				if err = d.cd.RecordEvent(e, s.cs); err != nil {
					_ = d.cd.DestroyEvent(e)
				}
			}
			if err != nil {
				done(gpu.Result{Err: d.wrap(err)})
				return
			}
			d.mu.Lock()
			d.events[id] = e
			d.mu.Unlock()
			done(gpu.Result{Event: id})
		})
	case gpu.OpEventSync:
		e, ok := d.events[op.Event]
		if !ok {
			err = fmt.Errorf("device %d: sync on unknown event %d", d.index, op.Event)
			break
		}
		d.mu.Unlock()
		// An event sync waits for its own stream only.
		d.blocking(func() gpu.Result { return gpu.Result{Err: d.wrap(d.cd.EventSync(e))} }, done)
		return
	case gpu.OpCopyIn:
		b, ok := d.bufs[op.Buffer]
		if !ok || b.kind == bufHost || op.Bytes < 0 || op.Bytes > b.bytes {
			err = fmt.Errorf("device %d: copy %d bytes into buffer %d: not a device buffer that large", d.index, op.Bytes, op.Buffer)
			break
		}
		err = d.enqueueLocked(op, func(s *stream) {
			d.mu.Lock()
			s.staging = op.Buffer
			d.mu.Unlock()
			done(d.runStage(s, op.Kernel))
		})
	case gpu.OpCompute:
		err = d.enqueueLocked(op, func(s *stream) { done(d.runKernel(s, op.Kernel)) })
	case gpu.OpDeviceSync:
		busy := d.order.Busy()
		d.mu.Unlock()
		d.blocking(func() gpu.Result { return gpu.Result{Err: d.wrap(d.cd.Sync()), Waited: busy} }, done)
		return
	case gpu.OpFree:
		b, ok := d.bufs[op.Buffer]
		if !ok || b.kind != bufMalloc {
			err = fmt.Errorf("device %d: free buffer %d: not a Malloc buffer", d.index, op.Buffer)
			break
		}
		delete(d.bufs, op.Buffer)
		busy := d.order.Busy()
		d.mu.Unlock()
		d.blocking(func() gpu.Result { return gpu.Result{Err: d.wrap(d.cd.Free(b.ptr)), Waited: busy} }, done)
		return
	case gpu.OpHostAlloc:
		busy := d.order.Busy()
		d.mu.Unlock()
		d.blocking(func() gpu.Result {
			// cudaHostAlloc waits for the whole device.
			p, err := d.cd.HostAlloc(op.Bytes)
			if err != nil {
				return gpu.Result{Err: err, Waited: busy}
			}
			return gpu.Result{Buffer: d.addBuffer(buffer{kind: bufHost, host: p, bytes: op.Bytes}), Waited: busy}
		}, done)
		return
	case gpu.OpHostFree:
		b, ok := d.bufs[op.Buffer]
		if !ok || b.kind != bufHost {
			err = fmt.Errorf("device %d: free host buffer %d: not a host buffer", d.index, op.Buffer)
			break
		}
		delete(d.bufs, op.Buffer)
		busy := d.order.Busy()
		d.mu.Unlock()
		d.blocking(func() gpu.Result { return gpu.Result{Err: d.wrap(d.cd.HostFree(b.host)), Waited: busy} }, done)
		return
	default:
		err = fmt.Errorf("device %d: unknown op %s", d.index, op.Kind)
	}
	d.mu.Unlock()
	if err != nil {
		fail(err)
	}
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
// its stream, when the op carries a kernel that can stage; the op completes
// when the copy has.
func (d *Device) runStage(s *stream, k *gpu.Kernel) gpu.Result {
	if k == nil || k.Stage == nil {
		return gpu.Result{}
	}
	return d.runPartition(s, k.Partition, "staging", "stage", k.Stage)
}

// runKernel runs a partition's compute on stream s, into the buffer the
// stream's last OpCopyIn named, and reports it when the stream has drained.
func (d *Device) runKernel(s *stream, k *gpu.Kernel) gpu.Result {
	if k == nil || k.Run == nil {
		return gpu.Result{}
	}
	return d.runPartition(s, k.Partition, "kernel", "kernel", k.Run)
}

// runPartition runs f, a partition's stage or kernel, on stream s with the
// stream's placement, and returns once whatever f left queued on the stream
// is done. A panicking f fails its op (named doing in the error), not the
// process.
func (d *Device) runPartition(s *stream, partition, doing, what string, f func(context.Context) error) (r gpu.Result) {
	defer func() {
		if p := recover(); p != nil {
			r = gpu.Result{Err: fmt.Errorf("device %d: %s %s panicked: %v", d.index, doing, partition, p)}
		}
	}()
	err := f(WithPlacement(context.Background(), d.placement(s)))
	err = errors.Join(err, d.cd.StreamSync(s.cs))
	if err != nil {
		return gpu.Result{Err: fmt.Errorf("device %d: %s %s: %w", d.index, what, partition, err)}
	}
	return gpu.Result{}
}

// placement is where a stream's partition lives: its stream and the buffer
// the stream's last OpCopyIn named.
func (d *Device) placement(s *stream) Placement {
	d.mu.Lock()
	b, ok := d.bufs[s.staging]
	d.mu.Unlock()
	pl := Placement{Device: d, Stream: s.cs}
	if ok && b.kind != bufHost {
		pl.Buffer, pl.Bytes = b.ptr, b.bytes
	}
	return pl
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
		errs = append(errs, d.cd.DestroyEvent(e))
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

type placementKey struct{}

// WithPlacement returns a context that tells Backend.Stage and
// Backend.Compute where to work.
func WithPlacement(ctx context.Context, p Placement) context.Context {
	return context.WithValue(ctx, placementKey{}, p)
}

// PlacementFrom returns the placement ctx carries, if any.
func PlacementFrom(ctx context.Context) (Placement, bool) {
	p, ok := ctx.Value(placementKey{}).(Placement)
	return p, ok
}
