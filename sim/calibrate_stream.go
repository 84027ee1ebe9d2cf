package sim

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// StreamStallFit is what a one-worker row run beside endless copies said of
// a streaming kernel against the same row alone.
type StreamStallFit struct {
	Alone, Beside     int     // compute stages timed in each (the first of each trace left out)
	AloneMs, BesideMs float64 // their medians
	// Duty is the kernels' own streaming at the profile's h2d_gbps over
	// AloneMs: the share of its run a stall of all its copy work would take.
	Duty float64
	// Stall is device.stream_stall: the share of Duty the kernels lost
	// beside the copies.
	Stall float64
}

// CalibrateStreamStall fits p's device.stream_stall from the compute stages
// of one-worker traces run beside endless host→device copies on another
// stream (`cuzk bench prove --copy-load`) against those of the same runs
// alone, at constraints constraints a partition, for a profile whose
// kernels stream their keys (partition.stream_gib). Every kernel beside the
// copies overlaps them all through, so the model has it take
// T·(1+kernel_slowdown_copy)/(1 − stall·duty), T its time alone and duty its
// stream's copy work at h2d_gbps over T; stall follows from the two
// medians. A figure below 0 (the kernels faster beside the copies: the
// machine's noise) is 0.
func CalibrateStreamStall(p *Profile, constraints int, alone, beside []Trace) (*Profile, StreamStallFit, error) {
	var f StreamStallFit
	bytes := p.PartitionStream(constraints)
	if bytes <= 0 {
		return nil, f, errors.New("calibrate: the profile's kernels stream no keys (partition.stream_gib 0; give --stream-gib): nothing for copies to stall")
	}
	a, err := computeSpansMs(alone)
	if err != nil {
		return nil, f, err
	}
	b, err := computeSpansMs(beside)
	if err != nil {
		return nil, f, err
	}
	if len(a) < 3 || len(b) < 3 {
		return nil, f, fmt.Errorf("calibrate: %d compute stages alone and %d beside copies; want 3 or more of each", len(a), len(b))
	}
	f.Alone, f.Beside = len(a), len(b)
	f.AloneMs, f.BesideMs = median(a), median(b)
	copyMs := float64(bytes) / (p.Device.H2DGBps * 1e9) * 1e3
	f.Duty = round(copyMs/f.AloneMs, 4)
	lost := 1 - f.AloneMs*(1+p.Device.KernelSlowdownCopy)/f.BesideMs
	f.Stall = round(max(lost, 0)/(copyMs/f.AloneMs), 3)
	f.AloneMs, f.BesideMs = round(f.AloneMs, 3), round(f.BesideMs, 3)
	out := *p
	stall := f.Stall
	out.Device.StreamStall = &stall
	if err := out.recordTraces(append(append([]Trace(nil), alone...), beside...)); err != nil {
		return nil, f, err
	}
	return &out, f, nil
}

// computeSpansMs is the compute stages of traces, in ms, each trace's first
// in time left out (its scratch grew the empty pool), as the stage costs
// take them.
func computeSpansMs(traces []Trace) ([]float64, error) {
	var out []float64
	for _, t := range traces {
		events, err := readTraceEvents(t.JSON, t.Name)
		if err != nil {
			return nil, err
		}
		var stages []traceEvent
		for _, e := range events {
			if e.Ph == "X" && e.Name == "compute" {
				stages = append(stages, e)
			}
		}
		slices.SortFunc(stages, func(a, b traceEvent) int { return cmp.Compare(a.Ts, b.Ts) })
		for _, e := range costSpans("compute", stages) {
			out = append(out, e.Dur/1e3)
		}
	}
	return out, nil
}
