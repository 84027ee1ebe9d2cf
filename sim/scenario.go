package sim

import (
	"embed"
	"fmt"
	"math"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/prover"
)

//go:embed scenarios/*.json
var scenarioFS embed.FS

// Scenario is one simulation input: the machine (devices, their memory, the
// cost profile), the engine's configuration (design, workers, pool policy),
// the jobs and when they arrive, the faults to inject, and the seed.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Profile     string `json:"profile"`
	Seed        uint64 `json:"seed"`
	Devices     int    `json:"devices"`
	// VRAMGiB overrides the profile's device memory when positive.
	VRAMGiB float64 `json:"vram_gib,omitempty"`
	// ResidentGiB is device memory taken before the designs start, outside
	// the pool (resident keys, chunk buffers, tables, a --vram-limit
	// ballast): cudaMemGetInfo never counts it free. Default 0.
	ResidentGiB float64 `json:"resident_gib,omitempty"`
	// HeadroomGiB is memory the designs' ledger leaves to what allocates
	// behind its back (a kernel's pool scratch): the devices report
	// vram − resident − headroom as theirs (gpu.Info.Total). Default 0.
	HeadroomGiB      float64 `json:"headroom_gib,omitempty"`
	Design           string  `json:"design"`
	WorkersPerDevice int     `json:"workers_per_device"`
	MaxAttempts      int     `json:"max_attempts,omitempty"`
	// StagesBefore and StagesAfter are the CPU stages a worker runs before
	// and after the device part, by name (actors.Config.Before and After);
	// default synthesize, prep and b_g2, finalize. A stage left out is not
	// charged (cuzk synthesizes in a pipeline of its own).
	StagesBefore []string `json:"stages_before,omitempty"`
	StagesAfter  []string `json:"stages_after,omitempty"`
	// RetryBackoffMS is actors.Config.RetryBackoff in milliseconds.
	RetryBackoffMS float64 `json:"retry_backoff_ms,omitempty"`
	// HostMemLimitGiB turns on synthesis ahead of the GPU under this much
	// host memory (actors.Config.HostMemLimit); 0 keeps each worker
	// synthesizing its own partition.
	HostMemLimitGiB float64 `json:"host_mem_limit_gib,omitempty"`
	// SynthWorkers is actors.Config.SynthWorkers: partitions synthesized at
	// once under the gate (0: one per GPU worker).
	SynthWorkers int `json:"synth_workers,omitempty"`
	// LockHops is actors.Config.LockHops: every lease through its lock
	// actor, a free mutex's too, as the runtime took them before free
	// mutexes were taken in place.
	LockHops bool          `json:"lock_hops,omitempty"`
	Pool     *PoolConfig   `json:"pool,omitempty"`
	Jobs     []JobConfig   `json:"jobs"`
	Faults   []FaultConfig `json:"faults,omitempty"`
	// MaxTimeS bounds the virtual time of a run (default one day); a run that
	// reaches it reports the work left undone.
	MaxTimeS float64 `json:"max_time_s,omitempty"`

	profile *Profile
	source  string
}

// PoolConfig is the scenario's view of gpu.PoolPolicy.
type PoolConfig struct {
	// ReuseAcrossStreams defaults to CUDA's default, on.
	ReuseAcrossStreams *bool `json:"reuse_across_streams,omitempty"`
	// ReleaseThresholdGiB defaults to keeping everything, as cuzk configures it.
	ReleaseThresholdGiB *float64 `json:"release_threshold_gib,omitempty"`
}

// JobConfig describes Count jobs of the same shape, the i-th submitted at
// SubmitAtMs + i·EveryMs.
type JobConfig struct {
	ID         string  `json:"id"`
	Count      int     `json:"count,omitempty"`
	Partitions int     `json:"partitions"`
	Size       int     `json:"size,omitempty"` // constraints per partition; default the profile's reference
	Priority   string  `json:"priority,omitempty"`
	SubmitAtMs float64 `json:"submit_at_ms,omitempty"`
	EveryMs    float64 `json:"every_ms,omitempty"`
	// HostGiB is the host memory one partition holds under the host-memory
	// gate (actors.JobSpec.HostBytes); default prover.HostBytes of the
	// partition's size, with as many wires as constraints.
	HostGiB float64 `json:"host_gib,omitempty"`
	// DeclareScratch submits the job with its kernels' scratch declared
	// (actors.JobSpec.Scratch: the profile's), as `cuzk bench contention
	// --scratch` does, so that the budget ledger keeps room for one. Without
	// it the job declares none, as `cuzk prove` does (its backend keeps the
	// MSM scratch outside the designs' memory, which a scenario says with
	// headroom_gib), and the kernels take the profile's scratch from the pool
	// behind the ledger's back.
	DeclareScratch bool `json:"declare_scratch,omitempty"`
}

