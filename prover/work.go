package prover

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"
)

// Work is one partition's device section as data: the keys and prepared
// inputs it reads, the inputs staged on the device between the copy and the
// kernel, and the result. It travels in gpu.Kernel.Work, so that a device
// which owns a backend (gpuprove.Device) stages and computes it itself, with
// the stream and buffer its lock design placed it on as explicit arguments;
// any other device (the emulated one) runs it through Stage and Compute with
// a backend the caller chose. Its methods are safe for concurrent use.
type Work struct {
	// Ctx is the partition's job: cancelled, the stages stop.
	Ctx  context.Context
	Keys *Keys
	Prep *Prepared
	// Guard, when set, admits each step (stage, compute) before it starts
	// and hears when it ends: a service that is stopping refuses new device
	// work and waits for what runs.
	Guard Guard

	mu       sync.Mutex
	staged   Staged // staged at the copy, consumed by the kernel
	computed *Computed
	timings  Timings // "stage" and "compute", of the last attempt
}

// NewWork returns the device work of a prepared partition of k.
func NewWork(ctx context.Context, k *Keys, p *Prepared) *Work {
	if ctx == nil {
		ctx = context.Background()
	}
	return &Work{Ctx: ctx, Keys: k, Prep: p, timings: Timings{}}
}

// Stage copies the inputs to the device with b.
func (w *Work) Stage(b Backend) error {
	return w.StageWith(func() (Staged, error) { return b.Stage(w.Ctx, w.Keys, w.Prep) })
}

// Compute computes with b on what Stage left (staging first when nothing
// was staged).
func (w *Work) Compute(b Backend) error {
	return w.ComputeWith(
		func() (Staged, error) { return b.Stage(w.Ctx, w.Keys, w.Prep) },
		func(s Staged) (*Computed, error) { return b.Compute(w.Ctx, w.Keys, s) })
}

// StageWith stages with stage and keeps the result for the kernel; what an
// earlier attempt staged and left is released.
func (w *Work) StageWith(stage func() (Staged, error)) error {
	exit, err := w.enter()
	if err != nil {
		return err
	}
	defer exit()
	defer w.took("stage", time.Now())
	s, err := stage()
	if err != nil {
		return err
	}
	if old := w.swapStaged(s); old != nil {
		old.Release()
	}
	return nil
}

// ComputeWith computes with compute on what StageWith kept, staging with
// stage first when nothing was (a device that does not stage at the copy),
// and releases the staged inputs after.
func (w *Work) ComputeWith(stage func() (Staged, error), compute func(Staged) (*Computed, error)) error {
	exit, err := w.enter()
	if err != nil {
		return err
	}
	defer exit()
	defer w.took("compute", time.Now())
	s := w.swapStaged(nil)
	if s == nil {
		if s, err = stage(); err != nil {
			return err
		}
	}
	defer s.Release()
	c, err := compute(s)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.computed = c
	w.mu.Unlock()
	return nil
}

// Computed returns the result of the last successful compute, nil before.
func (w *Work) Computed() *Computed {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.computed
}

// Timings returns how long the last stage and compute took.
func (w *Work) Timings() Timings {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.timings)
}

// Release frees what was staged and not computed on (a failed attempt).
func (w *Work) Release() {
	if s := w.swapStaged(nil); s != nil {
		s.Release()
	}
}

// Guard admits device work; see Work.Guard.
type Guard interface {
	Enter() error
	Exit()
}

// enter checks that the step may start; exit is to be called when it ends.
func (w *Work) enter() (exit func(), err error) {
	if w.Ctx == nil || w.Keys == nil || w.Prep == nil {
		return nil, fmt.Errorf("device work without its context, keys or prepared inputs (made by NewWork?)")
	}
	if err := w.Ctx.Err(); err != nil {
		if cause := context.Cause(w.Ctx); cause != nil {
			err = cause
		}
		return nil, err
	}
	if w.Guard == nil {
		return func() {}, nil
	}
	if err := w.Guard.Enter(); err != nil {
		return nil, err
	}
	return w.Guard.Exit, nil
}

func (w *Work) swapStaged(s Staged) Staged {
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.staged
	w.staged = s
	return old
}

func (w *Work) took(stage string, start time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timings[stage] = time.Since(start)
}
