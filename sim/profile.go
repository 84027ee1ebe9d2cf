package sim

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cuzk/cuzk/actors"
)

//go:embed profiles/*.json
var profileFS embed.FS

const gib = int64(1) << 30

// Profile is the cost model of one machine: what each stage of a partition
// costs as a function of its size, and the device and host it runs on. The
// format leaves room for calibration from recorded traces (Calibration, and
// per-stage Source/Calibrated), which a later tool fills in; the simulator
// reads only the cost fields.
type Profile struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// ReferenceConstraints is the partition size the per-constraint costs were
	// measured at; sizes scale from it with each stage's exponent.
	ReferenceConstraints int `json:"reference_constraints"`
	// Jitter is the coefficient of variation of a stage's cost, drawn from
	// the scenario's seed (0: no variation), for the stages without their
	// own (StageProfile.Jitter).
	Jitter    float64                 `json:"jitter"`
	Host      HostProfile             `json:"host"`
	Device    DeviceProfile           `json:"device"`
	Partition PartitionProfile        `json:"partition"`
	Stages    map[string]StageProfile `json:"stages"`
	// Calibration records where fitted values came from; free-form for now.
	Calibration json.RawMessage `json:"calibration,omitempty"`
}

// HostProfile describes the host CPU.
type HostProfile struct {
	Cores int `json:"cores"`
	// Handoff, when set, orders the actors' messages as the production
	// runtime's scheduler does (handoff.go); nil: every message is handled
	// at once, depth first, in the order it is sent.
	Handoff *HandoffProfile `json:"handoff,omitempty"`
	// CPUOrder is how the host's cores are shared by the stages that run on
	// the cores' pool (synthesize and prep): "shared" (or empty) evenly among
	// all CPU stages, as goroutines of their own share them; "lanes" in the
	// order the partitions began their synthesis, each stage up to its
	// cores, as production's par.Lane gives them (see CPU).
	CPUOrder string `json:"cpu_order,omitempty"`
	// CPUHold, with cpu_order "lanes", is how many lanes production's hold
	// lets run (par.Hold: while no prepared partition waits for its
	// compute, the syntheses of the later partitions wait for the first
	// CPUHold lanes with work); 0: no hold, as production before it.
	CPUHold int `json:"cpu_hold,omitempty"`
	// CompletionLatency, when set, delays each device call's completion on
	// its way to the worker that made it, as the card's runtime does (a
	// blocking call's thread wakes, its goroutine is scheduled, the
	// message reaches the actor: the trace's late_us). nil: a completion
	// reaches its worker at the instant the call ends.
	CompletionLatency *CompletionLatencyProfile `json:"completion_latency,omitempty"`
}

// CompletionLatencyProfile is how long device calls' completions take to
// reach their workers, each drawn lognormally around its median.
// `cuzk sim calibrate --latency-trace` fits it from any trace of the
// production runtime on a device (one worker is enough).
type CompletionLatencyProfile struct {
	// Calls is the latency by call, named as traces name them
	// (stream_sync, device_sync, trim_pool, malloc_async, copy_in,
	// compute, ...); a call not named has none.
	Calls map[string]LatencyDist `json:"calls"`
	// Waited, when its median is above 0, replaces a device sync's latency
	// when the sync waited for another worker's work: the thread slept in
	// the call and wakes as a blocking stream sync's does (one worker's
	// device syncs never wait, so calibrate takes the stream syncs').
	Waited LatencyDist `json:"waited_device_sync,omitempty"`
	Source string      `json:"source,omitempty"`
}

// LatencyDist is a lognormal latency: its median in microseconds and the
// standard deviation of its logarithm.
type LatencyDist struct {
	P50Us float64 `json:"p50_us"`
	Sigma float64 `json:"sigma,omitempty"`
}

// CPU orders (HostProfile.CPUOrder).
const (
	CPUShared = "shared"
	CPULanes  = "lanes"
)

// HandoffProfile is the order in which actors woken by one handler run.
// In production each actor with mail runs on a goroutine of its own, and Go
// runs the goroutine made last on a processor first (its runnext slot),
// unless an idle processor steals an older one first.
type HandoffProfile struct {
	// NewestFirst is the share of choices where the actor woken last runs
	// first; otherwise the one woken earliest does. `cuzk sim calibrate`
	// fits it from one-worker traces: a worker that releases one lock and
	// asks for the next in one handler (split's mem then compute), and
	// which of the two lock actors took its message first. Only traces
	// made with lock hops (bench contention --lock-hops) have such pairs: by
	// default a worker takes a free mutex in place, and the base's value is
	// kept.
	NewestFirst float64 `json:"newest_first"`
	// LaterFirst is the share of choices where, of the actors two handlers
	// woke at one instant, those the later handler woke run first (0: always
	// in the handlers' order). One-worker runs have no such race between
	// workers; `cuzk sim calibrate --race-trace` fits it from split-devsync
	// runs of several workers on the card (the emulated device on the H200's
	// host did not race at all: the race needs the GPU's calls). That is the
	// card's share by time; the model draws it wherever two handlers'
	// wake-ups meet at one instant, more often than the card's ties, so the
	// base profile's value is fitted instead through the simulator to the
	// card's ties by outcome (docs/predictions/contention/deferred-trace:
	// 0.01, where the share by time was 0.029).
	LaterFirst float64 `json:"later_first,omitempty"`
	Source     string  `json:"source,omitempty"`
}