// FaultConfig is one injected fault.
//
//	worker_crash:  the CPU stage that worker Worker of device Device is running
//	               at AtMs (or its next one) fails, as if the worker had died
//	               under it; the actors clean up and retry the partition.
//	oom:           the next allocation on Device after AtMs fails with
//	               out-of-memory, whatever is free.
//	process_crash: the whole process dies at AtMs, losing everything in flight
//	               and in device memory; after RestartAfterMs it restarts and
//	               resumes from the journal with only unproved partitions pending.
//	               One that comes while the process is down does nothing.
type FaultConfig struct {
	Kind           string  `json:"kind"`
	AtMs           float64 `json:"at_ms"`
	Device         int     `json:"device,omitempty"`
	Worker         int     `json:"worker,omitempty"`
	RestartAfterMs float64 `json:"restart_after_ms,omitempty"`
}

// LoadScenario reads a scenario by embedded name (e.g. "phase9") or file path,
// and the profile it names.
func LoadScenario(nameOrPath string) (*Scenario, error) {
	data, src, err := readNamed(scenarioFS, "scenarios", nameOrPath)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", nameOrPath, err)
	}
	return ParseScenario(src, data)
}

// ScenarioNames lists the embedded scenarios.
func ScenarioNames() []string { return embeddedNames(scenarioFS, "scenarios") }

// ParseScenario decodes and validates a scenario and loads its profile; src
// names the scenario in errors.
func ParseScenario(src string, data []byte) (*Scenario, error) {
	var s Scenario
	if err := decodeStrict(data, &s); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", src, err)
	}
	s.source = src
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", src, err)
	}
	if s.Profile == "" {
		s.Profile = "seed-16g"
	}
	p, err := LoadProfile(s.Profile)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: field profile: %w", src, err)
	}
	return s.with(src, p)
}

// NewScenario returns s with profile p in place of the one it names (a
// scenario built in code, on a profile made or changed in code), validated
// as ParseScenario validates a file.
func NewScenario(s Scenario, p *Profile) (*Scenario, error) {
	src := s.Name
	if src == "" {
		src = "(built)"
	}
	s.source = src
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", src, err)
	}
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: profile %s: %w", src, p.Name, err)
	}
	if s.Profile == "" {
		s.Profile = p.Name
	}
	return s.with(src, p)
}

// PartitionSize is the constraints of every job's partitions where the jobs
// name one size, else 0 (no job, a job of the profile's reference size, or
// jobs of several sizes).
func (s Scenario) PartitionSize() int {
	n := 0
	for _, j := range s.Jobs {
		if j.Size <= 0 || (n > 0 && j.Size != n) {
			return 0
		}
		n = j.Size
	}
	return n
}

// with attaches profile p to s and checks that the device's memory leaves
// room to the designs.
func (s Scenario) with(src string, p *Profile) (*Scenario, error) {
	s.profile = p
	vram := p.Device.VRAMGiB
	if s.VRAMGiB > 0 {
		vram = s.VRAMGiB
	}
	if s.ResidentGiB+s.HeadroomGiB+p.Device.ContextMiB/1024 >= vram {
		return nil, fmt.Errorf("scenario %s: fields resident_gib and headroom_gib: %g and %g GiB leave nothing of %g GiB to the designs",
			src, s.ResidentGiB, s.HeadroomGiB, vram)
	}
	return &s, nil
}

// maxPartitions is the most partitions a job has, as the store, the CLI and
// the daemon accept.
const maxPartitions = 100000

