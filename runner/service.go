package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
)

// Errors of a Service; they wrap with context, test them with errors.Is.
var (
	// ErrClosed: the service is stopping or stopped and takes no more jobs.
	ErrClosed = errors.New("service stopped")
	// ErrExists: a job with that id is already in the store.
	ErrExists = errors.New("job exists")
	// ErrNotRunning: the job is unfinished in the store but this service is
	// not proving it (its resume was refused, for instance its keys changed).
	ErrNotRunning = errors.New("job not running")
	// ErrInvalid: the submission is not a job that can be proved.
	ErrInvalid = errors.New("invalid job")
	// ErrBusy: the job is still running; it can be retried once it ends.
	ErrBusy = errors.New("job still running")
	// ErrNothingToRetry: the job has no failed partition.
	ErrNothingToRetry = errors.New("no failed partition to retry")
	// ErrTooLarge: one partition of the job does not fit a device's memory
	// even alone.
	ErrTooLarge = errors.New("partition too large for the device")
	// ErrFinished: the job has finished; there is nothing to cancel.
	ErrFinished = errors.New("job finished")
)

// Job states in a JobStatus.
const (
	StateRunning    = "running"    // submitted to this service, not yet finished
	StateDone       = "done"       // every partition proved
	StateFailed     = "failed"     // finished, some partition failed for good
	StateUnfinished = "unfinished" // recorded unfinished, and not running in this service
	StateCancelled  = "cancelled"  // finished, cancelled before every partition was proved
)

// ServiceOptions configures a Service.
type ServiceOptions struct {
	Backend prover.Backend
	Devices []gpu.Device
	// Config configures the actors. Its Journal is the service's own (over
	// Store) and its Observer is added to, not replaced.
	Config actors.Config
	// Store records every job and partition. It must be open for writing and
	// stay open until Close has returned; the caller closes it.
	Store    *store.Store
	Observer actors.Observer // metrics, logs; may be nil
	Seed     uint64          // the runtime's random source
	// Preload, if not nil, is called once for each key set before the first
	// job that uses it (the GPU backend puts the key's points on the devices).
	Preload func(*prover.Keys) error
	// Load loads a key set that the service has not (Keys with no loader of
	// its own); nil is prover.Load. The GPU backend's daemon passes one that
	// leaves points beyond the host budget for keys on disk.
	Load KeyLoader
	// Randomness is the source of the proofs' blinding (r, s); nil is
	// crypto/rand. Only tests set it: whoever knows it learns witnesses.
	Randomness io.Reader
	// Cluster, if not nil, proves the jobs of example circuits over the
	// members of a cluster instead of on Devices alone (runner/cluster.go);
	// jobs submitted with Local set still run here.
	Cluster Distributor
}

// Service proves jobs submitted at any time, on actors started once, and
// records them in a store so that an unfinished job can be resumed by the
// next service on that store. It is safe for concurrent use.
type Service struct {
	opt     ServiceOptions
	st      *store.Store
	journal *serviceJournal
	exec    *drainExecutor
	engine  *actors.Engine
	// stages is the context of every stage; Close cancels it once the
	// actors have stopped, so that the stages still running end at their
	// next check instead of running to completion.
	stages       context.Context
	cancelStages context.CancelFunc

	// submitMu makes "not in the store yet" and "recorded" one step, so that
	// two submissions of one id cannot both pass the check.
	submitMu sync.Mutex

	keysMu  sync.Mutex
	keys    map[string]*prover.Keys // by absolute key directory
	keyUsed map[string]time.Time    // when Keys last returned them

	mu      sync.Mutex
	jobs    map[string]*tracked
	refused map[string]string // unfinished jobs whose resume failed, and why
	outs    map[string]string // proof directory per job
	closing chan struct{}
	closed  bool
}

// tracked is what the service knows of a job it submitted, from the events.
type tracked struct {
	done chan struct{} // closed at EvJobDone
	err  string        // EvJobDone's error: partitions failed
	live map[int]Running
	ran  map[int]Running // where each partition last ran in this service
	// took is each partition's stage times in this service, from the
	// events: the store's are recorded with the proof, before finalize ends.
	took    map[int]map[string]time.Duration
	ended   bool
	cluster bool // proved over the cluster: its partitions are the Distributor's
	// keys are the job's key set while it runs, nil once it has ended, so
	// that an ended job does not keep keys ForgetIdleKeys has dropped;
	// keyDir (the keys' directory, absolute; "" for keys of no directory)
	// then names them.
	keys    *prover.Keys
	keyDir  string
	started time.Time
	endedAt time.Time
}