// DeviceProfile describes one GPU and the cost of its calls.
type DeviceProfile struct {
	Name               string  `json:"name"`
	VRAMGiB            float64 `json:"vram_gib"`
	ContextMiB         float64 `json:"context_mib"` // device memory the CUDA context itself holds
	PoolGrowthMsPerGiB float64 `json:"pool_growth_ms_per_gib"`
	// PoolGrowthMs is the host time of a cudaMallocAsync that grows the pool
	// past the largest size it has had, whatever the growth (the H200: about
	// 10 ms a call, docs/cuda-facts.md); PoolGrowthMsPerGiB adds to it.
	PoolGrowthMs float64 `json:"pool_growth_ms,omitempty"`
	// PoolRegrowthMs replaces both for a growth back to a size the pool had
	// before a trim, and PoolRegrowthMsPerGiB adds to it by the growth (the
	// H200: 6.2–9.2 ms to grow 6 GiB back, about 1.3 ms a GiB).
	PoolRegrowthMs       float64 `json:"pool_regrowth_ms,omitempty"`
	PoolRegrowthMsPerGiB float64 `json:"pool_regrowth_ms_per_gib,omitempty"`
	// PoolGrowthBallastMsPerGiB adds to every pool growth, first or back
	// after a trim, per GiB grown, on a device with less memory than
	// VRAMGiB: cuzk applies a VRAM limit by cudaMalloc'ing the rest of the
	// card at open (a ballast), and the pool's mapping work is slower with
	// it. The H200 under 16 GiB (124 GiB of ballast): a regrowth of 11 GiB
	// 25.1 ms against 16.7 on the whole card, of 6.5 GiB 12.2 against 7.5,
	// about 0.7 ms a GiB more; cudaMalloc and trims unchanged
	// (docs/simulator.md). `cuzk sim calibrate --ballast-trace` fits it from
	// one-worker traces made under a limit. 0: a limit costs nothing.
	PoolGrowthBallastMsPerGiB float64 `json:"pool_growth_ballast_ms_per_gib,omitempty"`
	// LimitShortfallMiB is how much less than a VRAM limit the card has
	// free once the ballast is allocated, on a device with less memory than
	// VRAMGiB: cudaMalloc of (free − limit) takes a little more than asked
	// (the H200 under 16 GiB: 0.9–2.9 MiB, docs/simulator.md), so a
	// partition that fits the limit exactly does not fit the card. `cuzk sim
	// calibrate --ballast-trace --ballast-limit` fits it from the free
	// bytes of a one-worker trace's cudaMemGetInfo calls. 0: none.
	LimitShortfallMiB float64 `json:"limit_shortfall_mib,omitempty"`
	H2DGBps           float64 `json:"h2d_gbps"`
	// CopyFIFO makes the copy engine serve host→device copies one at a
	// time in the order they were issued, whatever their streams, instead
	// of sharing it among them: the H200's did (four 4 GiB copies issued at
	// once by four workers ended 78 ms apart, at 90, 167, 244 and 322 ms,
	// not all together near 312; docs/cuda-facts.md). A free's work on the
	// engine then also delays the copies issued after it by all of itself.
	// false: copies share the engine (the profiles made before it).
	CopyFIFO          bool    `json:"copy_fifo,omitempty"`
	MallocMs          float64 `json:"malloc_ms"`
	MemInfoMs         float64 `json:"mem_info_ms"`
	HostAllocMsPerGiB float64 `json:"host_alloc_ms_per_gib"`
	HostAllocMs       float64 `json:"host_alloc_ms"` // fixed part of a pinned allocation
	// KernelSlowdownCopy stretches the kernels while a host→device copy runs
	// on the device's copy engine: for as long as one copy or more is on it,
	// every kernel advances at 1/(1+KernelSlowdownCopy) of its processor-shared
	// rate, so a kernel that overlaps copies for all of its run takes
	// 1+KernelSlowdownCopy times as long, one that overlaps none is unchanged.
	// It is `cuzk bench interference`'s copy row: slowdown − 1. 0: copies
	// never slow kernels.
	KernelSlowdownCopy float64 `json:"kernel_slowdown_copy,omitempty"`
	// KernelSlowdownCPU stretches the kernels by what the host's CPU stages
	// keep busy: every kernel advances at 1/(1+KernelSlowdownCPU·u), u the
	// cores the running CPU stages ask for over the host's cores (at most 1),
	// so a kernel that runs beside stages asking for every core takes
	// 1+KernelSlowdownCPU times as long. It is `cuzk bench interference`'s
	// cpu row (every core busy, u = 1): slowdown − 1. Both factors together
	// multiply. 0: CPU stages never slow kernels.
	KernelSlowdownCPU float64 `json:"kernel_slowdown_cpu,omitempty"`
	// FreeMsPerGiB is the host time a cudaFree takes per GiB it frees, once
	// its device-wide wait is over (the H200: 4–6 ms for 6 GiB, about
	// 0.9 ms for 1 GiB). 0: a free returns as soon as the device is idle.
	FreeMsPerGiB float64 `json:"free_ms_per_gib,omitempty"`
	// FreeCopyWorkMsPerGiB is the work a cudaFree leaves on the copy
	// engine when it returns, per GiB freed: the driver's release of the
	// pages, which host→device copies share the engine with. A copy that
	// starts while that work remains takes as much longer as the work
	// left (when the copy is the longer one); a copy made after it is
	// done is unchanged. The H200: 2.45 ms a GiB (a 1 GiB copy 1 ms after
	// freeing 6 GiB took 33.5 ms, after freeing 1 GiB 21.2, alone 19.5;
	// docs/cuda-facts.md). 0: a free leaves nothing behind.
	FreeCopyWorkMsPerGiB float64 `json:"free_copy_work_ms_per_gib,omitempty"`
	// TrimCopyWorkMsPerGiB is the same for cudaMemPoolTrimTo, per GiB it
	// released to the device, from the instant the trim starts: the host
	// call returns partway through that work (after trim_ms_per_gib a GiB,
	// longer beside a kernel), and the copies after it share the engine
	// with what is left. The H200: about 2.5 ms a GiB, as a free's (copies
	// made within 30 ms of a trim of 8-24 GiB ended their delay 2.49-2.64
	// ms a GiB after the trim began, whatever the trim's own host time,
	// in F16's and F25's grids; an H100 2.57-2.59, f29; docs/simulator.md,
	// "A trim's work on the copy engine"). 0: a trim leaves nothing.
	TrimCopyWorkMsPerGiB float64 `json:"trim_copy_work_ms_per_gib,omitempty"`
	// TrimMsPerGiB is the host time cudaMemPoolTrimTo takes per GiB it
	// releases to the device (the H200: 8–9 ms for about 7 GiB). 0: a
	// trim costs nothing.
	TrimMsPerGiB float64 `json:"trim_ms_per_gib,omitempty"`
	// PoolSlowdownKernel stretches the pool's mapping work while a kernel
	// runs on the device: a trim or a pool growth called then takes
	// 1+PoolSlowdownKernel times its host time. The H200: trims and growths
	// back beside another worker's kernel took 1.19–1.64 times the
	// one-worker figures (13 families' grids, median 1.35); an H100 1.25
	// (docs/simulator.md, "Both sides of the pool's work"). `cuzk sim
	// calibrate --beside-trace` fits it from traces of several workers
	// under a design that trims. 0: kernels never slow them.
	PoolSlowdownKernel float64 `json:"pool_slowdown_kernel,omitempty"`
	// KernelSlowdownPool is the other side of PoolSlowdownKernel: for as
	// long as the pool's mapping work (a trim that releases memory, a
	// growth) is in progress on the device, every kernel advances at
	// 1/(1+KernelSlowdownPool) of its rate, so a kernel beside d of such
	// work takes about KernelSlowdownPool·d longer. The H200: kernels beside
	// another worker's trims and growths back ran 0.06–0.11 ms longer a ms
	// of that work, those beside none as alone; an H100 0.32
	// (docs/simulator.md). `cuzk sim calibrate --beside-trace` fits it with
	// PoolSlowdownKernel. 0: pool work never slows kernels.
	KernelSlowdownPool float64 `json:"kernel_slowdown_pool,omitempty"`
	// StreamStall scales a streaming kernel's duty (partition.stream_gib):
	// while another host→device copy holds the copy engine, the kernel
	// advances at 1 − StreamStall·duty (at most all of its run stalled).
	// How much of its own streaming a kernel loses to another copy moves
	// with the machine (0.26-0.97 ms per ms of overlap on the H100s, against
	// the duty's 0.55; docs/simulator.md), and a one-worker calibration
	// never stages beside a kernel: `cuzk bench prove --copy-load` runs the
	// one-worker row again beside endless copies, and sim calibrate
	// --copies-trace fits it from that row's kernels against the --trace
	// row's (CalibrateStreamStall). Absent: 1, the whole duty.
	StreamStall *float64 `json:"stream_stall,omitempty"`
	// PoolOpsSerialize makes the stream-ordered pool do its mapping work
	// one call at a time, device-wide: a pool growth or a trim that
	// releases memory holds the pool for the host time it costs, and every
	// other pool call waits for it first — a cudaMallocAsync or a trim on
	// another thread, the scratch a kernel's host code allocates before
	// the kernel runs, and the return of that scratch when the kernel
	// ends, which holds the kernel's completion (and its stream) until
	// the pool is free. The H200: a 1 GiB growth took 12.5 ms beside a
	// 12 GiB one against 1.5-1.7 ms alone, and the contention grid's
	// kernels started and ended with other workers' trims and growths
	// (docs/cuda-facts.md). false: pool calls on different streams
	// overlap.
	PoolOpsSerialize bool `json:"pool_ops_serialize,omitempty"`
	// MallocWaitsFreeWork makes a cudaMalloc that needs bytes a cudaFree
	// gave back while that free's copy-engine work is still pending
	// (free_copy_work_ms_per_gib) wait for that work to end, oldest free
	// first, before it costs malloc_ms. An allocation that fits in memory
	// no pending free returned does not wait. The H200, F4 under 16 GiB:
	// a cudaMalloc of the 12 GiB another worker had just freed took
	// 33.9 ms against 3.75 ms idle, and 0.8 ms on the whole card
	// (docs/cuda-facts.md). false: a free's work only shares the copy
	// engine.
	MallocWaitsFreeWork bool `json:"malloc_waits_free_work,omitempty"`
	// ScratchOOMWaitsCopies makes a kernel whose scratch does not fit in
	// the pool return its failure only once the host→device copies in
	// progress as it starts (running or queued on the copy engine) have
	// ended. The H200 under 16 GiB: of 22 such failures in F9's and F18's
	// budget runs at 3-4 workers, 17 returned within 1 ms of the end of
	// the copies in progress at the kernel's start (48-156 ms after it),
	// the other 5 later, when copies begun just after it ended too; the
	// two cudaMallocAsyncs that failed before staging with copies in
	// progress returned in 0.4 ms (docs/cuda-facts.md). false: at once.
	ScratchOOMWaitsCopies bool `json:"scratch_oom_waits_copies,omitempty"`
	// ScratchOOMAtOnceAfterTrim limits scratch_oom_waits_copies to a pool
	// never trimmed: once any cudaMemPoolTrimTo has run on the device, a
	// kernel whose scratch does not fit returns its failure at once. The
	// H200 under 16 GiB, every such failure in the contention grids'
	// traces: under budget, whose pool is never trimmed, 38 of 38 waited
	// for the copies (87 ms); under split-devsync and split-first, which
	// trim before every pre-stage, 3 with a copy in progress returned in
	// 1.6-1.9 ms and 4 without one in 15.6-19.7 ms
	// (docs/runs/h200-2026-12-04). What the driver does differently the
	// traces do not say; this is the rule that separates the two.
	ScratchOOMAtOnceAfterTrim bool `json:"scratch_oom_at_once_after_trim,omitempty"`
	// StreamSyncWaitsPool, with pool_ops_serialize, makes a stream
	// synchronization made while the pool's mapping work is in progress
	// (another thread's trim or growth) return no earlier than that work
	// ends, even when its stream has nothing left to run. The H200 under
	// 16 GiB, split-devsync's traces: after a kernel's scratch did not
	// fit, the failing worker's next cudaStreamSynchronize returned with
	// the end of another worker's trim in progress when it was made in 9
	// of 10 cases (11-16 ms later), with a growth's in 1 of 1, and within
	// 1 ms in all 233 made while no pool call was in progress
	// (docs/runs/h200-2026-12-04e). The failing worker holds compute_mtx
	// until then; on the card the next kernel's scratch then came after
	// the trimming worker's cudaMemGetInfo and cudaMallocAsync. false: a
	// sync returns when its stream's work has run.
	StreamSyncWaitsPool bool `json:"stream_sync_waits_pool,omitempty"`
	// MallocFreeWaitMsPerGiB is, with malloc_waits_free_work, how long
	// after a cudaFree returned a cudaMalloc that needs its bytes waits at
	// the least, per GiB the free gave back: the free's bytes stay taken
	// until then or until its copy-engine work ends, whichever is later.
	// The H200 under 16 GiB: a malloc of the 8–12 GiB another worker had
	// just freed took 24–35 ms (about 3.2 ms a GiB freed), longer than the
	// 1.95–2.45 ms a GiB of copy-engine work the same frees left in front
	// of a copy (docs/cuda-facts.md). 0: the copy-engine work alone.
	MallocFreeWaitMsPerGiB float64 `json:"malloc_free_wait_ms_per_gib,omitempty"`
	Source                 string  `json:"source,omitempty"`
}

