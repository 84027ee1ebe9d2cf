package actors

import (
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/cuzk/cuzk/gpu"
)

// leaseQueue grants leases in arrival order. A mutex is a queue of capacity
// one where every lease weighs one; the budget design's VRAM reservations are
// a queue whose capacity is the device's memory and whose leases weigh the
// bytes they reserve. A reservation also names its kernel's scratch; the
// queue keeps room for the largest scratch among its holders beside the sum
// of their bytes, since compute_mtx lets one kernel run (and hold scratch) at
// a time. Strict FIFO: a request that does not fit yet blocks the ones
// behind it, so a large partition is never starved by small ones.
//
// A queue is served by its actor (the lock actor, or the device actor for
// the budget), and a worker may take a free mutex in place (takeFree): mu
// orders the two.
type leaseQueue struct {
	mu       sync.Mutex
	name     string
	device   int
	capacity int64 // 0: a mutex
	used     int64
	holders  map[int]lease // by worker
	waiting  []lease
	env      *env
}

type lease struct {
	acquireLease
	since   time.Duration
	inPlace bool // taken by its worker without the lock actor (takeFree)
}

func newLeaseQueue(e *env, name string, device int, capacity int64) *leaseQueue {
	return &leaseQueue{name: name, device: device, capacity: capacity, holders: map[int]lease{}, env: e}
}

func (q *leaseQueue) weight(l acquireLease) int64 {
	if q.capacity == 0 {
		return 1
	}
	return l.bytes
}

// scratch is the room kept for kernels' scratch were l granted too: the
// largest of the holders' and l's (0 for a mutex).
func (q *leaseQueue) scratch(l *acquireLease) int64 {
	if q.capacity == 0 {
		return 0
	}
	var most int64
	if l != nil {
		most = l.scratch
	}
	for _, h := range q.holders {
		most = max(most, h.scratch)
	}
	return most
}

func (q *leaseQueue) limit() int64 {
	if q.capacity == 0 {
		return 1
	}
	return q.capacity
}

func (q *leaseQueue) acquire(c actor.Context, m acquireLease) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.capacity > 0 && (m.bytes+m.scratch > q.capacity || m.bytes <= 0 || m.scratch < 0) {
		what := gpu.FormatBytes(m.bytes)
		if m.scratch != 0 {
			what += " and " + gpu.FormatBytes(m.scratch) + " of kernel scratch"
		}
		c.Send(m.pid, leaseRefused{lock: q.name, id: m.id,
			err: fmt.Errorf("%s lease of %s on device %d with %s: %w", q.name, what, q.device, gpu.FormatBytes(q.capacity), gpu.ErrOutOfMemory)})
		return
	}
	q.env.emit(Event{Kind: EvLeaseWait, Device: q.device, Worker: m.worker, Partition: m.p, Lock: q.name, Bytes: m.bytes})
	q.waiting = append(q.waiting, lease{acquireLease: m, since: q.env.rt.Now()})
	q.grant(c)
}

// takeFree grants m at once, on the asking worker's own goroutine, when the
// queue is a mutex that nobody holds or waits for, and reports whether it
// did; otherwise the worker asks the lock actor. So a worker that releases
// mem_mtx and takes a free compute_mtx goes on to its launch in the same
// handler, as a cuzk thread takes a free std::mutex without sleeping, while
// the worker waiting for mem_mtx is woken through the lock actor. The wait
// and the grant are reported at one instant (no wait span in a trace).
func (q *leaseQueue) takeFree(m acquireLease) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.capacity != 0 || q.used != 0 || len(q.waiting) > 0 {
		return false
	}
	if _, dup := q.holders[m.worker]; dup {
		return false // the lock actor's invariant reports it
	}
	now := q.env.rt.Now()
	q.env.emit(Event{Kind: EvLeaseWait, Device: q.device, Worker: m.worker, Partition: m.p, Lock: q.name, Bytes: m.bytes, InPlace: true})
	q.env.emit(Event{Kind: EvLeaseGrant, Device: q.device, Worker: m.worker, Partition: m.p, Lock: q.name, Bytes: m.bytes, InPlace: true})
	q.used = 1
	q.holders[m.worker] = lease{acquireLease: m, since: now, inPlace: true}
	return true
}

func (q *leaseQueue) grant(c actor.Context) {
	for len(q.waiting) > 0 {
		l := q.waiting[0]
		w, room := q.weight(l.acquireLease), q.scratch(&l.acquireLease)
		if q.used+w+room > q.limit() {
			return
		}
		if h, dup := q.holders[l.worker]; dup {
			// One lease per worker and lock: a second would overwrite the
			// first, whose release would then never come.
			panic(fmt.Sprintf("actors: invariant: %s on device %d: worker %d asks again (lease %d for %s) while holding lease %d for %s",
				q.name, q.device, l.worker, l.id, l.p, h.id, h.p))
		}
		q.waiting = q.waiting[1:]
		q.used += w
		if q.used+room > q.limit() || q.used < 0 {
			panic(fmt.Sprintf("actors: invariant: %s on device %d: %d in use and %d of scratch of %d", q.name, q.device, q.used, room, q.limit()))
		}
		now := q.env.rt.Now()
		q.env.emit(Event{Kind: EvLeaseGrant, Device: q.device, Worker: l.worker, Partition: l.p, Lock: q.name, Bytes: l.bytes, Took: now - l.since})
		l.since = now
		q.holders[l.worker] = l
		c.Send(l.pid, leaseGranted{lock: q.name, id: l.id})
	}
}

// release ends a lease or withdraws a waiting request; a release that matches
// neither (it crossed a grant it already handled) is ignored.
func (q *leaseQueue) release(c actor.Context, m releaseLease) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if h, ok := q.holders[m.worker]; ok && h.id == m.id {
		delete(q.holders, m.worker)
		q.used -= q.weight(h.acquireLease)
		q.env.emit(Event{Kind: EvLeaseRelease, Device: q.device, Worker: m.worker, Partition: h.p, Lock: q.name, Bytes: h.bytes, Took: q.env.rt.Now() - h.since, InPlace: h.inPlace})
		q.grant(c)
		return
	}
	for i, l := range q.waiting {
		if l.worker == m.worker && l.id == m.id {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			q.grant(c)
			return
		}
	}
}

// lockActor is one mutex of a lock design ("gpu", "mem" or "compute") on one
// device.
type lockActor struct {
	q *leaseQueue
}

func (l *lockActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case acquireLease:
		l.q.acquire(c, m)
	case releaseLease:
		l.q.release(c, m)
	}
}