// StageReady is the stage a Running names for a partition the host-memory
// gate has prepared and that waits for a GPU worker (device and worker -1).
const StageReady = "ready"

// Running is where a partition in flight is: the stage it is in (or last
// began) and the device and worker running it.
type Running struct {
	Stage  string `json:"stage"`
	Device int    `json:"device"`
	Worker int    `json:"worker"`
	// Member is, in a cluster, the member whose device it is.
	Member string `json:"member,omitempty"`
}

// PartitionStatus is one partition of a JobStatus: its durable state from the
// store and, while it is in flight, where it is.
type PartitionStatus struct {
	Index     int                `json:"index"`
	State     string             `json:"state"` // pending, synthesized, proved or failed
	Attempts  int                `json:"attempts"`
	LastError string             `json:"last_error,omitempty"`
	StagesMS  map[string]float64 `json:"stages_ms,omitempty"`
	Running   *Running           `json:"running,omitempty"`
	// Ran is where the partition last ran in this service (absent for one
	// proved by an earlier process).
	Ran *Running `json:"ran,omitempty"`
}

// JobStatus is the progress of one job.
type JobStatus struct {
	ID            string    `json:"job_id"`
	Circuit       string    `json:"circuit"`
	Constraints   int64     `json:"constraints"`
	KeyHash       string    `json:"key_hash"`
	Priority      string    `json:"priority"`
	NumPartitions int       `json:"num_partitions"`
	State         string    `json:"state"` // one of the State constants
	Proved        int       `json:"proved"`
	Failed        int       `json:"failed"`
	Cancelled     int       `json:"cancelled,omitempty"`
	Pending       int       `json:"pending"` // neither proved nor failed
	InFlight      int       `json:"in_flight"`
	Attempts      int       `json:"attempts"`
	Created       time.Time `json:"created"`
	Out           string    `json:"out,omitempty"`
	Error         string    `json:"error,omitempty"`
	// WallMS is how long the job has run in this service: from its
	// submission to its end, or to now while it runs. Zero for a job this
	// service did not run.
	WallMS float64 `json:"wall_ms,omitempty"`
	// Partitions is filled by Status and Wait, not by Jobs.
	Partitions []PartitionStatus `json:"partitions,omitempty"`
}

// StartService starts the actors on opt's devices. Nothing is proved until
// Submit or Resume.
func StartService(opt ServiceOptions) (*Service, error) {
	if opt.Store == nil {
		return nil, errors.New("start service: no store")
	}
	if opt.Backend == nil {
		return nil, errors.New("start service: no backend")
	}
	s := &Service{opt: opt, st: opt.Store, keys: map[string]*prover.Keys{}, keyUsed: map[string]time.Time{},
		jobs: map[string]*tracked{}, refused: map[string]string{}, outs: map[string]string{},
		closing: make(chan struct{})}
	s.journal = &serviceJournal{StoreJournal: NewStoreJournal(opt.Store), s: s}
	s.exec = &drainExecutor{Executor: NewExecutor(opt.Backend, s.journal)}
	if opt.Randomness != nil {
		s.exec.rnd = &lockedReader{r: opt.Randomness}
	}
	s.stages, s.cancelStages = context.WithCancel(context.Background())
	s.exec.base, s.exec.guard = s.stages, s.exec
	cfg := withHostGate(opt.Config, opt.Backend)
	cfg.Journal = s.journal
	engine, err := startEngine(s.stages, s.exec, opt.Devices, cfg, s, opt.Observer, opt.Seed)
	if err != nil {
		s.cancelStages()
		return nil, fmt.Errorf("start service: %w", err)
	}
	s.engine = engine
	return s, nil
}