// PartitionProfile describes the device memory one partition holds.
type PartitionProfile struct {
	VRAMGiB  float64 `json:"vram_gib"`
	Exponent float64 `json:"exponent"`
	// CopyGiB is how much of VRAMGiB staging copies from the host, scaled
	// like it; 0: all of it.
	CopyGiB float64 `json:"copy_gib,omitempty"`
	// StagesAlone says that copy_gib is what staging copies only while no
	// kernel runs on the device: the prover stages a partition's a alone
	// then and its compute copies the rest on a copy stream beside its own
	// NTTs, while beside another partition's kernel staging copies all of
	// vram_gib (gpuprove's stagesAlone). The model does the same: a copy
	// made while a kernel runs moves the whole buffer, and a partition staged
	// alone puts the rest on the copy engine as its kernel starts, as work
	// beside the copies (its own kernel's time already holds it: the
	// one-worker traces that fit the compute stage staged every partition
	// alone). sim calibrate sets it from a trace whose copies moved less
	// than they staged.
	StagesAlone bool `json:"stages_alone,omitempty"`
	// ScratchGiB is device memory the compute kernel takes from the
	// stream-ordered pool while it runs (an MSM's sort buffers and buckets),
	// at the reference size, scaled like VRAMGiB; 0: none.
	ScratchGiB float64 `json:"scratch_gib,omitempty"`
	// StreamGiB is what the compute kernel itself copies host→device through
	// the copy engine as it runs, at the reference size, scaled like
	// vram_gib: the key points a plan keeps pinned on the host and streams
	// into its chunk buffers (the 2^26 plan under a VRAM limit: 28.06 GiB a
	// partition). For the share of its run that streaming takes alone (its
	// copy work at h2d_gbps over its time, at most all of it) a kernel needs
	// the engine, so while another host→device copy holds it (a partition
	// staged beside the kernel) the kernel advances at 1 − that share: the
	// stall a staging copy puts into its chunk copies. The kernel's fitted
	// time already holds the streaming itself. 0: the keys are resident.
	StreamGiB float64 `json:"stream_gib,omitempty"`
}

