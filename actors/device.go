package actors

import (
	"fmt"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/cuzk/cuzk/gpu"
)

// deviceActor is one GPU: it spawns the design's locks and the workers, keeps
// the VRAM ledger (what partitions hold), and serves the budget design's
// reservations from that device's memory.
type deviceActor struct {
	env    *env
	info   gpu.Info
	design design
	sched  *actor.PID

	budget *leaseQueue
	inUse  int64
	peak   int64
}

// testHookDevice, when set by a test, runs at the start of every message a
// device actor handles (to inject a panic into Receive).
var testHookDevice atomic.Pointer[func(device int, msg any)]

// Receive handles one message. A panic below (a broken invariant of the
// ledger or the budget's queue) is logged and the actor goes on: left to
// protoactor, the actor would be restarted, which stops its children, and
// new workers would take over while the partitions the old ones held were
// never proved nor failed.
func (d *deviceActor) Receive(c actor.Context) {
	defer func() {
		if r := recover(); r != nil {
			d.env.log().Error("device actor: panic handling a message; going on", "device", d.info.Index,
				"message", fmt.Sprintf("%T", c.Message()), "panic", fmt.Sprint(r))
		}
	}()
	if hook := testHookDevice.Load(); hook != nil {
		(*hook)(d.info.Index, c.Message())
	}
	switch m := c.Message().(type) {
	case *actor.Started:
		d.spawn(c)
	case acquireLease:
		d.budget.acquire(c, m)
	case releaseLease:
		d.budget.release(c, m)
	case vramDelta:
		d.ledger(m)
	}
}

// ledger books a worker's change to the VRAM its partitions hold. A worker
// gives a buffer back when it has seen the buffer's free complete (the stream
// sync after a cudaFreeAsync), but the device may hand the memory to another
// worker as soon as the free has run on the device: a trim returns it and the
// other worker's allocation takes it. So the ledger can stand above the
// device, by the bytes of frees that have run and are not yet seen; it can
// never go below zero (a buffer given back twice).
func (d *deviceActor) ledger(m vramDelta) {
	d.inUse += m.bytes
	if d.inUse < 0 {
		panic(fmt.Sprintf("actors: invariant: device %d ledger at %d bytes after worker %d's change of %d",
			d.info.Index, d.inUse, m.worker, m.bytes))
	}
	d.peak = max(d.peak, d.inUse)
	d.env.emit(Event{Kind: EvVRAM, Device: d.info.Index, Worker: m.worker, Bytes: d.inUse})
}

func (d *deviceActor) spawn(c actor.Context) {
	d.budget = newLeaseQueue(d.env, "budget", d.info.Index, d.info.Total)
	locks := map[string]*actor.PID{"budget": c.Self()}
	var free map[string]*leaseQueue
	if !d.env.cfg.LockHops {
		free = map[string]*leaseQueue{}
	}
	for _, name := range d.design.locks {
		q := newLeaseQueue(d.env, name, d.info.Index, 0)
		locks[name] = c.Spawn(d.env.props(func() actor.Actor { return &lockActor{q: q} }))
		if free != nil {
			free[name] = q
		}
	}
	for i := range d.env.cfg.WorkersPerDevice {
		w := &worker{
			env: d.env, device: d.info.Index, index: i,
			// Streams are named by worker: devices create them on first use.
			stream: gpu.Stream(i + 1),
			sched:  d.sched, dev: c.Self(), locks: locks, free: free, design: d.design,
		}
		// The producer returns the same worker on a restart, so its partition
		// survives one (see worker.Receive).
		c.Spawn(d.env.props(func() actor.Actor { return w }))
	}
}
