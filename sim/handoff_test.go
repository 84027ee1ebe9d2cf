package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/cuzk/cuzk/actors"
)

// Of two actors one handler wakes, the one woken last runs first when the
// share is 1 and the one woken first when it is 0; both run after what was
// already due at that instant (here, another event scheduled before them).
func TestHandoffOrder(t *testing.T) {
	for _, c := range []struct {
		share float64
		want  []string
	}{{1, []string{"handler", "due", "b", "a"}}, {0, []string{"handler", "due", "a", "b"}}} {
		var timeline []func()
		var ran []string
		h := newHandoff(HandoffProfile{NewestFirst: c.share}, 1, func(fn func()) { timeline = append(timeline, fn) })
		h.Schedule(func() {
			ran = append(ran, "handler")
			timeline = append(timeline, func() { ran = append(ran, "due") })
			h.Schedule(func() { ran = append(ran, "a") })
			h.Schedule(func() { ran = append(ran, "b") })
		})
		for len(timeline) > 0 {
			fn := timeline[0]
			timeline = timeline[1:]
			fn()
		}
		if !slices.Equal(ran, c.want) {
			t.Errorf("newest first %g: ran %v, want %v", c.share, ran, c.want)
		}
	}
}

// Of the actors two handlers woke at one instant, those the later handler
// woke run first when later_first is 1, and in the handlers' order when it
// is 0. Here one handler wakes two locks (the first woken runs first), and
// each lock wakes a worker.
func TestHandoffLaterFirst(t *testing.T) {
	for _, c := range []struct {
		share float64
		want  []string
	}{{0, []string{"handler", "lock a", "lock b", "A", "B"}}, {1, []string{"handler", "lock a", "lock b", "B", "A"}}} {
		var timeline []func()
		var ran []string
		h := newHandoff(HandoffProfile{LaterFirst: c.share}, 1, func(fn func()) { timeline = append(timeline, fn) })
		wakes := func(lock, worker string) func() {
			return func() {
				ran = append(ran, lock)
				h.Schedule(func() { ran = append(ran, worker) })
			}
		}
		h.Schedule(func() {
			ran = append(ran, "handler")
			h.Schedule(wakes("lock a", "A"))
			h.Schedule(wakes("lock b", "B"))
		})
		for len(timeline) > 0 {
			fn := timeline[0]
			timeline = timeline[1:]
			fn()
		}
		if !slices.Equal(ran, c.want) {
			t.Errorf("later first %g: ran %v, want %v", c.share, ran, c.want)
		}
	}
}

// devsyncObserver records the device-wide syncs of a run: whether each
// waited for another stream's work, and how long it took.
type devsyncObserver struct{ syncs []actors.Event }

func (o *devsyncObserver) Observe(e actors.Event) {
	if e.Kind == actors.EvDeviceOp && e.Op == "device_sync" {
		o.syncs = append(o.syncs, e)
	}
}

// split-devsync, two workers whose CPU stages end together: the first
// stages, releases mem_mtx and takes the free compute_mtx in one handler,
// and the second, granted mem_mtx, syncs the device.
//
// Taken in place (the default), compute_mtx lets the first worker launch in
// that handler, before its release of mem_mtx leaves it (a worker's
// messages are delivered when its handler is done): the second worker's
// sync waits for the whole kernel whatever the order of handoffs.
//
// Through the lock actors (lock_hops, the runtime before), the order
// decides: in the production runtime's order (the lock asked for last runs
// first) the first worker's launch comes before that sync, which waits for
// the whole kernel; with later_first 1 the mem lock's grant to the second
// worker overtakes the launch, and depth first the sync comes first: the
// sync finds the device idle.
func TestDeviceSyncCatchesTheKernelLaunchedFirst(t *testing.T) {
	const kernel = 100 * time.Millisecond
	run := func(h *HandoffProfile, hops bool) actors.Event {
		o := &devsyncObserver{}
		runTiedPair(t, kernel, func(p *Profile) { p.Host.Handoff = h }, hops, o)
		if len(o.syncs) != 2 {
			t.Fatalf("%d device syncs, want one a partition", len(o.syncs))
		}
		return o.syncs[1]
	}
	orders := []struct {
		name          string
		h             *HandoffProfile
		inPlace, hops bool // whether the second worker's sync waits, taken in place and with lock hops
	}{
		{"newest first", &HandoffProfile{NewestFirst: 1}, true, true},
		{"later first", &HandoffProfile{NewestFirst: 1, LaterFirst: 1}, true, false},
		{"depth first", nil, true, false},
	}
	for _, o := range orders {
		for _, hops := range []bool{false, true} {
			how, waits := "in place", o.inPlace
			if hops {
				how, waits = "lock hops", o.hops
			}
			s := run(o.h, hops)
			if waits && (!s.Waited || s.Took < kernel*9/10) {
				t.Errorf("%s, %s: the second worker's sync waited %v for %v, want the kernel's %v", o.name, how, s.Waited, s.Took, kernel)
			}
			if !waits && (s.Waited || s.Took > time.Millisecond) {
				t.Errorf("%s, %s: the second worker's sync waited %v for %v, want the device idle", o.name, how, s.Waited, s.Took)
			}
		}
	}
}

// runTiedPair runs split-devsync with two workers whose CPU stages (a 10 ms
// synthesis, nothing else) end together, two partitions of 1 GiB and a
// kernel of the given time, on a profile set adjusts, every lease through its
// lock actor when hops is set, and tells o of its events.
func runTiedPair(t *testing.T, kernel time.Duration, adjust func(*Profile), hops bool, o actors.Observer) {
	t.Helper()
	p := interferenceProfile(t, 0, 0)
	p.Partition = PartitionProfile{VRAMGiB: 1, Exponent: 1, CopyGiB: 0.01}
	for _, st := range []string{"synthesize", "prep", "b_g2", "finalize"} {
		sp := p.Stages[st]
		sp.BaseMs, sp.PerConstraintNs = 0, 0
		p.Stages[st] = sp
	}
	p.Stages["synthesize"] = StageProfile{BaseMs: 10, Cores: 1}
	p.Stages["compute"] = StageProfile{BaseMs: float64(kernel / time.Millisecond)}
	adjust(p)
	sc, err := NewScenario(Scenario{Name: "tie", Seed: 1, Devices: 1, VRAMGiB: 16, Design: "split-devsync",
		WorkersPerDevice: 2, LockHops: hops, Jobs: []JobConfig{{ID: "j", Partitions: 2}}}, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(sc, Options{Observer: o}); err != nil {
		t.Fatal(err)
	}
}