// Keys returns the key set in dir for circuit and layout: the one this
// service loaded before, or what load (ServiceOptions.Load, else
// prover.Load, when nil) returns, kept for later jobs. Loads are serialized,
// so two jobs asking for keys that load makes (a setup) do not make them
// twice.
func (s *Service) Keys(dir, circuit string, layout circuits.Layout, load KeyLoader) (*prover.Keys, error) {
	if load == nil {
		load = s.opt.Load
	}
	if load == nil {
		load = prover.Load
	}
	abs := absPath(dir)
	s.keysMu.Lock()
	defer s.keysMu.Unlock()
	if k, ok := s.keys[abs]; ok && k.Circuit == circuit && (layout == nil || k.Layout.Equal(layout)) {
		s.keyUsed[abs] = time.Now()
		return k, nil
	}
	k, err := load(dir, circuit, layout)
	if err != nil {
		return nil, err
	}
	if s.opt.Preload != nil {
		if err := s.opt.Preload(k); err != nil {
			return nil, fmt.Errorf("keys %s: %w", dir, err)
		}
	}
	s.keys[abs] = k
	s.keyUsed[abs] = time.Now()
	return k, nil
}

// ForgetIdleKeys drops the key sets that no running job uses and that no job
// has used for idle (since Keys returned them or since their last job
// ended), and returns how many. Their host memory (constraint system,
// proving key, the solver's reusable solutions) is then the collector's; a
// later job loads them again. Device copies are the backend's to evict.
func (s *Service) ForgetIdleKeys(idle time.Duration) int {
	now := time.Now()
	inUse := map[*prover.Keys]bool{}
	lastEnd := map[string]time.Time{} // by key directory
	s.mu.Lock()
	for _, t := range s.jobs {
		if !t.ended {
			inUse[t.keys] = true
		} else if t.keyDir != "" && t.endedAt.After(lastEnd[t.keyDir]) {
			lastEnd[t.keyDir] = t.endedAt
		}
	}
	s.mu.Unlock()
	s.keysMu.Lock()
	defer s.keysMu.Unlock()
	n := 0
	for abs, k := range s.keys {
		last := s.keyUsed[abs]
		if e := lastEnd[abs]; e.After(last) {
			last = e
		}
		if inUse[k] || now.Sub(last) < idle {
			continue
		}
		delete(s.keys, abs)
		delete(s.keyUsed, abs)
		n++
	}
	return n
}

// Submit records a new job in the store and queues all its partitions. It
// refuses an id the store already holds (ErrExists): a recorded job is
// resumed by Resume, never submitted again.
func (s *Service) Submit(sub Submission) error {
	if sub.Keys == nil || sub.Partitions < 1 || sub.Pending != nil {
		return fmt.Errorf("submit job %q: %w: want keys, at least one partition and no pending list", sub.ID, ErrInvalid)
	}
	if len(sub.Witnesses) > 0 && len(sub.Witnesses) != sub.Partitions || len(sub.Inputs) > 0 && len(sub.Inputs) != sub.Partitions {
		return fmt.Errorf("submit job %q: %w: %d witness files and %d inputs for %d partitions", sub.ID, ErrInvalid, len(sub.Witnesses), len(sub.Inputs), sub.Partitions)
	}
	s.submitMu.Lock()
	defer s.submitMu.Unlock()
	_, err := s.st.Summary(sub.ID)
	switch {
	case err == nil:
		return fmt.Errorf("submit job %s: %w in %s", sub.ID, ErrExists, s.st.Dir())
	case errors.Is(err, store.ErrInvalid):
		return fmt.Errorf("submit: %w: %w", ErrInvalid, err)
	case !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("submit job %s: %w", sub.ID, err)
	}
	return s.start(sub)
}

