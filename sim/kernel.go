package sim

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
)

// mailboxThroughput is how many messages a mailbox handles before yielding.
// With the synchronized dispatcher the yield is a no-op; the value only has to
// be positive.
const mailboxThroughput = 300

// Kernel is the simulator's runtime: a virtual clock, an event heap ordered by
// (time, sequence) and seeded random sources. It implements actors.Runtime, so
// the production actors run on it unchanged; their stage work is charged to
// the CPU model and their device work to the GPU models.
type Kernel struct {
	now   time.Duration
	seq   uint64
	heap  eventHeap
	epoch int

	seed    uint64
	rng     *rand.Rand // the actors' source (Runtime.Rand)
	noise   *rand.Rand // the models' source, kept apart so that actor draws do not shift costs
	latency *rand.Rand // host.completion_latency's source, kept apart so that it shifts no other draw
	system  *actor.ActorSystem
	props   []actor.PropsOption
	profile *Profile
	cpu     *CPU
	devices []*Device
	vram    []int64 // per device, bytes
	mem     DeviceMemory
	pool    gpu.PoolPolicy
	faults  *faultState
	handoff *handoff // nil: the synchronized dispatcher
	events  int64
	// onDevice, when set, is told of engine activity for the timeline.
	onDevice func(DeviceActivity)
}

var _ actors.Runtime = (*Kernel)(nil)

// DeviceMemory is what a simulated device holds outside the designs.
type DeviceMemory struct {
	// Resident is taken at start with cudaMalloc (keys, buffers, a
	// ballast): never free, never the pool's.
	Resident int64
	// Headroom is left out of the memory the device reports to the designs
	// (gpu.Info.Total), for what allocates behind their ledger.
	Headroom int64
}

// NewKernel returns a kernel at virtual time zero with one simulated device
// per entry of vram (its memory in bytes), all of the profile's kind.
func NewKernel(p *Profile, vram []int64, pool gpu.PoolPolicy, seed uint64) *Kernel {
	return NewKernelWith(p, vram, DeviceMemory{}, pool, seed)
}

// NewKernelWith is NewKernel with memory taken on every device before the
// designs start.
func NewKernelWith(p *Profile, vram []int64, mem DeviceMemory, pool gpu.PoolPolicy, seed uint64) *Kernel {
	k := &Kernel{
		mem:     mem,
		seed:    seed,
		rng:     rand.New(rand.NewPCG(seed, 0x6375_7a6b_6163_746f)),
		noise:   rand.New(rand.NewPCG(seed, 0x6375_7a6b_6d6f_646c)),
		latency: rand.New(rand.NewPCG(seed, 0x6375_7a6b_6c61_7465)),
		profile: p,
		vram:    vram,
		pool:    pool,
		faults:  &faultState{},
	}
	var disp actor.Dispatcher = actor.NewSynchronizedDispatcher(mailboxThroughput)
	if h := p.Host.Handoff; h != nil {
		k.handoff = newHandoff(*h, seed, func(fn func()) { k.At(k.now, fn) })
		disp = k.handoff
	}
	k.props = []actor.PropsOption{actor.WithDispatcher(disp)}
	k.boot()
	return k
}

// boot starts a process incarnation: a fresh actor system and fresh device and
// CPU state, as after a process start. Events of earlier incarnations are
// dropped when they come due.
func (k *Kernel) boot() {
	if k.handoff != nil {
		k.handoff.reset()
	}
	k.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	k.cpu = newCPU(k, k.profile.Host)
	k.devices = make([]*Device, len(k.vram))
	for i, v := range k.vram {
		k.devices[i] = newDevice(k, i, v, k.mem, k.profile.Device, k.pool)
	}
}

// Crash ends the current process incarnation at the current instant: every
// actor, every piece of work in flight and every device allocation is lost, as
// when the process dies (the CUDA context goes with it). A new incarnation
// starts at once with empty devices; the caller restarts the engine on it.
func (k *Kernel) Crash() {
	k.epoch++
	k.faults.reset()
	k.boot()
}

// Now implements actors.Runtime.
func (k *Kernel) Now() time.Duration { return k.now }

// Rand implements actors.Runtime.
func (k *Kernel) Rand() *rand.Rand { return k.rng }

// System implements actors.Runtime.
func (k *Kernel) System() *actor.ActorSystem { return k.system }

// Props implements actors.Runtime: every actor gets the synchronized
// dispatcher, so a message is handled inline on the sender's goroutine and an
// event is processed to quiescence before the kernel takes the next one.
func (k *Kernel) Props(producer actor.Producer) *actor.Props {
	return actor.PropsFromProducer(producer, k.props...)
}

// Devices returns the simulated devices of the current incarnation.
func (k *Kernel) Devices() []*Device { return k.devices }

// Infos describes the devices as actors.Start wants them.
func (k *Kernel) Infos() []gpu.Info {
	out := make([]gpu.Info, len(k.devices))
	for i, d := range k.devices {
		out[i] = d.Info()
	}
	return out
}

// Seed is the seed the kernel was made with.
func (k *Kernel) Seed() uint64 { return k.seed }

// Events is how many timeline events the kernel has run.
func (k *Kernel) Events() int64 { return k.events }

