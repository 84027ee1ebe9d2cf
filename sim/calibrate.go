package sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/cuzk/cuzk/actors"
)

// jitterMinMs is the shortest mean stage a coefficient of variation is read
// from.
const jitterMinMs = 1.0

// StageFit is what a trace said of one stage: how many spans it had and
// their mean length.
type StageFit struct {
	Stage  string
	Count  int
	MeanMs float64
	// SimMs is the simulated spans' mean after FitThrough (0 from Calibrate).
	SimMs float64
	// AloneCount and AloneMs: where FitThrough could not fit the stage
	// through the simulator, how many of its spans overlapped no other and
	// their mean, which gave its cost (0 otherwise).
	AloneCount int
	AloneMs    float64
}

// Calibrate returns a copy of p whose stage costs come from a production
// trace (trace.Writer's Chrome JSON) of partitions of the given size: each
// stage the profile models costs the mean of its spans in the trace, as
// per_constraint_ns at that size (base_ms 0, exponent and the CPU model's
// cores and bandwidth share kept). The spans must be solo costs, so a stage's
// spans may not overlap: record the trace with one worker on one device.
// name is the trace's name, recorded as each stage's source. Each stage
// whose mean is at least jitterMinMs (shorter ones vary by the clock's
// resolution) gets its spans' coefficient of variation as its own jitter,
// and the profile's jitter, which the other stages keep, becomes the root
// mean square of those. The run's first compute span is left out of both
// when others follow it: the first kernel's scratch grows the empty pool
// (about 10 ms on the H200: 108.4 ms against 98.0-98.2 for the other eleven
// in f26's one-worker single run on the card), a growth the device model
// charges on its own (pool_growth_ms), so that counted in the kernel's cost
// it would be charged twice, and in its jitter, spread over every kernel.
func Calibrate(p *Profile, traceJSON []byte, constraints int, name string) (*Profile, []StageFit, error) {
	if constraints <= 0 {
		return nil, nil, fmt.Errorf("calibrate: partition size %d: must be positive", constraints)
	}
	events, err := readTraceEvents(traceJSON, name)
	if err != nil {
		return nil, nil, err
	}
	type span struct{ start, end float64 }
	spans := map[string][]span{}
	for _, e := range events {
		if _, ok := p.Stages[e.Name]; ok && e.Ph == "X" {
			spans[e.Name] = append(spans[e.Name], span{e.Ts, e.Ts + e.Dur})
		}
	}
	out := *p
	out.Stages = make(map[string]StageProfile, len(p.Stages))
	out.ReferenceConstraints = constraints
	var fits []StageFit
	var cv2 float64 // the squared coefficients of variation of the stages long enough to read one from
	var cvs int
	for _, st := range slices.Sorted(maps.Keys(p.Stages)) {
		ss := spans[st]
		if len(ss) == 0 {
			return nil, nil, fmt.Errorf("calibrate: trace %s has no %s spans", name, st)
		}
		slices.SortFunc(ss, func(a, b span) int { return cmp.Compare(a.start, b.start) })
		for i, s := range ss {
			if i > 0 && s.start < ss[i-1].end {
				return nil, nil, fmt.Errorf("calibrate: trace %s has %s spans that overlap (at %.3f ms): stage costs must be solo, from a trace with one worker on one device",
					name, st, s.start/1000)
			}
		}
		about := fmt.Sprintf("mean of %d spans", len(ss))
		if c := costSpans(st, ss); len(c) < len(ss) {
			ss = c
			about = fmt.Sprintf("mean of %d spans after the first (its scratch grew the pool)", len(ss))
		}
		var sum float64
		for _, s := range ss {
			sum += s.end - s.start
		}
		mean := sum / float64(len(ss)) / 1000 // µs → ms
		sp := p.Stages[st]
		sp.Jitter = nil
		if len(ss) > 1 && mean >= jitterMinMs {
			var sq float64
			for _, s := range ss {
				d := (s.end-s.start)/1000 - mean
				sq += d * d
			}
			v := sq / float64(len(ss)-1) / (mean * mean)
			cv2 += v
			cvs++
			cv := jitterOf(v)
			sp.Jitter = &cv
		}
		sp.BaseMs = 0
		sp.PerConstraintNs = math.Round(mean*1e6/float64(constraints)*1e4) / 1e4
		sp.Calibrated = true
		sp.Source = fmt.Sprintf("%s, trace %s (one worker), partitions of %d constraints", about, name, constraints)
		out.Stages[st] = sp
		fits = append(fits, StageFit{Stage: st, Count: len(ss), MeanMs: mean})
	}
	if cvs > 0 {
		out.Jitter = jitterOf(cv2 / float64(cvs))
	}
	cal, err := json.Marshal(map[string]any{"fitted": true, "traces": []string{name}})
	if err != nil {
		return nil, nil, err
	}
	out.Calibration = cal
	if err := out.validate(); err != nil {
		return nil, nil, fmt.Errorf("calibrate: %w", err)
	}
	return &out, fits, nil
}

// jitterOf is the jitter of a squared coefficient of variation: its root,
// to four places, at most the profile's bound of 0.5.
func jitterOf(cv2 float64) float64 {
	return math.Min(0.5, math.Round(math.Sqrt(cv2)*1e4)/1e4)
}

// costSpans is the spans, in start order, that a stage's cost is read
// from: a compute stage's first is left out where more than two follow it
// (its scratch grew the empty pool, a growth the device model charges on its
// own).
func costSpans[S any](stage string, ss []S) []S {
	if stage == actors.StageCompute.String() && len(ss) > 2 {
		return ss[1:]
	}
	return ss
}

// traceEvent is one event of a production trace (Chrome's trace format), as
// the calibration reads it.
type traceEvent struct {
	Name string         `json:"name"`
	Ph   string         `json:"ph"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	Args map[string]any `json:"args"`
}

// readTraceEvents decodes the events of the trace named name.
func readTraceEvents(traceJSON []byte, name string) ([]traceEvent, error) {
	var tr struct {
		TraceEvents []traceEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(traceJSON, &tr); err != nil {
		return nil, fmt.Errorf("calibrate: trace %s: %w", name, err)
	}
	return tr.TraceEvents, nil
}
