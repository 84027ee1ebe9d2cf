package runner

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	rtrace "runtime/trace"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
)

// production is the actors' Runtime of a real run, the twin of the
// simulator's: stage work runs on goroutines, device work on the devices, and
// the clock is the wall clock.
type production struct {
	exec    actors.Executor
	devices map[int]gpu.Device
	system  *actor.ActorSystem
	start   time.Time
	rand    *rand.Rand
	ctx     context.Context
}

var (
	_ actors.Runtime  = (*production)(nil)
	_ actors.Releaser = (*production)(nil)
)

// NewRuntime returns the actors' runtime of a real run. Stages run through
// exec with ctx, which ends them at their next check once it is cancelled;
// DeviceWork for device index i goes to the device whose Info().Index is i. A
// compute op whose kernel has no Run gets the Executor's kernel. exec may be
// nil: stages then do nothing (tests of the actors alone).
func NewRuntime(ctx context.Context, exec actors.Executor, devices []gpu.Device, seed uint64) actors.Runtime {
	p := &production{
		exec:    exec,
		devices: map[int]gpu.Device{},
		// protoactor logs every system start and actor restart at info level;
		// keep its warnings and errors only, through the process's logger.
		system: actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
			return slog.New(warnOnly{slog.Default().Handler()})
		})),
		start: time.Now(),
		// Actors on the default dispatcher run on many goroutines: the
		// source is locked.
		rand: rand.New(&lockedSource{src: rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)}),
		ctx:  ctx,
	}
	for _, d := range devices {
		p.devices[d.Info().Index] = d
	}
	return p
}

type lockedSource struct {
	mu  sync.Mutex
	src rand.Source
}

func (s *lockedSource) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.Uint64()
}

func (p *production) Now() time.Duration                   { return time.Since(p.start) }
func (p *production) Rand() *rand.Rand                     { return p.rand }
func (p *production) System() *actor.ActorSystem           { return p.system }
func (p *production) Props(pr actor.Producer) *actor.Props { return actor.PropsFromProducer(pr) }

func (p *production) After(pid *actor.PID, d time.Duration, msg any) {
	time.AfterFunc(d, func() { p.system.Root.Send(pid, msg) })
}

func (p *production) Release(id actors.PartitionID) {
	if p.exec != nil {
		p.exec.Release(id)
	}
}

func (p *production) Start(self *actor.PID, token uint64, w actors.Work) {
	began := time.Now()
	reply := func(r gpu.Result, err error) {
		p.system.Root.Send(self, actors.WorkDone{Token: token, Work: w, Result: r, Err: err, Took: time.Since(began), At: p.Now()})
	}
	switch w := w.(type) {
	case actors.StageWork:
		if s, ok := p.exec.(actors.StageStarter); ok {
			s.Starting(w)
		}
		go func() { reply(gpu.Result{}, p.runStage(w)) }()
	case actors.DeviceWork:
		if rtrace.IsEnabled() {
			rtrace.Log(p.ctx, "cuzk", fmt.Sprintf("start %s %s", w.Op.Kind, w.Partition))
		}
		d, ok := p.devices[w.Device]
		if !ok {
			go reply(gpu.Result{}, fmt.Errorf("device work %s: no device %d", w.Op.Kind, w.Device))
			return
		}
		op := w.Op
		if op.Kind == gpu.OpCompute || op.Kind == gpu.OpCopyIn {
			op.Kernel = p.kernel(op.Kernel, w.Partition, w.Device)
		}
		d.Submit(op, func(r gpu.Result) { reply(r, r.Err) })
	default:
		go reply(gpu.Result{}, fmt.Errorf("unknown work %T", w))
	}
}

// runStage runs a CPU stage; a panic in it fails the stage instead of the
// process, and the partition is retried like after any other error.
func (p *production) runStage(w actors.StageWork) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s %s panicked: %v", w.Partition, w.Stage, r)
		}
	}()
	if p.exec == nil {
		return nil
	}
	return p.exec.RunStage(p.ctx, w)
}

func (p *production) kernel(k *gpu.Kernel, id actors.PartitionID, device int) *gpu.Kernel {
	if (k != nil && k.Run != nil) || p.exec == nil {
		return k
	}
	real := p.exec.Kernel(id, device)
	if real == nil {
		return k
	}
	out := *real
	if k != nil && out.Partition == "" {
		out.Partition = k.Partition
	}
	// A device that runs Stage and Run calls them with a context of its
	// own; the runtime's cancellation is added to it. (The kernel's Work
	// carries its job's context, which the runtime's stages end too.)
	out.Stage, out.Run = p.cancellable(out.Stage), p.cancellable(out.Run)
	return &out
}

// cancellable returns f with the runtime's context's cancellation added to
// the context it is called with.
func (p *production) cancellable(f func(context.Context) error) func(context.Context) error {
	if f == nil {
		return nil
	}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(p.ctx, cancel)()
		if err := p.ctx.Err(); err != nil {
			return err
		}
		return f(ctx)
	}
}

// warnOnly drops records below warning level.
type warnOnly struct{ slog.Handler }

func (h warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnOnly) WithAttrs(as []slog.Attr) slog.Handler { return warnOnly{h.Handler.WithAttrs(as)} }
func (h warnOnly) WithGroup(n string) slog.Handler       { return warnOnly{h.Handler.WithGroup(n)} }
