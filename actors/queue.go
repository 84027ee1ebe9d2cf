package actors

import "sync"

// EventQueue hands events to an observer on a goroutine of its own, in the
// order they were observed. An actor's handler then spends an append under a
// short lock on each event, not the observer's work: a trace encodes and
// writes every event under its own lock, and while one handler did so another
// waited there before its device call. On the H200 such waits, up to a third
// of a millisecond, decided which of two workers' calls reached the device
// first (docs/predictions/contention/devsync-recheck).
//
// Events keep their time (Event.At is set before Observe). Close delivers
// what is queued and stops the goroutine; events observed after Close go to
// the observer at once, on the caller's goroutine, as without a queue.
//
// The production runtime's callers use it; the simulator's observers stay
// synchronous, since its actors take no time and its event order must not
// depend on a goroutine's.
type EventQueue struct {
	next Observer

	mu     sync.Mutex
	queued []Event
	closed bool
	wake   chan struct{} // capacity 1: the drainer has something to do
	done   chan struct{} // closed when the drainer has returned
}

// NewEventQueue starts delivering to next.
func NewEventQueue(next Observer) *EventQueue {
	q := &EventQueue{next: next, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.drain()
	return q
}

// Observe queues e.
func (q *EventQueue) Observe(e Event) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		<-q.done // after what was queued
		q.next.Observe(e)
		return
	}
	q.queued = append(q.queued, e)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Close delivers every queued event and returns when the observer has had
// them.
func (q *EventQueue) Close() {
	q.mu.Lock()
	already := q.closed
	q.closed = true
	q.mu.Unlock()
	if !already {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	<-q.done
}

func (q *EventQueue) drain() {
	defer close(q.done)
	var batch []Event
	for range q.wake {
		q.mu.Lock()
		batch, q.queued = q.queued, batch[:0]
		closed := q.closed
		q.mu.Unlock()
		for _, e := range batch {
			q.next.Observe(e)
		}
		if closed {
			// Observe no longer queues, and this batch was the last.
			return
		}
	}
}
