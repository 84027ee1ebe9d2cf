package par

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A lane's Range visits every index once, as Range does, and so does the nil
// lane's.
func TestLaneRangeCoversOnce(t *testing.T) {
	for _, l := range []*Lane{{rank: 1}, nil} {
		for _, tc := range []struct{ n, min, per int }{{0, 1, 1}, {1, 1024, 1}, {5000, 1024, 1}, {1 << 16, 7, 4}, {13, 1, 100}} {
			seen := make([]int, tc.n)
			var mu sync.Mutex
			l.Range(tc.n, tc.min, tc.per, func(lo, hi int) {
				mu.Lock()
				defer mu.Unlock()
				for i := lo; i < hi; i++ {
					seen[i]++
				}
			})
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("lane %v, n %d: index %d visited %d times", l, tc.n, i, c)
				}
			}
		}
		var ran [3]bool
		l.Do(func() { ran[0] = true }, func() { ran[1] = true }, func() { ran[2] = true })
		if ran != [3]bool{true, true, true} {
			t.Fatalf("lane %v: Do ran %v", l, ran)
		}
	}
}

// The chunks of the lane made first run first, whichever lane asked first;
// a lane's own batches run in the order they came. One worker makes the
// order of the runs the order of the queue.
func TestEarlierLaneRunsFirst(t *testing.T) {
	p := newCorePool(1)
	plug := make(chan struct{})
	started := make(chan struct{})
	go p.run(&Lane{rank: 0}, 1, func(int) { close(started); <-plug })
	<-started // the worker is busy: what follows queues

	early, late := &Lane{rank: 10}, &Lane{rank: 20}
	var mu sync.Mutex
	var order []string
	record := func(name string) func(k int) {
		return func(k int) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, name+string(rune('0'+k)))
		}
	}
	var wg sync.WaitGroup
	queue := func(l *Lane, n int, name string) {
		want := queued(p) + 1 // read before the batch can be pushed
		wg.Go(func() { p.run(l, n, record(name)) })
		waitQueued(t, p, want)
	}
	queue(late, 3, "L")
	queue(early, 2, "E")
	queue(early, 2, "F")
	close(plug)
	wg.Wait()
	if got, want := strings.Join(order, " "), "E0 E1 F0 F1 L0 L1 L2"; got != want {
		t.Fatalf("ran %s, want %s", got, want)
	}
}

// queued is the count of batches pushed to p so far.
func queued(p *corePool) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seq
}

// waitQueued waits until want batches have been pushed to p (in its queue
// or taken). want must be read before the batch's goroutine starts: read
// after, a batch already pushed would make it wait for one more.
func waitQueued(t *testing.T, p *corePool, want uint64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if queued(p) >= want {
			return
		}
	}
	t.Fatal("a batch was not queued within 30 s")
}

// A panic in a chunk comes back to the caller, and the pool keeps working.
func TestLanePanicReachesCaller(t *testing.T) {
	p := newCorePool(2)
	l := &Lane{rank: 1}
	func() {
		defer func() {
			v := recover()
			if v == nil || !strings.Contains(v.(string), "boom") {
				t.Fatalf("recovered %v, want the chunk's panic", v)
			}
		}()
		p.run(l, 4, func(k int) {
			if k == 2 {
				panic("boom")
			}
		})
		t.Fatal("run returned after a chunk panicked")
	}()
	n := 0
	var mu sync.Mutex
	p.run(l, 8, func(int) { mu.Lock(); n++; mu.Unlock() })
	if n != 8 {
		t.Fatalf("after the panic %d of 8 chunks ran", n)
	}
}

// Lanes made later rank later.
func TestNewLaneOrder(t *testing.T) {
	a, b := NewLane(), NewLane()
	if a == nil || b == nil {
		t.Skip("CUZK_CPU_LANES=off")
	}
	if a.rank >= b.rank {
		t.Fatalf("ranks %d then %d", a.rank, b.rank)
	}
}

