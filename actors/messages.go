package actors

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
)

// Stage is one step of a partition's proof.
type Stage uint8

// The stages of one partition, in order. Stage and Compute run on a device
// (under the lock design); the others run on the CPU.
const (
	StageSynthesize Stage = iota + 1
	StagePrep
	StageStage
	StageCompute
	StageBG2
	StageFinalize
)

var stageNames = [...]string{"", "synthesize", "prep", "stage", "compute", "b_g2", "finalize"}

func (s Stage) String() string {
	if int(s) < len(stageNames) && s > 0 {
		return stageNames[s]
	}
	return fmt.Sprintf("stage(%d)", uint8(s))
}

// PartitionID names one partition of one job.
type PartitionID struct {
	Job       string
	Partition int
}

func (p PartitionID) String() string { return fmt.Sprintf("%s/%d", p.Job, p.Partition) }

// The messages the actors exchange. They are plain values; the runtime's
// WorkDone (runtime.go) is the only one that comes from outside the actors.

// submitJob hands an accepted job to the scheduler (Engine.Submit).
type submitJob struct {
	job JobSpec
}

// workerIdle tells the scheduler a worker can take a partition.
type workerIdle struct {
	device, worker int
	pid            *actor.PID
}

// assign gives a worker one attempt at a partition.
type assign struct {
	attempt uint64 // scheduler-wide attempt id; echoed in attemptEnded
	p       PartitionID
	size    int
	vram    int64
	copy    int64 // bytes staged from the host (≤ vram)
	scratch int64 // pool bytes the kernel takes beside vram (JobSpec.Scratch)
	// prepared: the scheduler ran the stages before the device part
	// (host.go); the worker starts at the device part.
	prepared bool
}

// attemptEnded reports the end of an attempt; err nil means the partition is
// proved. The worker is idle again once it has sent it.
type attemptEnded struct {
	device, worker int
	pid            *actor.PID
	attempt        uint64
	p              PartitionID
	err            error
}

// acquireLease asks a lock (or the device's budget) for a lease. id is the
// worker's own lease number: grants are matched by it, so a grant that
// crossed a cancellation in flight is never mistaken for a later one.
type acquireLease struct {
	worker int
	pid    *actor.PID
	id     uint64
	bytes  int64 // budget: bytes to reserve; mutexes ignore it
	// scratch is what the partition's kernel takes beside bytes while it
	// computes (budget only): the ledger keeps room for the largest one
	// among its holders rather than the sum, since compute_mtx runs one
	// kernel at a time.
	scratch int64
	p       PartitionID
}

// leaseGranted answers acquireLease.
type leaseGranted struct {
	lock string
	id   uint64
}

// leaseRefused answers an acquireLease that can never be granted (a
// reservation larger than the device).
type leaseRefused struct {
	lock string
	id   uint64
	err  error
}

// releaseLease gives a lease back, or withdraws a request still waiting.
type releaseLease struct {
	worker int
	id     uint64
}

// vramDelta tells the device's ledger that a worker's partition now holds
// bytes more (or less, when negative) of device memory.
type vramDelta struct {
	worker int
	bytes  int64
}
