package actors

import (
	"time"

	"github.com/cuzk/cuzk/gpu"
)

// SetWorkerHook sets (nil: clears) a function every worker runs at the start
// of each message it handles, for tests that inject panics into Receive.
func SetWorkerHook(h *func(device, worker int, p *PartitionID, msg any)) { testHookWorker.Store(h) }

// SetDeviceHook sets (nil: clears) a function every device actor runs at the
// start of each message it handles.
func SetDeviceHook(h *func(device int, msg any)) { testHookDevice.Store(h) }

// IsVRAMDelta says whether msg is a worker's change to the VRAM ledger.
func IsVRAMDelta(msg any) bool {
	_, ok := msg.(vramDelta)
	return ok
}

// LeaseGrantedFor returns the lock a lease grant message is for.
func LeaseGrantedFor(msg any) (string, bool) {
	g, ok := msg.(leaseGranted)
	return g.lock, ok
}

// LedgerOf books changes, as workers' vramDelta messages, on the ledger of
// a device of total bytes, and returns the EvVRAM events it emitted, or what
// it panicked with.
func LedgerOf(total int64, changes ...int64) (events []Event, panicked any) {
	rec := &eventList{}
	d := &deviceActor{env: &env{rt: clocklessRuntime{}, cfg: Config{Observer: rec}}, info: gpu.Info{Total: total}}
	defer func() { panicked = recover(); events = rec.events }()
	for i, b := range changes {
		d.ledger(vramDelta{worker: i, bytes: b})
	}
	return
}

type eventList struct{ events []Event }

func (l *eventList) Observe(e Event) { l.events = append(l.events, e) }

// clocklessRuntime is a Runtime whose clock stands at zero; nothing else
// of it may be used.
type clocklessRuntime struct{ Runtime }

func (clocklessRuntime) Now() time.Duration { return 0 }