// StageProfile is the cost of one stage: base_ms + per_constraint_ns·R·(n/R)^exponent
// for a partition of n constraints, R the reference size. Cores and
// MemBWShare feed the CPU model (unused for the GPU's compute stage).
type StageProfile struct {
	BaseMs          float64 `json:"base_ms"`
	PerConstraintNs float64 `json:"per_constraint_ns"`
	Exponent        float64 `json:"exponent"`
	Cores           float64 `json:"cores,omitempty"`
	MemBWShare      float64 `json:"mem_bw_share,omitempty"`
	// Jitter, when set, is this stage's own coefficient of variation, which
	// the calibration reads from its spans: stages vary by different shares
	// (the contention bench's timed CPU stages by 0.05 %, its kernels by
	// 1-9 %). Absent: the profile's jitter.
	Jitter *float64 `json:"jitter,omitempty"`
	// Calibrated is false while the numbers are estimates, true once fitted
	// from recorded traces; Source says where they came from.
	Calibrated bool               `json:"calibrated"`
	Source     string             `json:"source,omitempty"`
	Phases     map[string]float64 `json:"phases_ms,omitempty"` // informational split at the reference size
}

// cpuStages are the stages the CPU model runs; compute runs on the device.
var cpuStages = []actors.Stage{actors.StageSynthesize, actors.StagePrep, actors.StageBG2, actors.StageFinalize}