// Resume submits every unfinished job of the store that this service is not
// already running, with only its partitions neither proved nor failed
// pending, and returns them. A job that cannot be resumed (its keys are gone
// or changed) is left in the store as it is, reported in the joined error,
// and shown as unfinished by Status; the others run.
func (s *Service) Resume() ([]Submission, error) {
	sums, err := s.st.UnfinishedJobs()
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	loadKeys := func(dir, circuit string, l circuits.Layout) (*prover.Keys, error) {
		return s.Keys(dir, circuit, l, nil)
	}
	var out []Submission
	var errs []error
	for _, sum := range sums {
		s.mu.Lock()
		_, running := s.jobs[sum.ID]
		s.mu.Unlock()
		if running {
			continue
		}
		sub, err := ResumeRequest(s.st, sum.ID, loadKeys)
		if err == nil {
			s.submitMu.Lock()
			err = s.start(sub)
			s.submitMu.Unlock()
		}
		if err != nil {
			s.mu.Lock()
			s.refused[sum.ID] = err.Error()
			s.mu.Unlock()
			errs = append(errs, fmt.Errorf("resume: %w", err))
			continue
		}
		out = append(out, sub)
	}
	return out, errors.Join(errs...)
}

// Retry proves again the partitions of job id that failed for good: it
// reopens them in the store (store.Reopen) and resumes the job with them
// pending, and returns how many it reopened. A job still running fails with
// ErrBusy, one with no failed partition with ErrNothingToRetry, an unknown
// one with store.ErrNotFound.
func (s *Service) Retry(id string) (int, error) {
	s.submitMu.Lock()
	defer s.submitMu.Unlock()
	s.mu.Lock()
	t, tracked := s.jobs[id]
	running := tracked && !t.ended
	s.mu.Unlock()
	if running {
		return 0, fmt.Errorf("retry job %s: %w", id, ErrBusy)
	}
	reopened, err := ReopenFailed(s.st, id)
	n := len(reopened)
	if err != nil {
		return n, fmt.Errorf("retry job %s: %w", id, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("retry job %s: %w", id, ErrNothingToRetry)
	}
	sub, err := ResumeRequest(s.st, id, func(dir, circuit string, l circuits.Layout) (*prover.Keys, error) {
		return s.Keys(dir, circuit, l, nil)
	})
	if err == nil {
		// The job's last run is over: this one is tracked afresh.
		s.mu.Lock()
		delete(s.jobs, id)
		s.mu.Unlock()
		err = s.start(sub)
	}
	if err != nil {
		// The partitions stay reopened: the next Resume proves them.
		s.mu.Lock()
		s.refused[id] = err.Error()
		s.mu.Unlock()
		return n, fmt.Errorf("retry job %s: %w", id, err)
	}
	return n, nil
}

// start hands a job to the actors; the caller holds submitMu.
func (s *Service) start(sub Submission) error {
	spec := actors.JobSpec{ID: sub.ID, Partitions: sub.Partitions, Pending: sub.Pending,
		Size: sub.Keys.Constraints(), VRAM: FootprintFor(s.opt.Backend, sub.Keys), Copy: StagedFor(s.opt.Backend, sub.Keys), Priority: sub.Priority,
		HostBytes: prover.HostFootprint(sub.Keys)}
	if err := hostFits(sub.ID, spec, s.opt.Config.HostMemLimit); err != nil {
		return err
	}
	// A partition that cannot fit a device even alone would fail there
	// after its every attempt: refuse the job before anything is proved.
	for _, d := range s.opt.Devices {
		if info := d.Info(); spec.VRAM > info.Total {
			return fmt.Errorf("submit job %s: %w: one partition needs %s of device memory, device %d has %s for partitions",
				sub.ID, ErrTooLarge, gpu.FormatBytes(spec.VRAM), info.Index, gpu.FormatBytes(info.Total))
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("submit job %s: %w", sub.ID, ErrClosed)
	}
	if _, ok := s.jobs[sub.ID]; ok {
		s.mu.Unlock()
		return fmt.Errorf("submit job %s: %w: submitted to this service before", sub.ID, ErrExists)
	}
	// Tracked before the engine has it: EvJobDone may come before Submit
	// returns (a resumed job with nothing left does at once).
	t := &tracked{done: make(chan struct{}), live: map[int]Running{}, ran: map[int]Running{},
		took: map[int]map[string]time.Duration{}, keys: sub.Keys, started: time.Now(), cluster: s.distributed(sub)}
	if sub.Keys.Dir != "" {
		t.keyDir = absPath(sub.Keys.Dir)
	}
	s.jobs[sub.ID] = t
	s.outs[sub.ID] = sub.Out
	delete(s.refused, sub.ID)
	s.mu.Unlock()

	s.journal.Expect(sub)
	if t.cluster {
		return s.distribute(sub, spec)
	}
	s.exec.AddJob(sub.ID, sub.Keys, sub.Seed, sub.Witnesses, sub.Inputs)
	if err := s.engine.Submit(spec); err != nil {
		s.untrack(sub.ID)
		return err
	}
	return nil
}

// untrack drops job id, which start tracked but could not hand over, from
// the service, the executor and the journal.
func (s *Service) untrack(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.jobs, id)
	s.forgetRunLocked(id)
}

// forgetRunLocked drops what the executor and the journal kept to run job
// id; the caller holds mu, so that a Retry, which starts the job afresh
// once it sees it ended, comes after.
func (s *Service) forgetRunLocked(id string) {
	s.exec.ForgetJob(id)
	s.journal.Forget(id)
}

// Observe implements actors.Observer: it follows the jobs this service
// submitted.
func (s *Service) Observe(e actors.Event) {
	if e.Kind == actors.EvStageStart && e.Stage == actors.StageCompute {
		s.exec.Computing(e.Partition)
	}
	switch e.Kind {
	case actors.EvStageStart, actors.EvStageEnd, actors.EvPartitionDone, actors.EvPartitionRetry, actors.EvPartitionFailed,
		actors.EvPartitionCancelled, actors.EvJobDone:
	default:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.jobs[e.Partition.Job]
	if !ok {
		return
	}
	switch e.Kind {
	case actors.EvStageStart:
		r := Running{Stage: e.Stage.String(), Device: e.Device, Worker: e.Worker}
		t.live[e.Partition.Partition], t.ran[e.Partition.Partition] = r, r
	case actors.EvStageEnd:
		if e.Err == "" && e.Stage == actors.StagePrep && e.Device < 0 {
			// Prepared by the host-memory gate: it waits for a GPU worker.
			t.live[e.Partition.Partition] = Running{Stage: StageReady, Device: -1, Worker: -1}
		}
		if e.Err == "" {
			m := t.took[e.Partition.Partition]
			if m == nil {
				m = map[string]time.Duration{}
				t.took[e.Partition.Partition] = m
			}
			m[e.Stage.String()] = e.Took
		}
	case actors.EvPartitionDone, actors.EvPartitionRetry, actors.EvPartitionFailed, actors.EvPartitionCancelled:
		delete(t.live, e.Partition.Partition)
	case actors.EvJobDone:
		if !t.ended {
			t.ended, t.err, t.endedAt = true, e.Err, time.Now()
			t.keys = nil
			close(t.done)
			s.forgetRunLocked(e.Partition.Job)
		}
	}
}

// Status returns the progress of job id, with its partitions; a job that is
// not in the store fails with an error wrapping store.ErrNotFound.
func (s *Service) Status(id string) (JobStatus, error) {
	sum, err := s.st.Summary(id)
	if err != nil {
		return JobStatus{}, err
	}
	parts, err := s.st.Partitions(id)
	if err != nil {
		return JobStatus{}, err
	}
	placed := s.placements(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	js := s.statusLocked(sum)
	t := s.jobs[id]
	for _, p := range parts {
		ps := PartitionStatus{Index: p.Index, State: p.State.String(), Attempts: p.Attempts, LastError: p.LastError}
		timings := p.Timings
		if t != nil && len(t.took[p.Index]) > 0 {
			timings = t.took[p.Index]
		}
		if len(timings) > 0 {
			ps.StagesMS = map[string]float64{}
			for stage, d := range timings {
				ps.StagesMS[stage] = float64(d.Microseconds()) / 1000
			}
		}
		if t != nil && !p.State.Final() {
			if r, ok := t.live[p.Index]; ok {
				ps.Running = &r
			}
		}
		if t != nil {
			if r, ok := t.ran[p.Index]; ok {
				ps.Ran = &r
			}
		}
		if r, ok := placed[p.Index]; ok && ps.Ran == nil {
			ps.Ran = &r
		}
		js.Partitions = append(js.Partitions, ps)
	}
	return js, nil
}

// Jobs returns every job of the store, oldest first, without partitions.
func (s *Service) Jobs() ([]JobStatus, error) {
	sums, err := s.st.Jobs()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]JobStatus, 0, len(sums))
	for _, sum := range sums {
		out = append(out, s.statusLocked(sum))
	}
	return out, nil
}

func (s *Service) statusLocked(sum store.JobSummary) JobStatus {
	js := JobStatus{ID: sum.ID, Circuit: sum.Circuit, Constraints: sum.Constraints, KeyHash: sum.KeyHash,
		Priority: sum.Priority.String(), NumPartitions: sum.NumPartitions, Proved: sum.Proved, Failed: sum.Failed,
		Cancelled: sum.Cancelled, Pending: sum.NumPartitions - sum.Proved - sum.Failed - sum.Cancelled, Attempts: sum.Attempts, Created: sum.Created,
		Out: sum.Params[ParamOut]}
	t := s.jobs[sum.ID]
	if t != nil {
		js.InFlight = len(t.live)
		end := time.Now()
		if t.ended {
			end = t.endedAt
		}
		js.WallMS = float64(end.Sub(t.started).Microseconds()) / 1000
	}
	switch {
	case sum.Finished():
		js.State = StoredState(sum)
	case t != nil && !t.ended:
		js.State = StateRunning
	case t != nil:
		// The actors finished the job but the store does not say so: a
		// write of its outcome failed.
		js.State, js.Error = StateFailed, "the job ended but the store did not record every outcome"
	default:
		js.State, js.Error = StateUnfinished, s.refused[sum.ID]
	}
	if t != nil && t.err != "" {
		js.Error = t.err
	}
	return js
}

// StoredState is job sum's state as the store alone tells it: StateDone,
// StateCancelled, StateFailed, or StateUnfinished (the store does not know
// whether a process runs it).
func StoredState(sum store.JobSummary) string {
	switch {
	case sum.Done():
		return StateDone
	case sum.Finished() && sum.Cancelled > 0:
		return StateCancelled
	case sum.Finished():
		return StateFailed
	}
	return StateUnfinished
}

// Wait blocks until job id is done or failed and returns its status. It
// returns early with ctx's error, with ErrClosed when the service stops
// first, and with ErrNotRunning for an unfinished job this service is not
// proving.
func (s *Service) Wait(ctx context.Context, id string) (JobStatus, error) {
	s.mu.Lock()
	t := s.jobs[id]
	s.mu.Unlock()
	if t == nil {
		js, err := s.Status(id)
		if err != nil {
			return JobStatus{}, err
		}
		if js.State == StateUnfinished {
			why := ""
			if js.Error != "" {
				why = ": " + js.Error
			}
			return js, fmt.Errorf("wait for job %s: %w in this service%s", id, ErrNotRunning, why)
		}
		return js, nil
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return JobStatus{}, fmt.Errorf("wait for job %s: %w", id, ctx.Err())
	case <-s.closing:
		return JobStatus{}, fmt.Errorf("wait for job %s: %w", id, ErrClosed)
	}
	return s.Status(id)
}

// Close stops the service: Submit fails with ErrClosed from now on, Wait
// returns, the actors stop and start no new stage, and Close waits (until
// ctx ends) for the stages already running to return. A partition whose
// finalize returns in that time is recorded proved; every other partition
// stays unfinished in the store for the next Resume, which proves it from
// the start. The store is left open for the caller to close.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	s.mu.Unlock()
	// A submission in progress completes (or fails) before the actors stop.
	s.submitMu.Lock()
	defer s.submitMu.Unlock()
	// The actors stop before the stages are cancelled: a stage that fails
	// for the cancellation must not reach a scheduler that would count it
	// against the partition's attempts.
	s.engine.Stop()
	s.cancelStages()
	if err := s.exec.drain(ctx); err != nil {
		return fmt.Errorf("close service: %w", err)
	}
	return nil
}

