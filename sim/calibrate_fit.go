package sim

import (
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
	var names []string
	for _, t := range traces {
		events, err := readTraceEvents(t.JSON, t.Name)
		if err != nil {
			return nil, nil, err
		}
		in := map[string]spanMean{}
		for _, e := range events {
			if _, ok := p.Stages[e.Name]; ok && e.Ph == "X" {
				in[e.Name] = in[e.Name].add(e.Dur / 1000)
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
	for round := 0; round < fitRounds; round++ {
		if err := cur.validate(); err != nil {
			return nil, nil, fmt.Errorf("fit: %w", err)
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
			return nil, nil, fmt.Errorf("fit: %w", err)
		}
		if !res.Report.Complete || res.Report.Failed != 0 {
			return nil, nil, fmt.Errorf("fit: scenario %s did not complete on the simulator (%d partitions failed): it cannot stand for the traced run", s.Name, res.Report.Failed)
		}
		sim = map[string]float64{}
		for _, st := range m.Summary().Stages {
			sim[st.Stage] = float64(st.Mean) / float64(time.Millisecond)
		}
		worst := 0.0
		for _, st := range stages {
			want, got := measured[st].mean(), sim[st]
			if want < 1e-3 || got <= 0 {
				continue
			}
			worst = math.Max(worst, math.Abs(got-want)/want)
			sp := cur.Stages[st]
			sp.PerConstraintNs *= want / got
			cur.Stages[st] = sp
		}
		if worst <= fitTolerance {
			break
		}
	}
	var fits []StageFit
	for _, st := range stages {
		sp := cur.Stages[st]
		sp.PerConstraintNs = math.Round(sp.PerConstraintNs*1e4) / 1e4
		sp.Calibrated = true
		sp.Source = fmt.Sprintf("fitted through the simulator on %s (scenario %s): the per-constraint cost whose simulated spans' mean equals the measured mean over %d spans, partitions of %d constraints",
			from, s.Name, measured[st].n, constraints)
		cur.Stages[st] = sp
		fits = append(fits, StageFit{Stage: st, Count: measured[st].n, MeanMs: measured[st].mean(), SimMs: sim[st]})
	}
	if err := cur.validate(); err != nil {
		return nil, nil, fmt.Errorf("fit: %w", err)
	}
	return &cur, fits, nil
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
