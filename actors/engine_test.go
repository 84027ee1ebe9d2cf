package actors_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/emu"

	. "github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/runner"
)

const gib = 1 << 30

// fakeExec is an Executor whose stages sleep a little and can be told to
// fail, panic, or wait at a gate.
type fakeExec struct {
	stage   time.Duration
	kernel  time.Duration
	scratch int64 // pool bytes each kernel takes while it runs

	mu       sync.Mutex
	failures map[string]int // "job/p stage" → failures left
	panics   map[string]int
	gates    map[string]chan struct{}
	released map[PartitionID]int
}

func newFakeExec(stage, kernel time.Duration) *fakeExec {
	return &fakeExec{stage: stage, kernel: kernel, failures: map[string]int{}, panics: map[string]int{},
		gates: map[string]chan struct{}{}, released: map[PartitionID]int{}}
}

func (f *fakeExec) RunStage(ctx context.Context, w StageWork) error {
	key := fmt.Sprintf("%s %s", w.Partition, w.Stage)
	f.mu.Lock()
	gate := f.gates[key]
	fail := f.failures[key] > 0
	if fail {
		f.failures[key]--
	}
	boom := f.panics[key] > 0
	if boom {
		f.panics[key]--
	}
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	time.Sleep(f.stage)
	if boom {
		panic("stage exploded")
	}
	if fail {
		return errors.New("injected failure")
	}
	return nil
}

// Kernel's compute waits at the gate "job/p compute" when there is one, and
// fails while failures["job/p compute"] lasts.
func (f *fakeExec) Kernel(p PartitionID, device int) *gpu.Kernel {
	d := f.kernel
	key := p.String() + " compute"
	return &gpu.Kernel{Partition: p.String(), Scratch: f.scratch, Run: func(ctx context.Context) error {
		f.mu.Lock()
		gate := f.gates[key]
		fail := f.failures[key] > 0
		if fail {
			f.failures[key]--
		}
		f.mu.Unlock()
		if gate != nil {
			<-gate
		}
		time.Sleep(d)
		if fail {
			return errors.New("injected compute failure")
		}
		return nil
	}}
}

func (f *fakeExec) Release(p PartitionID) {
	f.mu.Lock()
	f.released[p]++
	f.mu.Unlock()
}

// recorder keeps every event and signals each finished job.
type recorder struct {
	mu     sync.Mutex
	events []Event
	jobs   chan Event
}

func newRecorder() *recorder { return &recorder{jobs: make(chan Event, 64)} }