// Cancel stops job id. If this service is running it, its queued partitions
// are given up at once and those in flight at their next stage (one that
// finishes its proof first stays proved); Wait then returns the job in state
// cancelled. An unfinished job of the store that this service is not running
// has its partitions not yet proved recorded cancelled, so that no resume
// takes it up. A job that has finished fails with ErrFinished; one not in the
// store, with an error wrapping store.ErrNotFound.
func (s *Service) Cancel(id string) error {
	s.submitMu.Lock()
	defer s.submitMu.Unlock()
	s.mu.Lock()
	t := s.jobs[id]
	running := t != nil && !t.ended
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return fmt.Errorf("cancel job %s: %w", id, ErrClosed)
	}
	if running && t.cluster {
		if err := s.opt.Cluster.Cancel(id); err != nil {
			return fmt.Errorf("cancel job %s: %w", id, err)
		}
		return nil
	}
	if running {
		s.exec.Cancel(id)
		if err := s.engine.Cancel(id); err != nil {
			return fmt.Errorf("cancel job %s: %w", id, err)
		}
		return nil
	}
	sum, err := s.st.Summary(id)
	if err != nil {
		return fmt.Errorf("cancel job %s: %w", id, err)
	}
	if sum.Finished() {
		return fmt.Errorf("cancel job %s: %w", id, ErrFinished)
	}
	parts, err := s.st.Partitions(id)
	if err != nil {
		return fmt.Errorf("cancel job %s: %w", id, err)
	}
	for _, p := range parts {
		if p.State.Final() {
			continue
		}
		if err := s.st.Cancel(id, p.Index); err != nil {
			return fmt.Errorf("cancel job %s: %w", id, err)
		}
	}
	return nil
}

