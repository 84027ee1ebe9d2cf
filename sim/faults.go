package sim

import (
	"errors"

	"github.com/asynkron/protoactor-go/actor"
)

// ErrWorkerCrash is the error a worker's in-flight work completes with when a
// scenario crashes that worker.
var ErrWorkerCrash = errors.New("simulated worker crash")

type workerKey struct{ device, worker int }

// faultState carries injected worker crashes to the worker they name. The
// runtime knows an actor only by its PID, and a worker by (device, index) only
// from the events it emits; a worker reports EvStageStart and then starts the
// stage's work in the same Receive, which is where the PID is learnt.
type faultState struct {
	armed map[workerKey]bool
	owner map[string]workerKey // PID id → worker
	last  *workerKey           // the worker that just reported a stage start
}

func (f *faultState) noteStageStart(device, worker int) {
	f.last = &workerKey{device, worker}
}

func (f *faultState) noteStart(self *actor.PID) {
	if f.last == nil || self == nil {
		return
	}
	if f.owner == nil {
		f.owner = map[string]workerKey{}
	}
	f.owner[self.Id] = *f.last
	f.last = nil
}

func (f *faultState) arm(device, worker int) {
	if f.armed == nil {
		f.armed = map[workerKey]bool{}
	}
	f.armed[workerKey{device, worker}] = true
}

// crashDue reports whether the work completing for self must fail because its
// worker was crashed, and disarms the crash.
func (f *faultState) crashDue(self *actor.PID) bool {
	if len(f.armed) == 0 || self == nil {
		return false
	}
	w, ok := f.owner[self.Id]
	if !ok || !f.armed[w] {
		return false
	}
	delete(f.armed, w)
	return true
}

func (f *faultState) reset() {
	f.owner = nil
	f.last = nil
}
