package sim

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/metrics"
)

// fitRounds bounds FitThrough's rounds; fitTolerance is the relative
// difference between a simulated and a measured mean that ends them.
const (
	fitRounds    = 12
	fitTolerance = 1e-3
)

// FitThrough returns a copy of p whose stage costs are fitted through the
// simulator on the run a production trace recorded: scenario s (with o)
// describes that run (its design, workers, partitions and sizes, resident
// memory and host-memory gate), and each stage's per_constraint_ns is
// scaled, round by round, until the mean of its spans in a simulation of s
// equals the mean of its spans in the trace. Calibrate takes a stage's mean
// as its solo cost, which holds only where its spans never overlap; with
// syntheses ahead of the GPU (bench prove's host-memory gate runs several at
// once on the host's cores) the measured spans are the CPU model's shared
// ones, and this fit inverts that model. The device figures are p's (fit
// them first with CalibrateDevice). constraints is the partition size the
// costs are per-constraint at; it should be s's partition size. A stage
// whose measured mean is below a microsecond keeps that mean unscaled.
//
// A stage the rounds cannot fit (its simulated mean still off after
// fitRounds) takes as its cost the mean of its spans that overlapped no
// other of its spans, if it has minAloneSpans of them, and the others are
// fitted again beside it: where the CPU side just keeps up with the GPU, the
// model's synthesis spans jump with their cost (one more waits for another
// in the cores' lanes), and the rounds alternate on either side of the jump.
//
// Every trace given is a run of s: the same command repeated in other
// processes. Their spans are pooled, so that the costs are the runs' mean:
// a synthesis's time moves from process to process on one machine with
// nothing set differently (runs/h100-2026-12-06f c4: medians of 114, 267 and
// 150 ms in three such runs), and one process's figure carries its luck to
// every prediction.
func FitThrough(p *Profile, s *Scenario, o Options, constraints int, traces ...Trace) (*Profile, []StageFit, error) {
	if constraints <= 0 {
		return nil, nil, fmt.Errorf("fit: partition size %d: must be positive", constraints)
	}
	if len(traces) == 0 {
		return nil, nil, fmt.Errorf("fit: no trace of scenario %s's run", s.Name)
	}
	stages := slices.Sorted(maps.Keys(p.Stages))
	measured := map[string]spanMean{} // every trace's spans of each stage
	alone := map[string]spanMean{}    // those that overlapped no other of their stage in their trace
	var names []string
	for _, t := range traces {
		events, err := readTraceEvents(t.JSON, t.Name)
		if err != nil {
			return nil, nil, err
		}
		in := map[string]spanMean{}
		spans := map[string][]traceEvent{}
		for _, e := range events {
			if _, ok := p.Stages[e.Name]; ok && e.Ph == "X" {
				in[e.Name] = in[e.Name].add(e.Dur / 1000)
				spans[e.Name] = append(spans[e.Name], e)
			}
		}
		for st, ss := range spans {
			for _, ms := range aloneSpans(ss) {
				alone[st] = alone[st].add(ms)
			}
		}
		for _, st := range stages {
			m, ok := in[st]
			if !ok {
				return nil, nil, fmt.Errorf("fit: trace %s has no %s spans", t.Name, st)
			}
			all := measured[st]
			measured[st] = spanMean{sum: all.sum + m.sum, n: all.n + m.n}
		}
		names = append(names, t.Name)
	}
	from := "trace " + names[0]
	if len(names) > 1 {
		from = fmt.Sprintf("%d traces of one run (%s)", len(names), strings.Join(names, ", "))
	}
	cur := p.atReference(constraints)
	cur.Stages = maps.Clone(p.Stages)
	for _, st := range stages {
		sp := cur.Stages[st]
		sp.BaseMs = 0
		sp.PerConstraintNs = measured[st].mean() * 1e6 / float64(constraints)
		cur.Stages[st] = sp
	}
	sc := *s
	var sim map[string]float64 // the simulated spans' mean of each stage, ms
	// rounds scales every stage not fixed until the simulated means meet
	// the measured ones, and returns the stages still off by more than
	// fitTolerance after fitRounds, with how far off (relative).
	rounds := func(fixed map[string]bool) (map[string]float64, error) {
		var off map[string]float64
		for round := 0; round < fitRounds; round++ {
			if err := cur.validate(); err != nil {
				return nil, fmt.Errorf("fit: %w", err)
			}
			sc.profile = &cur
			m := metrics.New()
			oo := o
			oo.Observer = actors.Observers{m}
			if o.Observer != nil {
				oo.Observer = actors.Observers{m, o.Observer}
			}
			res, err := Run(&sc, oo)
			if err != nil {
				return nil, fmt.Errorf("fit: %w", err)
			}
			if !res.Report.Complete || res.Report.Failed != 0 {
				return nil, fmt.Errorf("fit: scenario %s did not complete on the simulator (%d partitions failed): it cannot stand for the traced run", s.Name, res.Report.Failed)
			}
			sim = map[string]float64{}
			for _, st := range m.Summary().Stages {
				sim[st.Stage] = float64(st.Mean) / float64(time.Millisecond)
			}
			off = map[string]float64{}
			for _, st := range stages {
				want, got := measured[st].mean(), sim[st]
				if fixed[st] || want < 1e-3 || got <= 0 {
					continue
				}
				if e := math.Abs(got-want) / want; e > fitTolerance {
					off[st] = e
				}
				sp := cur.Stages[st]
				sp.PerConstraintNs *= want / got
				cur.Stages[st] = sp
			}
			if len(off) == 0 {
				return nil, nil
			}
		}
		return off, nil
	}
	fixed := map[string]bool{}
	off, err := rounds(fixed)
	if err != nil {
		return nil, nil, err
	}
	// The stages left off take their spans alone (the doc comment), the
	// one furthest off first, the others fitted again beside it, until all
	// are fitted or none left off has such spans.
	for len(off) > 0 {
		worst := ""
		for _, st := range stages {
			if _, ok := off[st]; ok && alone[st].n >= minAloneSpans && (worst == "" || off[st] > off[worst]) {
				worst = st
			}
		}
		if worst == "" {
			break
		}
		sp := cur.Stages[worst]
		sp.PerConstraintNs = alone[worst].mean() * 1e6 / float64(constraints)
		cur.Stages[worst] = sp
		fixed[worst] = true
		if off, err = rounds(fixed); err != nil {
			return nil, nil, err
		}
	}
	var fits []StageFit
	for _, st := range stages {
		sp := cur.Stages[st]
		sp.PerConstraintNs = math.Round(sp.PerConstraintNs*1e4) / 1e4
		sp.Calibrated = true
		f := StageFit{Stage: st, Count: measured[st].n, MeanMs: measured[st].mean(), SimMs: sim[st]}
		if !fixed[st] {
			sp.Source = fmt.Sprintf("fitted through the simulator on %s (scenario %s): the per-constraint cost whose simulated spans' mean equals the measured mean over %d spans, partitions of %d constraints",
				from, s.Name, measured[st].n, constraints)
		} else {
			sp.Source = fmt.Sprintf("from %s (scenario %s): the mean of the %d of its %d spans that overlapped no other of its spans, partitions of %d constraints; fitted through the simulator, the simulated spans' mean did not settle on the measured %.1f ms in %d rounds (the spans wait on each other in the model from one cost to the next)",
				from, s.Name, alone[st].n, measured[st].n, constraints, measured[st].mean(), fitRounds)
			f.AloneCount, f.AloneMs = alone[st].n, alone[st].mean()
		}
		cur.Stages[st] = sp
		fits = append(fits, f)
	}
	if err := cur.validate(); err != nil {
		return nil, nil, fmt.Errorf("fit: %w", err)
	}
	return &cur, fits, nil
}

// minAloneSpans is how many spans that ran alone a stage needs for
// FitThrough to take its cost from them.
const minAloneSpans = 3

// aloneSpans gives the lengths, in ms, of the spans among ss (one stage's,
// of one trace) that overlapped no other of them.
func aloneSpans(ss []traceEvent) []float64 {
	ss = slices.Clone(ss)
	slices.SortFunc(ss, func(a, b traceEvent) int { return cmp.Compare(a.Ts, b.Ts) })
	var out []float64
	end := math.Inf(-1) // the latest end among the spans before i
	for i, e := range ss {
		overlaps := e.Ts < end || (i+1 < len(ss) && ss[i+1].Ts < e.Ts+e.Dur)
		end = math.Max(end, e.Ts+e.Dur)
		if !overlaps {
			out = append(out, e.Dur/1000)
		}
	}
	return out
}

// spanMean accumulates span lengths in milliseconds.
type spanMean struct {
	sum float64
	n   int
}

// add is m with one more span of ms.
func (m spanMean) add(ms float64) spanMean { return spanMean{sum: m.sum + ms, n: m.n + 1} }

// mean is 0 for no spans.
func (m spanMean) mean() float64 {
	if m.n == 0 {
		return 0
	}
	return m.sum / float64(m.n)
}