// A long chunk that yields runs the chunks of lanes made before its own on
// its goroutine, with every worker busy; it never runs a later lane's.
func TestYieldRunsEarlierLanesOnly(t *testing.T) {
	p := newCorePool(1)
	early, late := &Lane{rank: 10}, &Lane{rank: 20}
	var earlyRan atomic.Bool
	started := make(chan struct{})
	var lateDone sync.WaitGroup
	lateDone.Go(func() {
		p.run(late, 1, func(int) {
			close(started)
			// The one worker is here: early's chunk runs only if this yields.
			for deadline := time.Now().Add(30 * time.Second); !earlyRan.Load() && time.Now().Before(deadline); {
				p.yield(late)
				time.Sleep(100 * time.Microsecond)
			}
		})
	})
	<-started
	p.run(early, 1, func(int) { earlyRan.Store(true) })
	lateDone.Wait()
	if !earlyRan.Load() {
		t.Fatal("the earlier lane's chunk did not run while the later lane's chunk yielded")
	}

	// The other way round: the early chunk yields while a later batch waits.
	var lateRan atomic.Bool
	started = make(chan struct{})
	var earlyDone sync.WaitGroup
	release := make(chan struct{})
	earlyDone.Go(func() {
		p.run(early, 1, func(int) {
			close(started)
			<-release
			for range 100 {
				p.yield(early)
			}
			if lateRan.Load() {
				t.Error("an earlier lane's yield ran a later lane's chunk")
			}
		})
	})
	<-started
	want := queued(p) + 1
	var lateWait sync.WaitGroup
	lateWait.Go(func() { p.run(late, 1, func(int) { lateRan.Store(true) }) })
	waitQueued(t, p, want)
	close(release)
	earlyDone.Wait()
	lateWait.Wait()
	if !lateRan.Load() {
		t.Fatal("the later lane's chunk never ran")
	}
	if (&Lane{rank: 1}).Before(nil) || !early.Before(late) || late.Before(early) {
		t.Fatal("Before does not follow the ranks")
	}
}

// Held, a later lane's chunk waits in Yield while an earlier lane has work
// running, and goes on when that work ends; it runs the earlier lane's
// queued chunks meanwhile. Not held, Yield returns at once.
func TestHoldWaitsForEarlierLanes(t *testing.T) {
	p := newCorePool(2)
	p.holdLanes = 1 // the early lane alone runs while held
	early, late := &Lane{rank: 10}, &Lane{rank: 20}
	plug := make(chan struct{})
	running := make(chan struct{})
	earlyDone := make(chan struct{})
	go func() {
		p.run(early, 1, func(int) { close(running); <-plug })
		close(earlyDone)
	}()
	<-running

	// Not held: the later lane's yield returns although the early lane runs.
	yielded := make(chan struct{})
	go p.run(late, 1, func(int) { p.yield(late); close(yielded) })
	select {
	case <-yielded:
	case <-time.After(5 * time.Second):
		t.Fatal("a yield without a hold waited")
	}

	p.hold(true)
	var after atomic.Bool
	lateDone := make(chan struct{})
	go func() {
		p.run(late, 1, func(int) {
			p.yield(late)
			after.Store(true)
		})
		close(lateDone)
	}()
	// The early lane queues more work while the late chunk is held: one
	// worker runs the early chunk, the other is the held one, so the new
	// chunk runs only if the held chunk takes it.
	ranQueued := make(chan struct{})
	go p.run(early, 1, func(int) { close(ranQueued) })
	select {
	case <-ranQueued:
	case <-time.After(5 * time.Second):
		t.Fatal("the held chunk did not run the earlier lane's queued chunk")
	}
	time.Sleep(20 * time.Millisecond)
	if after.Load() {
		t.Fatal("held, the later lane went on while the earlier lane's chunk ran")
	}
	close(plug)
	<-earlyDone
	select {
	case <-lateDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the later lane stayed held after the earlier lane's work ended")
	}
	if !after.Load() {
		t.Fatal("the later lane's chunk did not finish")
	}

	// The earliest lane is never held, and lifting the hold releases the rest.
	plug2 := make(chan struct{})
	running2 := make(chan struct{})
	go p.run(early, 1, func(int) { close(running2); <-plug2 })
	<-running2
	released := make(chan struct{})
	go p.run(late, 1, func(int) { p.yield(late); close(released) })
	time.Sleep(20 * time.Millisecond)
	select {
	case <-released:
		t.Fatal("held, the later lane went on")
	default:
	}
	p.hold(false)
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("lifting the hold did not release the later lane")
	}
	close(plug2)
}

