package actors

import (
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/cuzk/cuzk/gpu"
)

// Runtime is everything an actor may take from the world. Actors never read the
// wall clock, sleep, start goroutines or use the global random source for a
// decision: they ask their Runtime. The production runtime (package runner) runs
// work on goroutines with the wall clock; the simulator (package sim) runs the
// same actors on a virtual clock, where a piece of work takes as long as the
// hardware model says.
type Runtime interface {
	// Now is the time since the runtime started.
	Now() time.Duration
	// Rand is the runtime's seeded random source. Only actors' own goroutine
	// (their Receive) may use it.
	Rand() *rand.Rand
	// Start begins w on behalf of the actor self. When w completes the runtime
	// sends WorkDone{Token: token, ...} to self.
	Start(self *actor.PID, token uint64, w Work)
	// After sends msg to pid once d has passed.
	After(pid *actor.PID, d time.Duration, msg any)
	// System is the actor system the actors live in; in the simulator it uses
	// synchronized dispatchers so that each event is processed to quiescence.
	System() *actor.ActorSystem
	// Props returns the props to spawn an actor with, so that the runtime can
	// choose the dispatcher.
	Props(producer actor.Producer) *actor.Props
}

// Work is a piece of work an actor starts through its Runtime: a CPU stage of a
// partition, or an operation on a device.
type Work interface{ isWork() }

// StageWork runs one CPU stage (synthesize, prep, b_g2, finalize) of a
// partition. The production runtime runs it on the partition's real data; the
// simulator charges it to its CPU model.
type StageWork struct {
	Stage     Stage
	Partition PartitionID
	Size      int // constraints per partition
}

// DeviceWork submits Op to the device with index Device, on behalf of a
// partition. Workers name their streams gpu.Stream(worker+1): a device creates
// a stream's queue on first use.
type DeviceWork struct {
	Device    int
	Partition PartitionID // whose work it is (the production runtime asks the Executor for its kernel)
	Op        gpu.Op
}

func (StageWork) isWork()  {}
func (DeviceWork) isWork() {}

// WorkDone reports the completion of work started with Runtime.Start.
type WorkDone struct {
	Token  uint64
	Work   Work
	Result gpu.Result // for DeviceWork
	Err    error      // the stage's or the op's error
	// Took is how long the work ran, on the runtime's clock.
	Took time.Duration
	// At is when the work completed, on the runtime's clock: the actor
	// handles the message that long after or later (see Event.Late).
	At time.Duration
}