// LoadProfile reads a profile by embedded name (e.g. "seed-16g") or file path.
func LoadProfile(nameOrPath string) (*Profile, error) {
	data, src, err := readNamed(profileFS, "profiles", nameOrPath)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", nameOrPath, err)
	}
	return ParseProfile(src, data)
}

// ProfileNames lists the embedded profiles.
func ProfileNames() []string { return embeddedNames(profileFS, "profiles") }

// ParseProfile decodes and validates a profile; src names it in errors.
func ParseProfile(src string, data []byte) (*Profile, error) {
	var p Profile
	if err := decodeStrict(data, &p); err != nil {
		return nil, fmt.Errorf("profile %s: %w", src, err)
	}
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("profile %s: %w", src, err)
	}
	return &p, nil
}

func (p *Profile) validate() error {
	if p.ReferenceConstraints <= 0 {
		return fmt.Errorf("field reference_constraints: must be positive, got %d", p.ReferenceConstraints)
	}
	if p.Jitter < 0 || p.Jitter > 0.5 {
		return fmt.Errorf("field jitter: must be in [0, 0.5], got %g", p.Jitter)
	}
	for _, st := range slices.Sorted(maps.Keys(p.Stages)) {
		if j := p.Stages[st].Jitter; j != nil && (math.IsNaN(*j) || *j < 0 || *j > 0.5) {
			return fmt.Errorf("field stages.%s.jitter: must be in [0, 0.5], got %g", st, *j)
		}
	}
	if p.Host.Cores <= 0 {
		return fmt.Errorf("field host.cores: must be positive, got %d", p.Host.Cores)
	}
	if p.Host.CPUHold < 0 || (p.Host.CPUHold > 0 && p.Host.CPUOrder != CPULanes) {
		return fmt.Errorf("field host.cpu_hold: %d, want 0, or more with cpu_order %q", p.Host.CPUHold, CPULanes)
	}
	switch p.Host.CPUOrder {
	case "", CPUShared, CPULanes:
	default:
		return fmt.Errorf("field host.cpu_order: %q, want %q or %q", p.Host.CPUOrder, CPUShared, CPULanes)
	}
	if h := p.Host.Handoff; h != nil && (math.IsNaN(h.NewestFirst) || h.NewestFirst < 0 || h.NewestFirst > 1) {
		return fmt.Errorf("field host.handoff.newest_first: must be in [0, 1], got %g", h.NewestFirst)
	}
	if h := p.Host.Handoff; h != nil && (math.IsNaN(h.LaterFirst) || h.LaterFirst < 0 || h.LaterFirst > 1) {
		return fmt.Errorf("field host.handoff.later_first: must be in [0, 1], got %g", h.LaterFirst)
	}
	if l := p.Host.CompletionLatency; l != nil {
		check := func(field string, d LatencyDist) error {
			if math.IsNaN(d.P50Us) || d.P50Us < 0 || math.IsNaN(d.Sigma) || d.Sigma < 0 || d.Sigma > 3 {
				return fmt.Errorf("field host.completion_latency.%s: p50_us must be non-negative and sigma in [0, 3], got %g and %g", field, d.P50Us, d.Sigma)
			}
			return nil
		}
		for _, name := range slices.Sorted(maps.Keys(l.Calls)) {
			if err := check("calls."+name, l.Calls[name]); err != nil {
				return err
			}
		}
		if err := check("waited_device_sync", l.Waited); err != nil {
			return err
		}
	}
	d := p.Device
	for _, f := range []struct {
		name string
		v    float64
		pos  bool
	}{
		{"device.vram_gib", d.VRAMGiB, true}, {"device.h2d_gbps", d.H2DGBps, true},
		{"device.pool_growth_ms_per_gib", d.PoolGrowthMsPerGiB, false}, {"device.malloc_ms", d.MallocMs, false},
		{"device.mem_info_ms", d.MemInfoMs, false}, {"device.host_alloc_ms_per_gib", d.HostAllocMsPerGiB, false},
		{"device.host_alloc_ms", d.HostAllocMs, false}, {"device.context_mib", d.ContextMiB, false},
		{"partition.vram_gib", p.Partition.VRAMGiB, true}, {"partition.scratch_gib", p.Partition.ScratchGiB, false},
		{"partition.copy_gib", p.Partition.CopyGiB, false}, {"partition.stream_gib", p.Partition.StreamGiB, false},
		{"device.pool_growth_ms", d.PoolGrowthMs, false}, {"device.pool_regrowth_ms", d.PoolRegrowthMs, false},
		{"device.kernel_slowdown_copy", d.KernelSlowdownCopy, false}, {"device.kernel_slowdown_cpu", d.KernelSlowdownCPU, false},
		{"device.free_ms_per_gib", d.FreeMsPerGiB, false}, {"device.free_copy_work_ms_per_gib", d.FreeCopyWorkMsPerGiB, false},
		{"device.trim_copy_work_ms_per_gib", d.TrimCopyWorkMsPerGiB, false},
		{"device.malloc_free_wait_ms_per_gib", d.MallocFreeWaitMsPerGiB, false},
		{"device.trim_ms_per_gib", d.TrimMsPerGiB, false}, {"device.pool_regrowth_ms_per_gib", d.PoolRegrowthMsPerGiB, false},
		{"device.pool_growth_ballast_ms_per_gib", d.PoolGrowthBallastMsPerGiB, false},
		{"device.pool_slowdown_kernel", d.PoolSlowdownKernel, false}, {"device.kernel_slowdown_pool", d.KernelSlowdownPool, false},
		{"device.limit_shortfall_mib", d.LimitShortfallMiB, false},
	} {
		if math.IsNaN(f.v) || f.v < 0 || (f.pos && f.v == 0) {
			return fmt.Errorf("field %s: must be %s, got %g", f.name, map[bool]string{true: "positive", false: "non-negative"}[f.pos], f.v)
		}
	}
	if st := d.StreamStall; st != nil && (math.IsNaN(*st) || math.IsInf(*st, 0) || *st < 0) {
		return fmt.Errorf("field device.stream_stall: must be non-negative, got %g", *st)
	}
	if d.ContextMiB/1024 >= d.VRAMGiB {
		return fmt.Errorf("field device.context_mib: %g MiB leaves no memory on a %g GiB device", d.ContextMiB, d.VRAMGiB)
	}
	for _, st := range append(cpuStages, actors.StageCompute) {
		sp, ok := p.Stages[st.String()]
		if !ok {
			return fmt.Errorf("field stages.%s: missing", st)
		}
		if sp.BaseMs < 0 || sp.PerConstraintNs < 0 || sp.Exponent < 0 || sp.MemBWShare < 0 || sp.MemBWShare > 1 || sp.Cores < 0 {
			return fmt.Errorf("field stages.%s: base_ms, per_constraint_ns, exponent and cores must be non-negative and mem_bw_share in [0, 1]", st)
		}
	}
	for name := range p.Stages {
		if _, ok := stageByName(name); !ok {
			return fmt.Errorf("field stages.%s: unknown stage (want synthesize, prep, compute, b_g2 or finalize)", name)
		}
	}
	return nil
}

