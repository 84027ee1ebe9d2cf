package actors

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/cuzk/cuzk/gpu"
)

// Releaser is implemented by a Runtime that holds per-partition resources
// (the production runtime: the Executor's). The scheduler calls Release once
// a partition is done or failed for good.
type Releaser interface {
	Release(p PartitionID)
}

// env is what every actor of one engine shares.
type env struct {
	rt  Runtime
	cfg Config
}

func (e *env) emit(ev Event) {
	if e.cfg.Observer == nil {
		return
	}
	ev.At = e.rt.Now()
	e.cfg.Observer.Observe(ev)
}

func (e *env) log() *slog.Logger { return e.rt.System().Logger() }

// props spawns an actor the runtime's way, supervised without a clock: a
// child that fails is restarted at once. protoactor's default one-for-one
// strategy counts failures within a wall-clock window, which the simulator
// cannot allow; and the workers never let a panic reach it anyway.
func (e *env) props(p actor.Producer) *actor.Props {
	return e.rt.Props(p).Configure(actor.WithSupervisor(actor.NewRestartingStrategy()))
}

// Engine is a running set of actors: a scheduler, and per device a device
// actor, its locks and its workers.
type Engine struct {
	env     *env
	sched   *actor.PID
	devices []*actor.PID

	mu      sync.Mutex
	jobs    map[string]bool // submitted and not yet done
	stopped bool
}

// jobEnds forgets a job in the engine once it is done, before the observers
// hear of it, so that whoever learns the job ended may submit it again (to
// retry partitions that failed).
type jobEnds struct {
	eng  *Engine
	next Observer
}

func (j jobEnds) Observe(ev Event) {
	if ev.Kind == EvJobDone {
		j.eng.mu.Lock()
		delete(j.eng.jobs, ev.Partition.Job)
		j.eng.mu.Unlock()
	}
	if j.next != nil {
		j.next.Observe(ev)
	}
}

// Start spawns the actors for devices on rt. Results are reported only as
// events to cfg.Observer: EvPartitionDone, EvPartitionFailed and, once per
// job, EvJobDone.
func Start(rt Runtime, devices []gpu.Info, cfg Config) (*Engine, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("start actors: %w", err)
	}
	if rt == nil {
		return nil, errors.New("start actors: nil runtime")
	}
	if len(devices) == 0 {
		return nil, errors.New("start actors: no devices")
	}
	d, err := lookupDesign(cfg.Design)
	if err != nil {
		return nil, fmt.Errorf("start actors: %w", err)
	}
	seen := map[int]bool{}
	indexes := make([]int, 0, len(devices))
	for _, info := range devices {
		if seen[info.Index] {
			return nil, fmt.Errorf("start actors: device %d listed twice", info.Index)
		}
		if info.Total <= 0 {
			return nil, fmt.Errorf("start actors: device %d has no memory (%d bytes)", info.Index, info.Total)
		}
		seen[info.Index] = true
		indexes = append(indexes, info.Index)
	}
	e := &env{rt: rt, cfg: cfg}
	root := rt.System().Root
	sched := newScheduler(e, indexes)
	eng := &Engine{env: e, jobs: map[string]bool{}}
	e.cfg.Observer = jobEnds{eng: eng, next: cfg.Observer}
	eng.sched = root.Spawn(e.props(func() actor.Actor { return sched }))
	for _, info := range devices {
		da := &deviceActor{env: e, info: info, design: d, sched: eng.sched}
		eng.devices = append(eng.devices, root.Spawn(e.props(func() actor.Actor { return da })))
	}
	return eng, nil
}

// Submit hands a job to the scheduler. It records the job in the Journal
// first, and refuses it (returning the error) if that fails, if the spec is
// invalid, if one partition's HostBytes exceed the host-memory limit, or if a job with the same ID is in the engine (submitted and its
// EvJobDone not yet emitted); a done job may be submitted again. It does not
// wait for the job: its outcome arrives as events.
func (e *Engine) Submit(job JobSpec) error {
	if err := validateJob(job); err != nil {
		return fmt.Errorf("submit job %q: %w", job.ID, err)
	}
	if err := hostFits(job, e.env.cfg.HostMemLimit); err != nil {
		return fmt.Errorf("submit job %q: %w", job.ID, err)
	}
	// A nil Pending means every partition; an empty one, none (a resumed job
	// that was already complete). Clone keeps the difference.
	job.Pending = slices.Clone(job.Pending)
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return fmt.Errorf("submit job %q: engine stopped", job.ID)
	}
	if e.jobs[job.ID] {
		e.mu.Unlock()
		return fmt.Errorf("submit job %q: already submitted", job.ID)
	}
	if j := e.env.cfg.Journal; j != nil {
		if err := j.RecordJob(job); err != nil {
			e.mu.Unlock()
			return fmt.Errorf("submit job %q: record: %w", job.ID, err)
		}
	}
	e.jobs[job.ID] = true
	e.mu.Unlock()
	// Sent without the lock: a synchronous runtime (the simulator's) runs
	// the scheduler in this call, and a job with nothing pending is done at
	// once, which takes the lock (jobEnds).
	e.env.rt.System().Root.Send(e.sched, submitJob{job: job})
	return nil
}

func validateJob(j JobSpec) error {
	if j.ID == "" {
		return errors.New("empty job id")
	}
	if j.Partitions < 1 {
		return fmt.Errorf("%d partitions", j.Partitions)
	}
	if j.VRAM <= 0 {
		return fmt.Errorf("VRAM per partition must be positive, got %d", j.VRAM)
	}
	if j.Copy < 0 || j.Copy > j.VRAM {
		return fmt.Errorf("copy of %d bytes per partition: must be between 0 and its VRAM, %d", j.Copy, j.VRAM)
	}
	if j.Scratch < 0 {
		return fmt.Errorf("kernel scratch per partition must not be negative, got %d", j.Scratch)
	}
	if j.HostBytes < 0 {
		return fmt.Errorf("host bytes per partition must not be negative, got %d", j.HostBytes)
	}
	if j.Priority < PriorityLow || j.Priority > PriorityCritical {
		return fmt.Errorf("unknown priority %d", int(j.Priority))
	}
	for _, p := range j.Pending {
		if p < 0 || p >= j.Partitions {
			return fmt.Errorf("pending partition %d out of range [0, %d)", p, j.Partitions)
		}
	}
	return nil
}

// Cancel stops job id: its queued partitions are given up at once
// (EvPartitionCancelled), and one in flight when its attempt ends, unless the
// attempt proved it; retries stop. The job then ends with EvJobDone. Ending
// the running attempts early is the executor's part (the production runtime
// fails a cancelled job's next stage). Cancel of a job not in the engine is
// an error.
func (e *Engine) Cancel(id string) error {
	e.mu.Lock()
	running, stopped := e.jobs[id], e.stopped
	e.mu.Unlock()
	if stopped {
		return fmt.Errorf("cancel job %q: engine stopped", id)
	}
	if !running {
		return fmt.Errorf("cancel job %q: not running", id)
	}
	e.env.rt.System().Root.Send(e.sched, cancelJob{id: id})
	return nil
}

// Stop stops the actors. Work in flight is abandoned: its completions go to
// dead letters. Submit fails after Stop.
func (e *Engine) Stop() {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return
	}
	e.stopped = true
	e.mu.Unlock()
	root := e.env.rt.System().Root
	for _, d := range e.devices {
		root.Stop(d)
	}
	root.Stop(e.sched)
}