func (s *Scenario) validate() error {
	if s.Devices < 1 {
		return fmt.Errorf("field devices: must be at least 1, got %d", s.Devices)
	}
	if s.VRAMGiB < 0 || math.IsNaN(s.VRAMGiB) {
		return fmt.Errorf("field vram_gib: must be positive, got %g", s.VRAMGiB)
	}
	if s.ResidentGiB < 0 || math.IsNaN(s.ResidentGiB) || s.HeadroomGiB < 0 || math.IsNaN(s.HeadroomGiB) {
		return fmt.Errorf("fields resident_gib and headroom_gib: must be non-negative, got %g and %g", s.ResidentGiB, s.HeadroomGiB)
	}
	if s.WorkersPerDevice < 0 {
		return fmt.Errorf("field workers_per_device: must be at least 1, got %d", s.WorkersPerDevice)
	}
	if s.MaxAttempts < 0 {
		return fmt.Errorf("field max_attempts: must be at least 1, got %d", s.MaxAttempts)
	}
	if s.RetryBackoffMS < 0 {
		return fmt.Errorf("field retry_backoff_ms: must not be negative, got %g", s.RetryBackoffMS)
	}
	if s.MaxTimeS < 0 {
		return fmt.Errorf("field max_time_s: must be positive, got %g", s.MaxTimeS)
	}
	if s.HostMemLimitGiB < 0 || math.IsNaN(s.HostMemLimitGiB) {
		return fmt.Errorf("field host_mem_limit_gib: must be 0 (no gate) or positive, got %g", s.HostMemLimitGiB)
	}
	if s.SynthWorkers < 0 {
		return fmt.Errorf("field synth_workers: must be 0 (one per GPU worker) or positive, got %d", s.SynthWorkers)
	}
	if s.Design != "" {
		if err := (actors.Config{Design: s.Design}).WithDefaults().Validate(); err != nil {
			return fmt.Errorf("field design: %w", err)
		}
	}
	if s.StagesBefore != nil || s.StagesAfter != nil {
		before, after, err := s.pipeline()
		if err != nil {
			return err
		}
		if err := (actors.Config{Before: before, After: after}).WithDefaults().Validate(); err != nil {
			return fmt.Errorf("fields stages_before, stages_after: %w", err)
		}
	}
	if s.Pool != nil && s.Pool.ReleaseThresholdGiB != nil && *s.Pool.ReleaseThresholdGiB < 0 {
		return fmt.Errorf("field pool.release_threshold_gib: must be non-negative, got %g", *s.Pool.ReleaseThresholdGiB)
	}
	if len(s.Jobs) == 0 {
		return fmt.Errorf("field jobs: at least one job is needed")
	}
	ids := map[string]bool{}
	for i, j := range s.Jobs {
		switch {
		case j.ID == "":
			return fmt.Errorf("field jobs[%d].id: missing", i)
		case ids[j.ID]:
			return fmt.Errorf("field jobs[%d].id: %q used twice", i, j.ID)
		case j.Partitions < 1 || j.Partitions > maxPartitions:
			return fmt.Errorf("field jobs[%d].partitions: must be 1 to %d, got %d", i, maxPartitions, j.Partitions)
		case j.Count < 0:
			return fmt.Errorf("field jobs[%d].count: must be at least 1, got %d", i, j.Count)
		case j.Size < 0:
			return fmt.Errorf("field jobs[%d].size: must be positive, got %d", i, j.Size)
		case j.SubmitAtMs < 0 || j.EveryMs < 0:
			return fmt.Errorf("field jobs[%d]: submit_at_ms and every_ms must be non-negative", i)
		case j.HostGiB < 0 || math.IsNaN(j.HostGiB):
			return fmt.Errorf("field jobs[%d].host_gib: must be positive, got %g", i, j.HostGiB)
		case s.HostMemLimitGiB > 0 && j.HostGiB > s.HostMemLimitGiB:
			return fmt.Errorf("field jobs[%d].host_gib: one partition holds %g GiB, more than host_mem_limit_gib, %g", i, j.HostGiB, s.HostMemLimitGiB)
		}
		ids[j.ID] = true
		if j.Priority != "" {
			if _, err := actors.ParsePriority(j.Priority); err != nil {
				return fmt.Errorf("field jobs[%d].priority: %w", i, err)
			}
		}
	}
	for i, f := range s.Faults {
		if f.AtMs < 0 {
			return fmt.Errorf("field faults[%d].at_ms: must be non-negative, got %g", i, f.AtMs)
		}
		switch f.Kind {
		case "worker_crash", "oom":
			if f.Device < 0 || f.Device >= s.Devices {
				return fmt.Errorf("field faults[%d].device: %d is not one of the %d devices", i, f.Device, s.Devices)
			}
			if f.Worker < 0 {
				return fmt.Errorf("field faults[%d].worker: must be non-negative, got %d", i, f.Worker)
			}
		case "process_crash":
			if f.RestartAfterMs < 0 {
				return fmt.Errorf("field faults[%d].restart_after_ms: must be non-negative, got %g", i, f.RestartAfterMs)
			}
		default:
			return fmt.Errorf("field faults[%d].kind: unknown fault %q (want worker_crash, oom or process_crash)", i, f.Kind)
		}
	}
	return nil
}