func stageByName(name string) (actors.Stage, bool) {
	for _, st := range append(cpuStages, actors.StageCompute, actors.StageStage) {
		if st.String() == name {
			return st, true
		}
	}
	return 0, false
}

// StageCost is the solo cost of stage st for a partition of size constraints
// (the reference size when size is 0).
func (p *Profile) StageCost(st actors.Stage, size int) (time.Duration, error) {
	return p.stageCost(st, size)
}

func (p *Profile) stageCost(st actors.Stage, size int) (time.Duration, error) {
	sp, ok := p.Stages[st.String()]
	if !ok {
		if st == actors.StageStage {
			return 0, nil // staging is device work; its time comes from the device model
		}
		return 0, fmt.Errorf("profile %s has no cost for stage %s", p.Name, st)
	}
	if size <= 0 {
		size = p.ReferenceConstraints
	}
	ref := float64(p.ReferenceConstraints)
	exp := sp.Exponent
	if exp == 0 {
		exp = 1
	}
	ms := sp.BaseMs + sp.PerConstraintNs*ref*math.Pow(float64(size)/ref, exp)*1e-6
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// PartitionVRAM is the device memory a partition of size constraints holds.
func (p *Profile) PartitionVRAM(size int) int64 {
	return p.partitionGiB(p.Partition.VRAMGiB, size)
}

// PartitionCopy is how many bytes staging a partition of size constraints
// copies from the host (its VRAM when the profile does not say, or when
// with stages_alone the device decides what moves).
func (p *Profile) PartitionCopy(size int) int64 {
	if p.Partition.CopyGiB == 0 || p.Partition.StagesAlone {
		return p.PartitionVRAM(size)
	}
	return min(p.partitionGiB(p.Partition.CopyGiB, size), p.PartitionVRAM(size))
}

// PartitionStream is how many bytes the compute kernel of a partition of
// size constraints streams host→device as it runs (stream_gib).
func (p *Profile) PartitionStream(size int) int64 {
	if p.Partition.StreamGiB <= 0 {
		return 0
	}
	return p.partitionGiB(p.Partition.StreamGiB, size)
}

// streamStall is device.stream_stall, 1 where absent.
func (d DeviceProfile) streamStall() float64 {
	if d.StreamStall == nil {
		return 1
	}
	return *d.StreamStall
}

// WithStream is a copy of p whose compute streams gib GiB of keys a
// partition of constraints constraints (stream_gib, scaled to the profile's
// reference size); 0: the keys are resident.
func (p *Profile) WithStream(gib float64, constraints int) (*Profile, error) {
	if math.IsNaN(gib) || gib < 0 {
		return nil, fmt.Errorf("stream: %g GiB: want a non-negative size", gib)
	}
	q := *p
	q.Partition.StreamGiB = 0
	if gib > 0 {
		if constraints <= 0 {
			constraints = p.ReferenceConstraints
		}
		q.Partition.StreamGiB = round(gib*p.partitionScale(constraints, p.ReferenceConstraints), 4)
	}
	return &q, nil
}

// atReference is a copy of p whose reference size is n, its partition's
// figures (given at the reference size) scaled so that a partition of any
// size holds what it held; the stage costs are left as they are (a fit sets
// them at n).
func (p *Profile) atReference(n int) Profile {
	q := *p
	if n == p.ReferenceConstraints || p.ReferenceConstraints <= 0 {
		q.ReferenceConstraints = n
		return q
	}
	f := p.partitionScale(p.ReferenceConstraints, n)
	q.Partition.VRAMGiB = round(p.Partition.VRAMGiB*f, 4)
	q.Partition.CopyGiB = round(p.Partition.CopyGiB*f, 4)
	q.Partition.ScratchGiB = round(p.Partition.ScratchGiB*f, 4)
	q.Partition.StreamGiB = round(p.Partition.StreamGiB*f, 4)
	q.ReferenceConstraints = n
	return q
}

// aloneShare is the share of a partition's buffer that staging copies while
// no kernel runs (stages_alone); 1: all of it.
func (p *Profile) aloneShare() float64 {
	if !p.Partition.StagesAlone || p.Partition.CopyGiB == 0 || p.Partition.VRAMGiB <= 0 {
		return 1
	}
	return min(1, p.Partition.CopyGiB/p.Partition.VRAMGiB)
}

// partitionGiB is the bytes of a partition's figure g (GiB at the reference
// size) for a partition of size constraints (the reference size when 0).
func (p *Profile) partitionGiB(g float64, size int) int64 {
	if size <= 0 {
		size = p.ReferenceConstraints
	}
	return int64(g * p.partitionScale(p.ReferenceConstraints, size) * float64(gib))
}

// partitionScale is how many times a partition's memory of from
// constraints a partition of to constraints holds: (to/from)^exponent, the
// exponent 1 when the profile gives none.
func (p *Profile) partitionScale(from, to int) float64 {
	exp := p.Partition.Exponent
	if exp == 0 {
		exp = 1
	}
	return math.Pow(float64(to)/float64(from), exp)
}

// KernelScratch is the pool memory the compute kernel of a partition of size
// constraints takes while it runs.
func (p *Profile) KernelScratch(size int) int64 {
	if p.Partition.ScratchGiB == 0 {
		return 0
	}
	return p.partitionGiB(p.Partition.ScratchGiB, size)
}

// decodeStrict decodes JSON and rejects unknown fields, so that a misspelt
// field is an error rather than a silently ignored setting.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case asErr(err, &se):
			line, col := position(data, se.Offset)
			return fmt.Errorf("line %d column %d: %w", line, col, err)
		case asErr(err, &te):
			return fmt.Errorf("field %s: %w", te.Field, err)
		}
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON object")
	}
	return nil
}

