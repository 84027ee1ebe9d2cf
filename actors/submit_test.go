package actors_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/cuzk/cuzk/actors"
)

type refusingJournal struct{ *memJournal }

func (refusingJournal) RecordJob(JobSpec) error { return errors.New("disk full") }

func TestSubmitRefusesBadJobs(t *testing.T) {
	r := newRig(t, Config{Design: "split"}, 1, 64*gib, newFakeExec(0, 0))
	for _, c := range []struct {
		job  JobSpec
		want string
	}{
		{JobSpec{Partitions: 1, VRAM: gib}, "empty job id"},
		{JobSpec{ID: "a", VRAM: gib}, "0 partitions"},
		{JobSpec{ID: "a", Partitions: 1}, "VRAM"},
		{JobSpec{ID: "a", Partitions: 2, VRAM: gib, Pending: []int{2}}, "out of range"},
		{JobSpec{ID: "a", Partitions: 2, VRAM: gib, Priority: 7}, "priority"},
	} {
		if err := r.eng.Submit(c.job); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Submit(%+v) = %v, want an error about %q", c.job, err, c.want)
		}
	}
	// A job in the engine is not taken twice; once done, it may come again
	// (to retry the partitions that failed).
	gate := make(chan struct{})
	r.exec.mu.Lock()
	r.exec.gates["ok/0 synthesize"] = gate
	r.exec.mu.Unlock()
	if err := r.eng.Submit(JobSpec{ID: "ok", Partitions: 1, VRAM: gib}); err != nil {
		t.Fatal(err)
	}
	if err := r.eng.Submit(JobSpec{ID: "ok", Partitions: 1, VRAM: gib}); err == nil {
		t.Error("a job submitted twice was accepted")
	}
	close(gate)
	r.rec.wait(t, 1)
	if err := r.eng.Submit(JobSpec{ID: "ok", Partitions: 1, VRAM: gib}); err != nil {
		t.Errorf("a done job submitted again: %v", err)
	}
	r.rec.wait(t, 1)

	j := refusingJournal{newMemJournal()}
	r2 := newRig(t, Config{Design: "split", Journal: j}, 1, 64*gib, newFakeExec(0, 0))
	if err := r2.eng.Submit(JobSpec{ID: "x", Partitions: 1, VRAM: gib}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("journal refusal: %v", err)
	}
	r2.eng.Stop()
	if err := r2.eng.Submit(JobSpec{ID: "y", Partitions: 1, VRAM: gib}); err == nil {
		t.Error("Submit after Stop succeeded")
	}
}

func TestResumeProvesOnlyPending(t *testing.T) {
	r := newRig(t, Config{Design: "budget"}, 1, 64*gib, newFakeExec(0, 0))
	if err := r.eng.Submit(JobSpec{ID: "r", Partitions: 5, VRAM: gib, Pending: []int{1, 3}}); err != nil {
		t.Fatal(err)
	}
	if err := r.eng.Submit(JobSpec{ID: "none", Partitions: 5, VRAM: gib, Pending: []int{}}); err != nil {
		t.Fatal(err)
	}
	r.rec.wait(t, 2)
	var done []string
	for _, e := range r.rec.all() {
		if e.Kind == EvPartitionDone {
			done = append(done, e.Partition.String())
		}
	}
	if len(done) != 2 || !strings.Contains(strings.Join(done, " "), "r/1") || !strings.Contains(strings.Join(done, " "), "r/3") {
		t.Errorf("done %v, want r/1 and r/3", done)
	}
}

// TestDispatchSpreadsAcrossDevices: two partitions on two devices of three
// workers each run one per device, not both on the first.
func TestDispatchSpreadsAcrossDevices(t *testing.T) {
	exec := newFakeExec(0, 0)
	gate := make(chan struct{})
	exec.gates["s/0 synthesize"] = gate
	exec.gates["s/1 synthesize"] = gate
	r := newRig(t, Config{Design: "single", WorkersPerDevice: 3}, 2, 64*gib, exec)
	if err := r.eng.Submit(JobSpec{ID: "s", Partitions: 2, VRAM: gib}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for count(r.rec.all(), EvStageStart) < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(gate)
	r.rec.wait(t, 1)
	devices := map[int]int{}
	for _, e := range r.rec.all() {
		if e.Kind == EvStageStart && e.Stage == StageSynthesize {
			devices[e.Device]++
		}
	}
	if devices[0] != 1 || devices[1] != 1 {
		t.Errorf("partitions per device %v, want one each", devices)
	}
}

// Cancelling a job gives up its queued partitions at once and a running one
// when its attempt fails (the executor fails the next stage of a cancelled
// job); a partition proved before the cancel stays proved; other jobs go on.
func TestCancelGivesUpWhatIsNotProved(t *testing.T) {
	j := newMemJournal()
	exec := newFakeExec(0, 0)
	gate := make(chan struct{})
	exec.gates["c/0 prep"] = gate // partition 0 waits in prep, holding the only worker
	exec.failures["c/0 b_g2"] = 1 // ... and its next stage fails, as a cancelled job's does
	r := newRig(t, Config{Design: "budget", WorkersPerDevice: 1, MaxAttempts: 3, Journal: j}, 1, 64*gib, exec)
	if err := r.eng.Submit(JobSpec{ID: "c", Partitions: 3, VRAM: gib}); err != nil {
		t.Fatal(err)
	}
	if err := r.eng.Submit(JobSpec{ID: "other", Partitions: 2, VRAM: gib}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); count(r.rec.all(), EvStageStart) < 2; {
		if time.Now().After(deadline) {
			t.Fatal("partition 0 never reached prep")
		}
		time.Sleep(time.Millisecond)
	}
	if err := r.eng.Cancel("c"); err != nil {
		t.Fatal(err)
	}
	if err := r.eng.Cancel("nope"); err == nil {
		t.Error("cancel of an unknown job succeeded")
	}
	close(gate)
	ends := r.rec.wait(t, 2)
	byJob := map[string]Event{}
	for _, e := range ends {
		byJob[e.Partition.Job] = e
	}
	if e := byJob["c"]; !strings.Contains(e.Err, "cancelled: 3 of 3") || e.Count != 0 {
		t.Errorf("cancelled job ended with %+v", e)
	}
	if e := byJob["other"]; e.Err != "" || e.Count != 2 {
		t.Errorf("the other job ended with %+v", e)
	}
	// A lease's release reaches its lock after the worker reported the
	// attempt: wait for every grant's release.
	for deadline := time.Now().Add(10 * time.Second); count(r.rec.all(), EvLeaseGrant) != count(r.rec.all(), EvLeaseRelease); {
		if time.Now().After(deadline) {
			t.Fatal("leases never released")
		}
		time.Sleep(time.Millisecond)
	}
	events := r.rec.settled()
	if n := count(events, EvPartitionCancelled); n != 3 {
		t.Errorf("%d partitions cancelled, want 3", n)
	}
	if n := count(events, EvPartitionRetry); n != 0 {
		t.Errorf("%d retries of a cancelled job's partitions", n)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.cancelled) != 3 || len(j.failed) != 0 {
		t.Errorf("journal: cancelled %v, failed %v", j.cancelled, j.failed)
	}
	checkInvariants(t, events, 64*gib, map[string]int{"c": 3, "other": 2})
}