// Start implements actors.Runtime. Stage work is charged to the CPU model,
// device work to the device's model; at the virtual completion time the actor
// gets actors.WorkDone.
func (k *Kernel) Start(self *actor.PID, token uint64, w actors.Work) {
	start := k.now
	k.faults.noteStart(self)
	_, cpuWork := w.(actors.StageWork)
	// finishLate reports the work done now, its worker hearing of it late
	// (host.completion_latency; WorkDone's At and Took stay the work's).
	finishLate := func(res gpu.Result, err error, late time.Duration) {
		// A crash is delivered through CPU work only: failing a device op
		// whose effect (an allocation) already happened would leak it behind
		// the worker's back, which is a different fault.
		if cpuWork && k.faults.crashDue(self) {
			err = ErrWorkerCrash
			res.Err = err
		}
		m := actors.WorkDone{Token: token, Work: w, Result: res, Err: err, Took: k.now - start, At: k.now}
		if late <= 0 {
			k.send(self, m)
			return
		}
		k.At(k.now+late, func() { k.send(self, m) })
	}
	finish := func(res gpu.Result, err error) { finishLate(res, err, 0) }
	switch w := w.(type) {
	case actors.StageWork:
		cost, err := k.profile.stageCost(w.Stage, w.Size)
		if err != nil {
			k.At(k.now, func() { finish(gpu.Result{}, err) })
			return
		}
		k.cpu.run(w.Partition, w.Stage, k.jitter(w.Stage, cost), func() { finish(gpu.Result{}, nil) })
	case actors.DeviceWork:
		if w.Device < 0 || w.Device >= len(k.devices) {
			err := fmt.Errorf("device work on device %d: %d devices simulated", w.Device, len(k.devices))
			k.At(k.now, func() { finish(gpu.Result{Err: err}, err) })
			return
		}
		k.devices[w.Device].Submit(w.Op, func(r gpu.Result) { finishLate(r, r.Err, k.completionLatency(w.Op, r)) })
	default:
		err := fmt.Errorf("unknown work %T", w)
		k.At(k.now, func() { finish(gpu.Result{}, err) })
	}
}

// After implements actors.Runtime.
func (k *Kernel) After(pid *actor.PID, d time.Duration, msg any) {
	if d < 0 {
		d = 0
	}
	k.At(k.now+d, func() { k.send(pid, msg) })
}

func (k *Kernel) send(pid *actor.PID, msg any) {
	k.system.Root.Send(pid, msg)
}

// At schedules fn at virtual time t (not before now) in the current
// incarnation.
func (k *Kernel) At(t time.Duration, fn func()) {
	if t < k.now {
		t = k.now
	}
	k.seq++
	k.heap.push(event{at: t, seq: k.seq, epoch: k.epoch, fn: fn})
}

// atAnyEpoch schedules fn so that it runs even after a crash: scenario events
// (job submissions, faults) belong to the world, not to the process.
func (k *Kernel) atAnyEpoch(t time.Duration, fn func()) {
	if t < k.now {
		t = k.now
	}
	k.seq++
	k.heap.push(event{at: t, seq: k.seq, epoch: -1, fn: fn})
}

// Step runs the next event. It reports false when the heap is empty or the
// next event lies beyond limit.
func (k *Kernel) Step(limit time.Duration) bool {
	for len(k.heap) > 0 {
		if k.heap[0].at > limit {
			return false
		}
		e := k.heap.pop()
		if e.epoch >= 0 && e.epoch != k.epoch {
			continue
		}
		k.now = e.at
		k.events++
		e.fn()
		return true
	}
	return false
}

// RunUntil runs events until done reports true, the heap empties, or the
// clock would pass limit. It reports whether done was reached.
func (k *Kernel) RunUntil(limit time.Duration, done func() bool) bool {
	for !done() {
		if !k.Step(limit) {
			return done()
		}
	}
	return true
}

// completionLatency is how long op's completion takes to reach its worker
// (host.completion_latency), drawn from its lognormal; 0 without one.
func (k *Kernel) completionLatency(op gpu.Op, r gpu.Result) time.Duration {
	l := k.profile.Host.CompletionLatency
	if l == nil {
		return 0
	}
	d, ok := l.Calls[op.Kind.String()]
	if op.Kind == gpu.OpDeviceSync && r.Waited && l.Waited.P50Us > 0 {
		d, ok = l.Waited, true
	}
	if !ok || d.P50Us <= 0 {
		return 0
	}
	us := d.P50Us
	if d.Sigma > 0 {
		us *= math.Exp(d.Sigma * k.latency.NormFloat64())
	}
	return time.Duration(us * float64(time.Microsecond))
}

// jitter scales a stage's cost by its run-to-run variation (the stage's own,
// else the profile's), drawn from the model's seeded source.
func (k *Kernel) jitter(st actors.Stage, d time.Duration) time.Duration {
	cv := k.profile.Jitter
	if j := k.profile.Stages[st.String()].Jitter; j != nil {
		cv = *j
	}
	if cv <= 0 || d <= 0 {
		return d
	}
	f := 1 + cv*k.noise.NormFloat64()
	if f < 0.5 {
		f = 0.5
	}
	return time.Duration(float64(d) * f)
}