// pipeline reads the stage names of StagesBefore and StagesAfter; nil keeps
// the engine's default for either.
func (s *Scenario) pipeline() (before, after []actors.Stage, err error) {
	read := func(field string, names []string) ([]actors.Stage, error) {
		if names == nil {
			return nil, nil
		}
		out := []actors.Stage{}
		for _, n := range names {
			st, ok := stageByName(n)
			if !ok {
				return nil, fmt.Errorf("field %s: unknown stage %q (want synthesize, prep, b_g2 or finalize)", field, n)
			}
			out = append(out, st)
		}
		return out, nil
	}
	if before, err = read("stages_before", s.StagesBefore); err != nil {
		return nil, nil, err
	}
	after, err = read("stages_after", s.StagesAfter)
	return before, after, err
}

// Options override a scenario's settings for one run; zero values keep the
// scenario's.
type Options struct {
	Design  string
	Workers int
	Seed    *uint64
	VRAMGiB float64
	// Pool replaces the scenario's pool policy when set.
	Pool *gpu.PoolPolicy
	// RetryBackoff replaces the scenario's retry backoff when set.
	RetryBackoff *time.Duration
	// HostMemLimitGiB replaces the scenario's host_mem_limit_gib when set
	// (0: no gate); SynthWorkers its synth_workers when positive.
	HostMemLimitGiB *float64
	SynthWorkers    int
	// CPUOrder replaces the profile's host.cpu_order when set, CPUHold its
	// host.cpu_hold.
	CPUOrder string
	CPUHold  *int
	// LockHops sets actors.Config.LockHops (as the scenario's lock_hops).
	LockHops bool
	// Record keeps what a timeline needs (costs memory on long runs).
	Record bool
	// Observer, when set, also receives every event of the actors (a
	// trace.Writer for a Chrome trace in the production format).
	Observer actors.Observer
	// SeedDone, when set, is called as each seed's run of Seeds (and so of
	// CompareSeeds) ends, from the goroutine that ran it: a progress count
	// for runs of many seeds. It must be safe for concurrent use.
	SeedDone func()
}

// resolved is a scenario with its options applied and defaults filled in.
type resolved struct {
	name     string
	profile  *Profile
	seed     uint64
	devices  int
	vram     int64
	mem      DeviceMemory
	cfg      actors.Config
	jobs     []timedJob
	faults   []FaultConfig
	maxTime  time.Duration
	record   bool
	observer actors.Observer
}

type timedJob struct {
	at  time.Duration
	job actors.JobSpec
}

