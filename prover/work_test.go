package prover

import (
	"context"
	"errors"
	"testing"
)

type fakeStaged struct{ released int }

func (f *fakeStaged) Release() { f.released++ }

type refuse struct{ entered, exited int }

func (r *refuse) Enter() error {
	r.entered++
	if r.entered > 1 {
		return errors.New("stopping")
	}
	return nil
}
func (r *refuse) Exit() { r.exited++ }

// TestWorkStagesOnceAndReleases walks a Work through a retried stage, a
// compute on what was staged, a compute that must stage itself, a guard that
// refuses and a cancelled job.
func TestWorkStagesOnceAndReleases(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	w := NewWork(ctx, &Keys{}, &Prepared{})
	first, second := &fakeStaged{}, &fakeStaged{}
	next := []*fakeStaged{first, second}
	stage := func() (Staged, error) {
		s := next[0]
		next = next[1:]
		return s, nil
	}
	if err := w.StageWith(stage); err != nil {
		t.Fatal(err)
	}
	if err := w.StageWith(stage); err != nil { // a retried attempt stages again
		t.Fatal(err)
	}
	if first.released != 1 {
		t.Fatalf("the first attempt's staging was released %d times, want 1", first.released)
	}
	var seen Staged
	if err := w.ComputeWith(func() (Staged, error) { t.Fatal("staged again although staged"); return nil, nil },
		func(s Staged) (*Computed, error) { seen = s; return &Computed{}, nil }); err != nil {
		t.Fatal(err)
	}
	if seen != second || second.released != 1 || w.Computed() == nil {
		t.Fatalf("compute saw %v (want the second staging, released once: %d), computed %v", seen, second.released, w.Computed())
	}
	for _, k := range []string{"stage", "compute"} {
		if _, ok := w.Timings()[k]; !ok {
			t.Errorf("no %s timing", k)
		}
	}
	// Nothing staged: compute stages itself, and a failed compute keeps no
	// result and releases the staging.
	third := &fakeStaged{}
	w2 := NewWork(ctx, &Keys{}, &Prepared{})
	err := w2.ComputeWith(func() (Staged, error) { return third, nil },
		func(Staged) (*Computed, error) { return nil, errors.New("kernel failed") })
	if err == nil || third.released != 1 || w2.Computed() != nil {
		t.Fatalf("failed compute: err %v, released %d, computed %v", err, third.released, w2.Computed())
	}
	// A guard admits the first step and refuses the next.
	g := &refuse{}
	w3 := NewWork(ctx, &Keys{}, &Prepared{})
	w3.Guard = g
	if err := w3.StageWith(stage2(&fakeStaged{})); err != nil {
		t.Fatal(err)
	}
	if err := w3.ComputeWith(stage2(&fakeStaged{}), compute); err == nil || g.exited != 1 {
		t.Fatalf("guard: err %v, exits %d", err, g.exited)
	}
	w3.Release()
	// A cancelled job's work stops with the cause.
	cause := errors.New("job cancelled")
	cancel(cause)
	if err := w.StageWith(stage2(&fakeStaged{})); !errors.Is(err, cause) {
		t.Fatalf("stage of a cancelled job: %v, want %v", err, cause)
	}
	if err := (&Work{}).StageWith(stage2(&fakeStaged{})); err == nil {
		t.Fatal("a Work without keys staged")
	}
}

func stage2(s *fakeStaged) func() (Staged, error) { return func() (Staged, error) { return s, nil } }

func compute(Staged) (*Computed, error) { return &Computed{}, nil }
