package actors

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cuzk/cuzk/gpu"
)

// Priority orders jobs in the scheduler's queue; higher runs first.
type Priority int

// Priorities, as in cuzk's gRPC API.
const (
	PriorityLow Priority = iota
	PriorityNormal
	PriorityHigh
	PriorityCritical
)

var priorityNames = [...]string{"LOW", "NORMAL", "HIGH", "CRITICAL"}

func (p Priority) String() string {
	if p >= 0 && int(p) < len(priorityNames) {
		return priorityNames[p]
	}
	return fmt.Sprintf("priority(%d)", int(p))
}

// ParsePriority reads LOW, NORMAL, HIGH or CRITICAL (any case).
func ParsePriority(s string) (Priority, error) {
	for i, n := range priorityNames {
		if strings.EqualFold(s, n) {
			return Priority(i), nil
		}
	}
	return 0, fmt.Errorf("unknown priority %q (want LOW, NORMAL, HIGH or CRITICAL)", s)
}

// Designs lists the lock designs by name.
var Designs = []string{"single", "split-first", "split-devsync", "split", "budget"}

// JobSpec is what the scheduler needs to know of a job.
type JobSpec struct {
	ID         string
	Partitions int
	// Pending lists the partitions to prove; nil means all of them. Resume
	// passes the ones the store has not recorded as proved.
	Pending []int
	Size    int   // constraints per partition
	VRAM    int64 // device bytes one partition holds during stage and compute
	// Copy is how many of those bytes staging copies from the host; zero
	// is all of VRAM (the rest is written on the device).
	Copy int64
	// Scratch is device memory one partition's kernel takes from the
	// pool while it computes, beyond VRAM (a kernel that allocates its own
	// work space). The budget design keeps room in its ledger for the
	// largest scratch among the partitions holding reservations: kernels
	// run one at a time under compute_mtx, so one scratch is live at once.
	// Zero when the kernel allocates nothing (cuzk's backends reserve
	// their scratch with the keys, outside the ledger).
	Scratch  int64
	Priority Priority
	// HostBytes is the host memory one partition holds from the start of
	// its synthesis until it leaves the host (prover.HostFootprint). The
	// host-memory gate (Config.HostMemLimit) counts it; without the gate
	// it is not used.
	HostBytes int64
}

// assign is what a worker is told of one attempt of partition p of this
// job.
func (j JobSpec) assign(attempt uint64, p PartitionID) assign {
	return assign{attempt: attempt, p: p, size: j.Size, vram: j.VRAM, copy: j.copyBytes(), scratch: j.Scratch}
}

// copyBytes is what staging copies from the host.
func (j JobSpec) copyBytes() int64 {
	if j.Copy == 0 {
		return j.VRAM
	}
	return j.Copy
}

// Config configures the actors. Defaults are applied by (Config).WithDefaults.
type Config struct {
	Design           string // one of Designs; default "budget"
	WorkersPerDevice int    // default 3
	MaxAttempts      int    // tries per partition before it is failed; default 3
	// RetryBackoff is how long a failed partition waits before it is queued
	// again: RetryBackoff after its first failure, doubling with each
	// further one up to 32 times it. Zero queues it again at once. A wait
	// lets a partition that failed for want of memory come back after the
	// partitions holding it have moved on, instead of failing again beside
	// them.
	RetryBackoff time.Duration
	Pool         gpu.PoolPolicy
	// Before and After are the CPU stages a worker runs, in order, before
	// and after the device part of a partition; the defaults are
	// synthesize, prep and b_g2, finalize. A model may leave a stage out
	// (cuzk synthesizes in a pipeline of its own) or move one; the
	// production executor needs the defaults. After must end with finalize,
	// where a proof becomes durable.
	Before, After []Stage
	// HostMemLimit turns on synthesis ahead of the GPU (host.go) when
	// positive: the scheduler runs the stages before the device part
	// itself, for as many partitions as their HostBytes fit in this many
	// bytes of host memory and SynthWorkers allow, whatever the GPU
	// workers are doing; a prepared partition then waits in a ready queue
	// for a worker, which takes it through the device part and the stages
	// after it. Zero keeps each worker synthesizing its own partition.
	HostMemLimit int64
	// SynthWorkers is how many partitions run the stages before the device
	// part at once under the host-memory gate; zero is one per GPU worker
	// (WorkersPerDevice times the devices), as many as without the gate.
	SynthWorkers int
	// PrepConsumed says the device part uses up a partition's prepared
	// data (the CPU backend's Compute overwrites a, b and c in place).
	// Under the host-memory gate a failed device attempt then synthesizes
	// the partition again; otherwise the retry starts at the device part
	// with the data the partition still holds.
	PrepConsumed bool
	// LockHops runs the workers as the runtime did before free mutexes
	// were taken in place: every lease request goes to its lock's actor and
	// back, a free mutex's too, and a worker's messages are sent as it
	// sends them rather than when its handler is done. By default a worker
	// takes a free mutex in place (leaseQueue.takeFree), as a thread takes
	// a free std::mutex, and its release of mem_mtx leaves after its
	// launch: the hop let a worker that released mem_mtx and took the free
	// compute_mtx race the worker granted mem_mtx to the device
	// (docs/lock-designs.md, split-devsync).
	LockHops bool
	Observer Observer // may be nil
	Journal  Journal  // may be nil: nothing is recorded
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.Design == "" {
		c.Design = "budget"
	}
	if c.WorkersPerDevice == 0 {
		c.WorkersPerDevice = 3
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 3
	}
	if c.Pool == (gpu.PoolPolicy{}) {
		c.Pool = gpu.DefaultPoolPolicy()
	}
	if c.Before == nil {
		c.Before = []Stage{StageSynthesize, StagePrep}
	}
	if c.After == nil {
		c.After = []Stage{StageBG2, StageFinalize}
	}
	return c
}