func (r *recorder) Observe(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	if e.Kind == EvJobDone {
		r.jobs <- e
	}
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// settled returns the events once every lease granted has been released, or
// after five seconds, whichever comes first. A job's end is emitted by the
// scheduler while the lock actors may still be handling the last releases
// sent to them (a worker releases compute_mtx and goes on to its CPU stages),
// so a check of the leases at the job's end would race with them; a lease
// that is really leaked is still held after the wait, and checkInvariants
// reports it.
func (r *recorder) settled() []Event {
	deadline := time.Now().Add(5 * time.Second)
	for {
		events := r.all()
		held := 0
		for _, e := range events {
			switch e.Kind {
			case EvLeaseGrant:
				held++
			case EvLeaseRelease:
				held--
			}
		}
		if held == 0 || time.Now().After(deadline) {
			return events
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (r *recorder) wait(t *testing.T, n int) []Event {
	t.Helper()
	var out []Event
	timeout := time.After(60 * time.Second)
	for range n {
		select {
		case e := <-r.jobs:
			out = append(out, e)
		case <-timeout:
			t.Fatalf("timed out waiting for %d jobs (got %d)", n, len(out))
		}
	}
	return out
}

type rig struct {
	eng   *Engine
	rec   *recorder
	exec  *fakeExec
	devs  []*emu.Device
	infos []gpu.Info
}

func newRig(t *testing.T, cfg Config, devices int, capacity int64, exec *fakeExec) *rig {
	t.Helper()
	return newRigOn(t, cfg, devices, emu.Options{Capacity: capacity}, exec)
}

// newRigOn is newRig on emulated devices with opts (their index and pool
// policy set here).
func newRigOn(t *testing.T, cfg Config, devices int, opts emu.Options, exec *fakeExec) *rig {
	t.Helper()
	r := &rig{rec: newRecorder(), exec: exec}
	var gds []gpu.Device
	for i := range devices {
		o := opts
		o.Index, o.Pool = i, cfg.Pool
		d, err := emu.New(o)
		if err != nil {
			t.Fatal(err)
		}
		r.devs = append(r.devs, d)
		r.infos = append(r.infos, d.Info())
		gds = append(gds, d)
	}
	if cfg.Observer != nil {
		cfg.Observer = Observers{r.rec, cfg.Observer}
	} else {
		cfg.Observer = r.rec
	}
	rt := runner.NewRuntime(context.Background(), exec, gds, 1)
	eng, err := Start(rt, r.infos, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.eng = eng
	t.Cleanup(func() {
		eng.Stop()
		for _, d := range r.devs {
			d.Close()
		}
	})
	return r
}

// checkInvariants asserts what must hold of any run: a mutex has at most one
// holder, the budget never exceeds the device, the ledger never goes below
// zero (it may stand above the device while a free that has run is not yet
// seen: deviceActor.ledger), and every partition of every job ends exactly
// once.
func checkInvariants(t *testing.T, events []Event, capacity int64, jobs map[string]int) {
	t.Helper()
	type key struct {
		dev  int
		lock string
	}
	holders := map[key]map[int]int64{}
	done := map[PartitionID]int{}
	for _, e := range events {
		k := key{e.Device, e.Lock}
		switch e.Kind {
		case EvLeaseGrant:
			if holders[k] == nil {
				holders[k] = map[int]int64{}
			}
			if _, dup := holders[k][e.Worker]; dup {
				t.Errorf("worker %d granted %s on device %d twice", e.Worker, e.Lock, e.Device)
			}
			holders[k][e.Worker] = e.Bytes
			if e.Lock != "budget" && len(holders[k]) > 1 {
				t.Errorf("lock %s on device %d has %d holders at %v", e.Lock, e.Device, len(holders[k]), e.At)
			}
			var sum int64
			for _, b := range holders[k] {
				sum += b
			}
			if e.Lock == "budget" && sum > capacity {
				t.Errorf("budget on device %d: %d reserved > %d", e.Device, sum, capacity)
			}
		case EvLeaseRelease:
			if _, ok := holders[k][e.Worker]; !ok {
				t.Errorf("worker %d released %s on device %d without holding it", e.Worker, e.Lock, e.Device)
			}
			delete(holders[k], e.Worker)
		case EvVRAM:
			if e.Bytes < 0 {
				t.Errorf("device %d ledger at %d bytes", e.Device, e.Bytes)
			}
		case EvPartitionDone, EvPartitionFailed, EvPartitionCancelled:
			done[e.Partition]++
		}
	}
	for k, h := range holders {
		if len(h) != 0 {
			t.Errorf("lock %s on device %d still held by %v at the end", k.lock, k.dev, h)
		}
	}
	for job, n := range jobs {
		for i := range n {
			p := PartitionID{job, i}
			if done[p] != 1 {
				t.Errorf("partition %s ended %d times", p, done[p])
			}
		}
	}
}

func count(events []Event, kind EventKind) int {
	n := 0
	for _, e := range events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func TestDesignsFinishWithInvariants(t *testing.T) {
	for _, design := range Designs {
		t.Run(design, func(t *testing.T) {
			t.Parallel()
			capacity := int64(64 * gib)
			r := newRig(t, Config{Design: design, WorkersPerDevice: 3}, 2, capacity, newFakeExec(2*time.Millisecond, 5*time.Millisecond))
			jobs := map[string]int{"a": 6, "b": 5}
			for id, n := range jobs {
				if err := r.eng.Submit(JobSpec{ID: id, Partitions: n, Size: 1 << 10, VRAM: 12 * gib}); err != nil {
					t.Fatal(err)
				}
			}
			for _, e := range r.rec.wait(t, 2) {
				if e.Err != "" {
					t.Errorf("job %s: %s", e.Partition.Job, e.Err)
				}
			}
			events := r.rec.settled()
			checkInvariants(t, events, capacity, jobs)
			if n := count(events, EvOOM); n != 0 {
				t.Errorf("%d OOMs on a device with room for every worker", n)
			}
			for _, d := range r.devs {
				if s := d.Stats(); s.Peak > capacity {
					t.Errorf("device peak %d > capacity %d", s.Peak, capacity)
				}
			}
			devs := map[int]int{}
			for _, e := range events {
				if e.Kind == EvPartitionDone {
					devs[e.Device]++
				}
			}
			if len(devs) != 2 {
				t.Errorf("partitions ran on devices %v, want both", devs)
			}
		})
	}
}

func TestUnknownDesignRefused(t *testing.T) {
	_, err := Start(runner.NewRuntime(context.Background(), nil, nil, 1), []gpu.Info{{Index: 0, Total: gib}}, Config{Design: "nope"})
	if err == nil || !strings.Contains(err.Error(), "unknown design") {
		t.Fatalf("err = %v", err)
	}
}

func sortedLocks(m map[string]time.Duration) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
