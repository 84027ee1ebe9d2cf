package actors_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/cuzk/cuzk/actors"
)

// hostRig starts one device with one GPU worker (the budget design) and the
// host-memory gate at limit; every partition of the tests holds one GiB.
func hostRig(t *testing.T, limit int64, synth int, exec *fakeExec, mod func(*Config)) *rig {
	t.Helper()
	cfg := Config{Design: "budget", WorkersPerDevice: 1, HostMemLimit: limit, SynthWorkers: synth, MaxAttempts: 3}
	if mod != nil {
		mod(&cfg)
	}
	return newRig(t, cfg, 1, 64*gib, exec)
}

func hostJob(id string, n int, prio Priority) JobSpec {
	return JobSpec{ID: id, Partitions: n, Size: 1 << 10, VRAM: gib, HostBytes: gib, Priority: prio}
}

var openedMu sync.Mutex
var opened = map[chan struct{}]bool{}

// openOnce returns a function that opens gate unless it is open: a test
// opens its gates before it stops its rig, even when it fails half way.
func openOnce(gate chan struct{}) func() {
	return func() {
		openedMu.Lock()
		defer openedMu.Unlock()
		if !opened[gate] {
			opened[gate] = true
			close(gate)
		}
	}
}

// waitFor polls the events until cond holds (a few seconds at most).
func waitFor(t *testing.T, r *rig, what string, cond func([]Event) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond(r.rec.all()) {
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, e := range r.rec.all() {
				if e.Kind != EvDeviceOp && e.Kind != EvQueueDepth && e.Kind != EvVRAM {
					fmt.Fprintf(&b, "\n  %v kind %d dev %d worker %d %s %s bytes %d count %d %s", e.At, e.Kind, e.Device, e.Worker, e.Partition, e.Stage, e.Bytes, e.Count, e.Err)
				}
			}
			t.Fatalf("timed out waiting until %s; events:%s", what, b.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// hostHeld is the gate's ledger after the last EvHostMem: bytes, partitions,
// and the most partitions held at once.
func hostHeld(events []Event) (bytes int64, n, peakN int) {
	for _, e := range events {
		if e.Kind == EvHostMem {
			bytes, n = e.Bytes, e.Count
			peakN = max(peakN, n)
		}
	}
	return bytes, n, peakN
}

// checkHost asserts the gate's invariants seen from outside: the ledger
// never above limit, every EvHostMem's bytes those of its count of one-GiB
// partitions, and nothing held at the end.
func checkHost(t *testing.T, events []Event, limit int64) {
	t.Helper()
	for _, e := range events {
		if e.Kind != EvHostMem {
			continue
		}
		if e.Bytes > limit || e.Bytes < 0 {
			t.Errorf("host memory held %d bytes at %v, limit %d", e.Bytes, e.At, limit)
		}
		if e.Bytes != int64(e.Count)*gib {
			t.Errorf("host memory held %d bytes by %d one-GiB partitions at %v", e.Bytes, e.Count, e.At)
		}
	}
	if b, n, _ := hostHeld(events); b != 0 || n != 0 {
		t.Errorf("host memory still held at the end: %d bytes by %d partitions", b, n)
	}
}

// stageRuns lists, in order, the partitions that started stage st.
func stageRuns(events []Event, st Stage) []string {
	var out []string
	for _, e := range events {
		if e.Kind == EvStageStart && e.Stage == st {
			out = append(out, e.Partition.String())
		}
	}
	return out
}

func TestHostGateSynthesizesAheadWithinTheBudget(t *testing.T) {
	const k = 3
	exec := newFakeExec(time.Millisecond, time.Millisecond)
	gate := make(chan struct{})
	for i := range 8 {
		exec.gates[fmt.Sprintf("j/%d compute", i)] = gate // the GPU worker stays busy with its first partition
	}
	r := hostRig(t, k*gib, 8, exec, nil)
	t.Cleanup(openOnce(gate))
	if err := r.eng.Submit(hostJob("j", 8, PriorityNormal)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, fmt.Sprintf("%d partitions hold host memory", k), func(ev []Event) bool {
		_, n, _ := hostHeld(ev)
		return n == k && count(ev, EvReadyWait) == 1
	})
	// Eight synthesis slots, room for k: nothing more starts while the GPU
	// holds its partition, however long it takes.
	time.Sleep(50 * time.Millisecond)
	ev := r.rec.all()
	if got := stageRuns(ev, StageSynthesize); len(got) != k {
		t.Fatalf("with the GPU busy, %d syntheses started (%v), want the %d the budget holds", len(got), got, k)
	}
	for _, e := range ev {
		if e.Kind == EvStageStart && e.Stage == StageSynthesize && e.Device != -1 {
			t.Errorf("%s synthesized by worker %d of device %d, not by the host", e.Partition, e.Worker, e.Device)
		}
	}
	openOnce(gate)()
	if e := r.rec.wait(t, 1)[0]; e.Err != "" {
		t.Fatalf("job: %s", e.Err)
	}
	ev = r.rec.settled()
	checkInvariants(t, ev, 64*gib, map[string]int{"j": 8})
	checkHost(t, ev, k*gib)
	if _, _, peak := hostHeld(ev); peak != k {
		t.Errorf("at most %d partitions held at once, want %d", peak, k)
	}
	if n := len(stageRuns(ev, StageSynthesize)); n != 8 {
		t.Errorf("%d syntheses for 8 partitions", n)
	}
}

func TestHostGateSynthesisSlotsBoundTheConcurrency(t *testing.T) {
	exec := newFakeExec(time.Millisecond, time.Millisecond)
	gate := make(chan struct{})
	for i := range 4 {
		exec.gates[fmt.Sprintf("j/%d synthesize", i)] = gate
	}
	r := hostRig(t, 100*gib, 2, exec, nil)
	t.Cleanup(openOnce(gate))
	if err := r.eng.Submit(hostJob("j", 4, PriorityNormal)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "two syntheses start", func(ev []Event) bool { return len(stageRuns(ev, StageSynthesize)) == 2 })
	time.Sleep(30 * time.Millisecond)
	if got := stageRuns(r.rec.all(), StageSynthesize); len(got) != 2 {
		t.Fatalf("%d syntheses running with 2 slots: %v", len(got), got)
	}
	openOnce(gate)()
	if e := r.rec.wait(t, 1)[0]; e.Err != "" {
		t.Fatalf("job: %s", e.Err)
	}
	checkHost(t, r.rec.all(), 100*gib)
}

func TestHostGateCriticalIsTakenFirstFromTheReadyQueue(t *testing.T) {
	exec := newFakeExec(time.Millisecond, time.Millisecond)
	g0, g1 := make(chan struct{}), make(chan struct{})
	exec.gates["bulk/0 compute"] = g0
	exec.gates["bulk/1 compute"] = g1
	// Room for five: bulk/0 on the GPU and bulk/1-4 ready fill it. One
	// synthesis at a time, so that the partitions are ready in order.
	r := hostRig(t, 5*gib, 1, exec, nil)
	t.Cleanup(openOnce(g0))
	t.Cleanup(openOnce(g1))
	if err := r.eng.Submit(hostJob("bulk", 5, PriorityLow)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "the bulk job fills the budget", func(ev []Event) bool {
		_, n, _ := hostHeld(ev)
		return n == 5
	})
	if err := r.eng.Submit(hostJob("win", 2, PriorityCritical)); err != nil {
		t.Fatal(err)
	}
	// bulk/0 leaves: win/0 is synthesized in its room while bulk/1, the
	// head of the ready queue then, holds the GPU.
	openOnce(g0)()
	waitFor(t, r, "win/0 is prepared", func(ev []Event) bool {
		for _, e := range ev {
			if e.Kind == EvStageEnd && e.Stage == StagePrep && e.Partition.String() == "win/0" {
				return true
			}
		}
		return false
	})
	openOnce(g1)()
	for _, e := range r.rec.wait(t, 2) {
		if e.Err != "" {
			t.Fatalf("job %s: %s", e.Partition.Job, e.Err)
		}
	}
	ev := r.rec.all()
	checkHost(t, ev, 5*gib)
	if got, want := stageRuns(ev, StageSynthesize), []string{"bulk/0", "bulk/1", "bulk/2", "bulk/3", "bulk/4", "win/0", "win/1"}; !slices.Equal(got, want) {
		t.Errorf("synthesis order %v, want %v", got, want)
	}
	var gpu []string
	for _, e := range ev {
		if e.Kind == EvReadyWait {
			gpu = append(gpu, e.Partition.String())
		}
	}
	// win/0 overtakes bulk/2-4, which were ready before it.
	if len(gpu) < 3 || !slices.Equal(gpu[:3], []string{"bulk/0", "bulk/1", "win/0"}) {
		t.Errorf("GPU order %v, want bulk/0, bulk/1, then win/0", gpu)
	}
}

func TestHostGateCriticalSynthesizesFirst(t *testing.T) {
	exec := newFakeExec(time.Millisecond, time.Millisecond)
	gate := make(chan struct{})
	exec.gates["bulk/0 compute"] = gate
	r := hostRig(t, gib, 4, exec, nil) // one partition at a time
	t.Cleanup(openOnce(gate))
	if err := r.eng.Submit(hostJob("bulk", 3, PriorityLow)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "bulk/0 reaches the GPU", func(ev []Event) bool { return count(ev, EvReadyWait) == 1 })
	if err := r.eng.Submit(hostJob("win", 2, PriorityCritical)); err != nil {
		t.Fatal(err)
	}
	openOnce(gate)()
	r.rec.wait(t, 2)
	ev := r.rec.all()
	checkHost(t, ev, gib)
	if got, want := stageRuns(ev, StageSynthesize), []string{"bulk/0", "win/0", "win/1", "bulk/1", "bulk/2"}; !slices.Equal(got, want) {
		t.Errorf("synthesis order %v, want %v", got, want)
	}
}

func TestHostGateRefusesAPartitionLargerThanTheBudget(t *testing.T) {
	r := hostRig(t, 4*gib, 2, newFakeExec(0, 0), nil)
	big := hostJob("big", 2, PriorityNormal)
	big.HostBytes = 5 * gib
	err := r.eng.Submit(big)
	if err == nil || !strings.Contains(err.Error(), "5.00 GiB") || !strings.Contains(err.Error(), "4.00 GiB") {
		t.Fatalf("a partition of 5 GiB under a 4 GiB limit: err = %v, want a refusal naming both", err)
	}
	unsized := hostJob("unsized", 1, PriorityNormal)
	unsized.HostBytes = 0
	if err := r.eng.Submit(unsized); err == nil || !strings.Contains(err.Error(), "host bytes") {
		t.Fatalf("a partition of unknown size under a limit: err = %v", err)
	}
	// The engine still proves what fits.
	if err := r.eng.Submit(hostJob("ok", 2, PriorityNormal)); err != nil {
		t.Fatal(err)
	}
	if e := r.rec.wait(t, 1)[0]; e.Err != "" || e.Partition.Job != "ok" {
		t.Fatalf("job %s: %q", e.Partition.Job, e.Err)
	}
}

func TestHostGateFailuresReturnTheBytes(t *testing.T) {
	for _, consumed := range []bool{false, true} {
		t.Run(fmt.Sprintf("prep-consumed=%v", consumed), func(t *testing.T) {
			exec := newFakeExec(time.Millisecond, time.Millisecond)
			exec.failures["j/1 synthesize"] = 1 // retried, then proved
			exec.failures["j/2 prep"] = 99      // failed for good
			exec.failures["j/3 compute"] = 1    // a device failure of a prepared partition
			journal := newMemJournal()
			r := hostRig(t, 2*gib, 2, exec, func(c *Config) { c.PrepConsumed = consumed; c.Journal = journal })
			if err := r.eng.Submit(hostJob("j", 5, PriorityNormal)); err != nil {
				t.Fatal(err)
			}
			e := r.rec.wait(t, 1)[0]
			if !strings.Contains(e.Err, "1 of 5 partitions failed") {
				t.Fatalf("job: %q, want j/2 failed", e.Err)
			}
			ev := r.rec.settled()
			checkInvariants(t, ev, 64*gib, map[string]int{"j": 5})
			checkHost(t, ev, 2*gib)
			runs := map[string]int{}
			for _, p := range stageRuns(ev, StageSynthesize) {
				runs[p]++
			}
			// A device failure starts again from the prepared data it
			// holds, unless the device part consumed it.
			want := 1
			if consumed {
				want = 2
			}
			if runs["j/3"] != want {
				t.Errorf("j/3 synthesized %d times after a device failure, want %d", runs["j/3"], want)
			}
			if runs["j/1"] != 2 || runs["j/2"] != 3 {
				t.Errorf("syntheses %v: want j/1 twice (one failure), j/2 three times (failed for good)", runs)
			}
			journal.mu.Lock()
			defer journal.mu.Unlock()
			if a := journal.attempts[PartitionID{"j", 3}]; a != 2 {
				t.Errorf("j/3: %d attempts recorded, want 2", a)
			}
			if _, failed := journal.failed[PartitionID{"j", 2}]; !failed {
				t.Errorf("j/2 not recorded as failed")
			}
		})
	}
}

func TestHostGateCancelReturnsTheBytes(t *testing.T) {
	exec := newFakeExec(time.Millisecond, time.Millisecond)
	gate := make(chan struct{})
	for i := range 8 {
		exec.gates[fmt.Sprintf("c/%d compute", i)] = gate // the GPU holds its first partition
	}
	exec.gates["c/3 synthesize"] = gate // one synthesis in flight at the cancel
	r := hostRig(t, 4*gib, 4, exec, nil)
	t.Cleanup(openOnce(gate))
	if err := r.eng.Submit(hostJob("c", 8, PriorityNormal)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "one partition on the GPU, two ready, one synthesizing", func(ev []Event) bool {
		prepared := 0
		for _, e := range ev {
			if e.Kind == EvStageEnd && e.Stage == StagePrep {
				prepared++
			}
		}
		_, n, _ := hostHeld(ev)
		return n == 4 && prepared == 3 && count(ev, EvReadyWait) == 1
	})
	if err := r.eng.Cancel("c"); err != nil {
		t.Fatal(err)
	}
	openOnce(gate)()
	e := r.rec.wait(t, 1)[0]
	if !strings.Contains(e.Err, "cancelled") {
		t.Fatalf("job: %q, want cancelled", e.Err)
	}
	ev := r.rec.settled()
	checkInvariants(t, ev, 64*gib, map[string]int{"c": 8})
	checkHost(t, ev, 4*gib)
	if n := count(ev, EvPartitionCancelled); n != 7 {
		t.Errorf("%d partitions cancelled, want the 7 not on the GPU; ready waits %d, done %d", n, count(ev, EvReadyWait), count(ev, EvPartitionDone))
	}
}