// Validate reports the first invalid field of c.
func (c Config) Validate() error {
	ok := false
	for _, d := range Designs {
		ok = ok || d == c.Design
	}
	if !ok {
		return fmt.Errorf("unknown design %q (want one of %s)", c.Design, strings.Join(Designs, ", "))
	}
	if c.WorkersPerDevice < 1 {
		return fmt.Errorf("workers per device must be at least 1, got %d", c.WorkersPerDevice)
	}
	if c.MaxAttempts < 1 {
		return fmt.Errorf("max attempts must be at least 1, got %d", c.MaxAttempts)
	}
	if c.RetryBackoff < 0 {
		return fmt.Errorf("retry backoff must not be negative, got %s", c.RetryBackoff)
	}
	if c.HostMemLimit < 0 {
		return fmt.Errorf("host-memory limit must not be negative, got %d bytes", c.HostMemLimit)
	}
	if c.SynthWorkers < 0 {
		return fmt.Errorf("synthesis workers must not be negative, got %d", c.SynthWorkers)
	}
	return validatePipeline(c.Before, c.After)
}

// validatePipeline checks the CPU stages around the device part: CPU stages
// only, each at most once, finalize last.
func validatePipeline(before, after []Stage) error {
	seen := map[Stage]bool{}
	for _, st := range append(slices.Clone(before), after...) {
		switch st {
		case StageSynthesize, StagePrep, StageBG2, StageFinalize:
		default:
			return fmt.Errorf("stage %s cannot run before or after the device part: it is not a CPU stage", st)
		}
		if seen[st] {
			return fmt.Errorf("stage %s listed twice around the device part", st)
		}
		seen[st] = true
	}
	if len(after) == 0 || after[len(after)-1] != StageFinalize {
		return fmt.Errorf("the stages after the device part must end with %s, got %v", StageFinalize, after)
	}
	return nil
}

// Journal makes the scheduler's decisions durable. The production journal is
// the Pebble store; the simulator keeps one in memory so that a simulated
// process crash can be followed by a resume.
type Journal interface {
	// RecordJob is called before the scheduler accepts a job; an error refuses it.
	RecordJob(job JobSpec) error
	// RecordAttempt is called when a worker starts a partition.
	RecordAttempt(p PartitionID) error
	// RecordFailed is called when a partition fails for good.
	RecordFailed(p PartitionID, reason string) error
	// RecordCancelled is called when a partition of a cancelled job is
	// given up before it was proved.
	RecordCancelled(p PartitionID) error
}

// Executor runs the real work of partitions in the production runtime. The
// finalize stage returns only once the proof is durable (written to the store
// when there is one), so a partition reported done is never lost.
type Executor interface {
	RunStage(ctx context.Context, w StageWork) error
	// Kernel returns the compute kernel of partition p on the given device.
	Kernel(p PartitionID, device int) *gpu.Kernel
	// Release drops what the executor holds for p (after done or failed).
	Release(p PartitionID)
}

// StageStarter is an Executor told of each CPU stage as the actors start it,
// in their order, before RunStage runs it on a goroutine of its own (whose
// start order is the Go scheduler's): the production runtime calls
// Starting on the actor's goroutine.
type StageStarter interface {
	Starting(w StageWork)
}