func position(data []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < off && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// readNamed returns an embedded file dir/name.json, or the file at path when
// nameOrPath looks like a path (has a separator or a .json suffix) or names no
// embedded file.
func readNamed(fs embed.FS, dir, nameOrPath string) ([]byte, string, error) {
	if !strings.ContainsAny(nameOrPath, `/\`) && !strings.HasSuffix(nameOrPath, ".json") {
		if data, err := fs.ReadFile(dir + "/" + nameOrPath + ".json"); err == nil {
			return data, nameOrPath, nil
		}
	}
	data, err := os.ReadFile(nameOrPath)
	if err != nil {
		if os.IsNotExist(err) && !strings.ContainsAny(nameOrPath, `/\`) {
			return nil, "", fmt.Errorf("no embedded %s named %q (have %s) and no such file", strings.TrimSuffix(dir, "s"), nameOrPath, strings.Join(embeddedNames(fs, dir), ", "))
		}
		return nil, "", err
	}
	return data, nameOrPath, nil
}

func embeddedNames(fs embed.FS, dir string) []string {
	ents, _ := fs.ReadDir(dir)
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(out)
	return out
}

// WithDeviceOf is p with dev's device figures and the runtime's host
// figures dev was calibrated with (the lock handoff, the completions'
// latency); p's CPU model (cores, order, hold) and stages stay. A proving
// profile takes them from the card's contention calibration, whose runs have
// the mallocs, frees and trims a proving trace has too few of.
func (p *Profile) WithDeviceOf(dev *Profile) *Profile {
	out := *p
	out.Device = dev.Device
	out.Host.Handoff = dev.Host.Handoff
	out.Host.CompletionLatency = dev.Host.CompletionLatency
	out.Device.Source = "from profile " + dev.Name
	if dev.Device.Source != "" {
		out.Device.Source += "; " + dev.Device.Source
	}
	return &out
}