// Forget removes finished job id from the service and from its store, with
// its proofs: for the jobs whose results live elsewhere once read (a cluster
// member's one-partition lease jobs, whose proofs go to the job's owner), so
// that a service that runs for months does not keep them. A job still
// running or unfinished in the store is refused (ErrBusy, or the store's
// ErrTransition). It returns the job's status as it was forgotten: no
// submission or retry comes between the two.
func (s *Service) Forget(id string) (JobStatus, error) {
	s.submitMu.Lock()
	defer s.submitMu.Unlock()
	s.mu.Lock()
	t := s.jobs[id]
	if t != nil && !t.ended {
		s.mu.Unlock()
		return JobStatus{}, fmt.Errorf("forget job %s: %w", id, ErrBusy)
	}
	s.mu.Unlock()
	js, err := s.Status(id)
	if err != nil {
		return JobStatus{}, fmt.Errorf("forget job %s: %w", id, err)
	}
	if err := s.st.DeleteJob(id); err != nil {
		return JobStatus{}, fmt.Errorf("forget job %s: %w", id, err)
	}
	s.mu.Lock()
	delete(s.jobs, id)
	delete(s.outs, id)
	delete(s.refused, id)
	s.mu.Unlock()
	return js, nil
}

// ForgetEnded forgets, as Forget does, every finished job (each partition
// proved, failed or cancelled) whose records were last written before cutoff,
// and returns their ids, oldest first: a daemon's retention of ended jobs. A
// job that a Retry has reopened or is running since is left; another failure
// is joined to the error and the sweep goes on.
func (s *Service) ForgetEnded(cutoff time.Time) ([]string, error) {
	sums, err := s.st.Jobs()
	if err != nil {
		return nil, fmt.Errorf("forget ended jobs: %w", err)
	}
	var forgot []string
	var errs []error
	for _, sum := range sums {
		if !sum.Finished() || !sum.Updated.Before(cutoff) {
			continue
		}
		switch _, err := s.Forget(sum.ID); {
		case err == nil:
			forgot = append(forgot, sum.ID)
		case errors.Is(err, ErrBusy), errors.Is(err, store.ErrTransition), errors.Is(err, store.ErrNotFound):
			// Retried (running, or reopened) or forgotten since the listing.
		default:
			errs = append(errs, err)
		}
	}
	return forgot, errors.Join(errs...)
}

