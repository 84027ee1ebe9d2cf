package actors

import "time"

// EventKind says what an Event records.
type EventKind uint8

// The events actors report to their Observer. Metrics, traces and the
// simulator's report are all built from this one stream.
const (
	EvJobAccepted        EventKind = iota + 1
	EvStageStart                   // a worker began a stage of a partition
	EvStageEnd                     // ... and finished it (Err set on failure)
	EvLeaseWait                    // a worker asked for a lock
	EvLeaseGrant                   // the lock granted it
	EvLeaseRelease                 // the worker released it
	EvDeviceOp                     // a device operation completed (Op, Took, Waited)
	EvOOM                          // an allocation failed with out-of-memory
	EvFallback                     // a design fell back to another path (split: allocate under compute_mtx)
	EvPartitionDone                // a partition was proved and verified
	EvPartitionRetry               // a partition failed and was queued again
	EvPartitionFailed              // a partition failed for good (Err says why)
	EvJobDone                      // every partition of a job is done or failed
	EvVRAM                         // the device ledger changed (Bytes = in use)
	EvQueueDepth                   // the scheduler's queue length changed (Count)
	EvPartitionCancelled           // a partition will not be proved: its job was cancelled
	EvHostMem                      // the host-memory gate's ledger changed (Bytes held, Count partitions held)
	EvReadyWait                    // a prepared partition left the ready queue for a GPU worker (Took: its wait; Count: still ready)
)

// Event is one thing that happened, stamped with the runtime's clock.
type Event struct {
	Kind      EventKind
	At        time.Duration
	Device    int
	Worker    int // -1 when not about a worker
	Partition PartitionID
	Stage     Stage
	Lock      string // lock name for lease events: "gpu", "mem", "compute", "budget"
	Op        string // device op name for EvDeviceOp
	Took      time.Duration
	// Late is, for EvDeviceOp, how long the op's completion waited before
	// its worker handled it (host latency: the mailbox, the scheduler); the
	// op was called at At - Late - Took. Always 0 in the simulator.
	Late   time.Duration
	Waited bool
	// Bytes is, for EvDeviceOp, the bytes the op allocated or copied, for
	// a free and a trim the bytes it gave back to the device, for a
	// cudaMemGetInfo the bytes it reported free.
	Bytes int64
	// Copied is, for an OpCopyIn, the bytes the stage really moved when
	// they differ from Bytes (a partition staged with a alone: gpuprove's
	// stagesAlone); 0 otherwise.
	Copied int64
	Count  int
	Err    string
	// Async marks an EvDeviceOp that returned at enqueue (an asynchronous
	// copy or kernel launch): its Took is the call's, not the work's.
	Async bool
	// Fallback marks an EvOOM met on a design's fallback path (split:
	// allocating under compute_mtx) rather than on its first attempt to
	// stage (pre-staging under mem_mtx).
	Fallback bool
	// InPlace marks the EvLeaseWait, EvLeaseGrant and EvLeaseRelease of a
	// free mutex that its worker took in place, without its lock actor.
	InPlace bool
}

// Observer receives events. It is called on the actors' goroutines and must
// not block for long; implementations that are shared must be safe for
// concurrent use.
type Observer interface {
	Observe(e Event)
}

// Observers fans events out to several observers.
type Observers []Observer

// Observe sends e to every observer.
func (os Observers) Observe(e Event) {
	for _, o := range os {
		o.Observe(e)
	}
}
