package actors

import (
	"sync"
	"testing"
	"time"
)

// recorder keeps what it observed; a slow one stands for a trace's writes.
type recorder struct {
	mu     sync.Mutex
	events []Event
	delay  time.Duration
}

func (r *recorder) Observe(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	time.Sleep(r.delay)
	r.events = append(r.events, e)
}

func TestEventQueueKeepsEachProducersOrderAndLosesNothing(t *testing.T) {
	rec := &recorder{}
	q := NewEventQueue(rec)
	const producers, each = 4, 500
	var wg sync.WaitGroup
	for w := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				q.Observe(Event{Worker: w, Count: i})
			}
		}()
	}
	wg.Wait()
	q.Close()
	if len(rec.events) != producers*each {
		t.Fatalf("observer got %d events, want %d", len(rec.events), producers*each)
	}
	next := make([]int, producers)
	for _, e := range rec.events {
		if e.Count != next[e.Worker] {
			t.Fatalf("worker %d: event %d arrived when %d was due", e.Worker, e.Count, next[e.Worker])
		}
		next[e.Worker]++
	}
	// After Close an event goes straight through.
	q.Observe(Event{Worker: 9})
	if n := len(rec.events); n != producers*each+1 || rec.events[n-1].Worker != 9 {
		t.Fatalf("an event observed after Close was not delivered at once (%d events)", n)
	}
	q.Close() // twice is harmless
}

func TestEventQueueDoesNotWaitForASlowObserver(t *testing.T) {
	rec := &recorder{delay: 20 * time.Millisecond}
	q := NewEventQueue(rec)
	start := time.Now()
	for i := range 5 {
		q.Observe(Event{Count: i})
	}
	queued := time.Since(start)
	q.Close()
	// Five deliveries take at least 100 ms; queueing them takes none of it.
	if queued >= 20*time.Millisecond {
		t.Fatalf("queueing 5 events took %v behind an observer that takes 20 ms each", queued)
	}
	if len(rec.events) != 5 {
		t.Fatalf("observer got %d events, want 5", len(rec.events))
	}
}