// A hold lets the two earliest lanes with work run, and holds the third.
func TestHoldAdmitsTwoLanes(t *testing.T) {
	p := newCorePool(3)
	first, second, third := &Lane{rank: 10}, &Lane{rank: 20}, &Lane{rank: 30}
	plug := make(chan struct{})
	running := make(chan struct{})
	firstDone := make(chan struct{})
	go func() {
		p.run(first, 1, func(int) { close(running); <-plug })
		close(firstDone)
	}()
	<-running
	p.hold(true)
	defer p.hold(false)
	thirdWent := make(chan struct{})
	thirdStarted := make(chan struct{})
	go p.run(third, 1, func(int) { close(thirdStarted); p.yield(third); close(thirdWent) })
	<-thirdStarted
	// Two lanes have work (first, third): the third is the second earliest.
	select {
	case <-thirdWent:
	case <-time.After(5 * time.Second):
		t.Fatal("with two lanes at work the second was held")
	}
	plug2 := make(chan struct{})
	running2 := make(chan struct{})
	secondDone := make(chan struct{})
	go func() {
		p.run(second, 1, func(int) { close(running2); <-plug2 })
		close(secondDone)
	}()
	<-running2
	held := make(chan struct{})
	go p.run(third, 1, func(int) { p.yield(third); close(held) })
	time.Sleep(20 * time.Millisecond)
	select {
	case <-held:
		t.Fatal("the third lane with work went on while held")
	default:
	}
	close(plug)
	<-firstDone
	select {
	case <-held:
	case <-time.After(5 * time.Second):
		t.Fatal("the third lane stayed held with one earlier lane at work")
	}
	close(plug2)
	<-secondDone
}

// A chunk's Yield lets the goroutines outside the pool run: with one P, a
// goroutine made runnable while a chunk runs gets it at the chunk's next
// Yield, not at the runtime's next preemption (10 ms later).
func TestYieldLetsOtherGoroutinesRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := newCorePool(1)
	l := &Lane{rank: 1}
	var ran atomic.Bool
	go func() { ran.Store(true) }()
	yields := 0
	for !ran.Load() {
		if yields++; yields > 1000 {
			t.Fatal("a goroutine made runnable did not run in 1000 yields")
		}
		p.yield(l)
	}
	if yields > 2 {
		t.Errorf("the goroutine ran after %d yields, want the first", yields)
	}
}

// BenchmarkOutsideWait runs one long chunk a core on lanes, as eight
// partitions' solves do, while a goroutine outside the pool sleeps 200 µs
// at a time (as one waits for a GPU stream), and reports how late it woke:
// with the chunks calling Yield every 50 µs of work, and without.
//
//	go test -run - -bench OutsideWait ./internal/par/
func BenchmarkOutsideWait(b *testing.B) {
	for _, yielding := range []bool{true, false} {
		name := map[bool]string{true: "yielding", false: "not-yielding"}[yielding]
		b.Run(name, func(b *testing.B) {
			var late time.Duration
			wakes := 0
			for b.Loop() {
				var stop atomic.Bool
				var wg sync.WaitGroup
				wg.Go(func() {
					l := NewLane()
					l.Range(runtime.GOMAXPROCS(0), 1, 1, func(lo, hi int) {
						for !stop.Load() {
							spinFor(50 * time.Microsecond)
							if yielding {
								l.Yield()
							}
						}
					})
				})
				time.Sleep(5 * time.Millisecond) // the chunks take the Ps
				for range 20 {
					t0 := time.Now()
					time.Sleep(200 * time.Microsecond)
					late += time.Since(t0) - 200*time.Microsecond
					wakes++
				}
				stop.Store(true)
				wg.Wait()
			}
			b.ReportMetric(float64(late.Microseconds())/float64(wakes), "late-us/wake")
		})
	}
}

// spinFor keeps the core busy for d without a scheduling point.
func spinFor(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
	}
}