func (s *Scenario) resolve(o Options) (*resolved, error) {
	r := &resolved{name: s.Name, profile: s.profile, seed: s.Seed, devices: s.Devices, faults: s.Faults, record: o.Record, observer: o.Observer}
	if r.name == "" {
		r.name = s.source
	}
	if o.Seed != nil {
		r.seed = *o.Seed
	}
	if o.CPUOrder != "" || o.CPUHold != nil {
		p := *s.profile
		if o.CPUOrder != "" {
			p.Host.CPUOrder = o.CPUOrder
		}
		if o.CPUHold != nil {
			p.Host.CPUHold = *o.CPUHold
		}
		if err := p.validate(); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", r.name, err)
		}
		r.profile = &p
	}
	vramGiB := s.profile.Device.VRAMGiB
	if s.VRAMGiB > 0 {
		vramGiB = s.VRAMGiB
	}
	if o.VRAMGiB > 0 {
		vramGiB = o.VRAMGiB
	}
	r.vram = int64(vramGiB * float64(gib))
	r.mem = DeviceMemory{Resident: int64(s.ResidentGiB * float64(gib)), Headroom: int64(s.HeadroomGiB * float64(gib))}
	if left := r.vram - int64(s.profile.Device.ContextMiB*(1<<20)) - r.mem.Resident - r.mem.Headroom; left <= 0 {
		return nil, fmt.Errorf("scenario %s: %s of device memory leaves nothing to the designs after the context, %s resident and %s of headroom",
			r.name, gpu.FormatBytes(r.vram), gpu.FormatBytes(r.mem.Resident), gpu.FormatBytes(r.mem.Headroom))
	}
	pool := gpu.DefaultPoolPolicy()
	if s.Pool != nil {
		if s.Pool.ReuseAcrossStreams != nil {
			pool.ReuseAcrossStreams = *s.Pool.ReuseAcrossStreams
		}
		if s.Pool.ReleaseThresholdGiB != nil {
			pool.ReleaseThreshold = int64(*s.Pool.ReleaseThresholdGiB * float64(gib))
		}
	}
	if o.Pool != nil {
		pool = *o.Pool
	}
	before, after, err := s.pipeline()
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", r.name, err)
	}
	r.cfg = actors.Config{Design: s.Design, WorkersPerDevice: s.WorkersPerDevice, MaxAttempts: s.MaxAttempts, Pool: pool,
		RetryBackoff: time.Duration(s.RetryBackoffMS * float64(time.Millisecond)), Before: before, After: after,
		HostMemLimit: int64(s.HostMemLimitGiB * float64(gib)), SynthWorkers: s.SynthWorkers, LockHops: s.LockHops || o.LockHops}
	if o.Design != "" {
		r.cfg.Design = o.Design
	}
	if o.Workers > 0 {
		r.cfg.WorkersPerDevice = o.Workers
	}
	if o.RetryBackoff != nil {
		r.cfg.RetryBackoff = *o.RetryBackoff
	}
	if o.HostMemLimitGiB != nil {
		if !(*o.HostMemLimitGiB >= 0) {
			return nil, fmt.Errorf("scenario %s: host-memory limit %g GiB: must be 0 (no gate) or positive", r.name, *o.HostMemLimitGiB)
		}
		r.cfg.HostMemLimit = int64(*o.HostMemLimitGiB * float64(gib))
	}
	if o.SynthWorkers > 0 {
		r.cfg.SynthWorkers = o.SynthWorkers
	}
	r.cfg = r.cfg.WithDefaults()
	if err := r.cfg.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", r.name, err)
	}
	r.maxTime = 24 * time.Hour
	if s.MaxTimeS > 0 {
		r.maxTime = time.Duration(s.MaxTimeS * float64(time.Second))
	}
	for _, j := range s.Jobs {
		n := max(j.Count, 1)
		prio := actors.PriorityNormal
		if j.Priority != "" {
			prio, _ = actors.ParsePriority(j.Priority)
		}
		size := j.Size
		if size == 0 {
			size = s.profile.ReferenceConstraints
		}
		var scratch int64
		if j.DeclareScratch {
			scratch = s.profile.KernelScratch(size)
		}
		for i := 0; i < n; i++ {
			id := j.ID
			if n > 1 {
				id = fmt.Sprintf("%s-%d", j.ID, i+1)
			}
			r.jobs = append(r.jobs, timedJob{
				at: ms(j.SubmitAtMs + float64(i)*j.EveryMs),
				job: actors.JobSpec{ID: id, Partitions: j.Partitions, Size: size,
					VRAM: s.profile.PartitionVRAM(size), Copy: s.profile.PartitionCopy(size),
					Scratch: scratch, Priority: prio,
					HostBytes: partitionHostBytes(j.HostGiB, size)},
			})
		}
	}
	return r, nil
}

// partitionHostBytes is a job's host bytes per partition: hostGiB when the
// scenario gives it, else what prover.HostBytes says a partition of size
// constraints holds (its FFT domain the next power of two, as many wires as
// constraints).
func partitionHostBytes(hostGiB float64, size int) int64 {
	if hostGiB > 0 {
		return int64(hostGiB * float64(gib))
	}
	n := int64(1)
	for n < int64(size) {
		n <<= 1
	}
	return prover.HostBytes(n, int64(size))
}