// InFlight returns the jobs this service is running, sorted.
func (s *Service) InFlight() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, t := range s.jobs {
		if !t.ended {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// serviceJournal is the service's Journal: the store's, with two duties of
// the service added. A proved partition's files go to its job's directory
// before the proof is recorded; and once the service is closing, no
// partition is recorded failed: its attempt may have failed only because its
// stage was cancelled, and the next Resume proves it.
type serviceJournal struct {
	*StoreJournal
	s *Service
}

func (j *serviceJournal) RecordFailed(p actors.PartitionID, reason string) error {
	j.s.mu.Lock()
	closed := j.s.closed
	j.s.mu.Unlock()
	if closed {
		return fmt.Errorf("%s not recorded failed (%s): %w", p, reason, ErrClosed)
	}
	return j.StoreJournal.RecordFailed(p, reason)
}

func (j *serviceJournal) PartitionProved(p actors.PartitionID, proof, public []byte, t prover.Timings) error {
	j.s.mu.Lock()
	out := j.s.outs[p.Job]
	j.s.mu.Unlock()
	if out != "" {
		if err := WriteProof(out, p.Partition, proof, public); err != nil {
			return err
		}
	}
	return j.StoreJournal.PartitionProved(p, proof, public, t)
}

// Run submits subs, waits until each has ended and returns their statuses, in
// the order of subs. When ctx ends first it closes the service (the stages
// running are cancelled; what is not proved stays in the store for Resume,
// after drain at most for the stages to return) and returns the statuses
// so far with ctx's error.
func (s *Service) Run(ctx context.Context, subs []Submission, drain time.Duration) ([]JobStatus, error) {
	for _, sub := range subs {
		var err error
		if sub.Pending != nil {
			// A resumed job: recorded already.
			s.submitMu.Lock()
			err = s.start(sub)
			s.submitMu.Unlock()
		} else {
			err = s.Submit(sub)
		}
		if err != nil {
			return nil, err
		}
	}
	out := make([]JobStatus, len(subs))
	for i, sub := range subs {
		js, err := s.Wait(ctx, sub.ID)
		if err != nil && ctx.Err() != nil {
			dctx, cancel := context.WithTimeout(context.Background(), drain)
			defer cancel()
			cerr := s.Close(dctx)
			for j := range subs {
				out[j], _ = s.Status(subs[j].ID)
			}
			return out, errors.Join(fmt.Errorf("job %s: %w", sub.ID, ctx.Err()), cerr)
		}
		if err != nil {
			return nil, err
		}
		out[i] = js
	}
	return out, nil
}

// startEngine starts the actors on devices with the wall-clock runtime over
// exec, its stages run with ctx; own sees the events first, then extra (if
// any).
func startEngine(ctx context.Context, exec actors.Executor, devices []gpu.Device, cfg actors.Config, own, extra actors.Observer, seed uint64) (*actors.Engine, error) {
	obs := actors.Observers{own}
	if extra != nil {
		obs = append(obs, extra)
	}
	cfg.Observer = obs
	infos := make([]gpu.Info, len(devices))
	for i, d := range devices {
		infos[i] = d.Info()
	}
	return actors.Start(NewRuntime(ctx, exec, devices, seed), infos, cfg)
}

// errStopping fails stage work that would start after Close.
var errStopping = errors.New("service stopping: stage not started")

// drainExecutor counts the stage work running, so that Close can wait for
// it, and refuses new work once draining. The actors are stopped first, but
// protoactor stops them asynchronously: a completion already in a worker's
// mailbox can still start a next stage, which is refused here.
type drainExecutor struct {
	*Executor
	mu       sync.Mutex
	stopping bool
	running  sync.WaitGroup
}

func (d *drainExecutor) enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		return false
	}
	d.running.Add(1)
	return true
}

// RunStage implements actors.Executor.
func (d *drainExecutor) RunStage(ctx context.Context, w actors.StageWork) error {
	if !d.enter() {
		return errStopping
	}
	defer d.running.Done()
	return d.Executor.RunStage(ctx, w)
}

// Enter implements prover.Guard: device work starts unless the service is
// stopping.
func (d *drainExecutor) Enter() error {
	if !d.enter() {
		return errStopping
	}
	return nil
}

// Exit implements prover.Guard.
func (d *drainExecutor) Exit() { d.running.Done() }

func (d *drainExecutor) drain(ctx context.Context) error {
	d.mu.Lock()
	d.stopping = true
	d.mu.Unlock()
	idle := make(chan struct{})
	go func() {
		d.running.Wait()
		close(idle)
	}()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stages still running: %w", ctx.Err())
	}
}

// lockedReader lets concurrent finalizes share a reader that is not safe for
// concurrent use.
type lockedReader struct {
	mu sync.Mutex
	r  io.Reader
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}
