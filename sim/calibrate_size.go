package sim

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/cuzk/cuzk/actors"
)

// SizedTrace is a one-worker trace of a run in the same plan as the first
// --trace's (key tier, layout, MSM tables, chunking) at another partition
// size.
type SizedTrace struct {
	Trace
	Constraints int
}

// SizeFit is what FitComputeSizes read and set: the compute spans' mean at
// each size (the first trace's as the profile's cost), and the line through
// them.
type SizeFit struct {
	Sizes           []int
	MeanMs          []float64
	BaseMs          float64
	PerConstraintNs float64
}

// FitComputeSizes gives the compute stage a fixed cost beside its cost per
// constraint, from its spans at two or more partition sizes: a least-squares
// line through the profile's compute cost at constraints (first is the trace
// it was fitted on) and the mean compute span of each sized trace, scaled by
// the profile's cost over first's mean (what the fit through the simulator
// added). One size says only the cost per constraint, and scaled from it a
// kernel's fixed part (launches, an MSM's bucket reduction, which do not grow
// with the points) grows with the size: porep-sha's compute on the H100 took
// 59.9, 97.9 and 166.3 ms at 2^22, 2^23 and 2^24 constraints (14.3, 11.7 and
// 9.9 ns a constraint), and 591-616 ms at 2^26 (8.8-9.2).
func FitComputeSizes(p *Profile, first Trace, constraints int, sized ...SizedTrace) (*Profile, SizeFit, error) {
	var f SizeFit
	if len(sized) == 0 {
		return p, f, nil
	}
	st := actors.StageCompute.String()
	sp, ok := p.Stages[st]
	if !ok {
		return nil, f, fmt.Errorf("calibrate: profile %s has no %s stage", p.Name, st)
	}
	firstMean, err := meanComputeMs(first)
	if err != nil {
		return nil, f, err
	}
	cost, err := p.stageCost(actors.StageCompute, constraints)
	if err != nil {
		return nil, f, err
	}
	costMs := float64(cost) / 1e6
	scale := costMs / firstMean
	f.Sizes, f.MeanMs = []int{constraints}, []float64{firstMean}
	xs, ys := []float64{float64(constraints)}, []float64{costMs}
	for _, s := range sized {
		if s.Constraints <= 0 {
			return nil, f, fmt.Errorf("calibrate: trace %s: partition size %d: must be positive", s.Name, s.Constraints)
		}
		if slices.Contains(f.Sizes, s.Constraints) {
			return nil, f, fmt.Errorf("calibrate: trace %s: size %d given twice: the sized traces need sizes of their own", s.Name, s.Constraints)
		}
		m, err := meanComputeMs(s.Trace)
		if err != nil {
			return nil, f, err
		}
		f.Sizes, f.MeanMs = append(f.Sizes, s.Constraints), append(f.MeanMs, m)
		xs, ys = append(xs, float64(s.Constraints)), append(ys, m*scale)
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i] / float64(len(xs))
		my += ys[i] / float64(len(xs))
	}
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	slope := sxy / sxx // ms a constraint
	base := my - slope*mx
	if slope <= 0 || base < 0 {
		return nil, f, fmt.Errorf("calibrate: the compute spans (%s) make no line with a fixed cost and a cost per constraint (%.3f ms + %.4f ns a constraint): give traces of one plan",
			sizesAndMeans(f), base, slope*1e6)
	}
	out := *p
	out.Stages = maps.Clone(p.Stages)
	sp.BaseMs = math.Round(base*1e3) / 1e3
	sp.PerConstraintNs = math.Round(slope*1e6*1e4) / 1e4
	sp.Exponent = 1
	sp.Source = strings.TrimSuffix(sp.Source, ".") + fmt.Sprintf("; base_ms and per_constraint_ns from a line through the compute spans' means at %d sizes (%s)", len(xs), sizesAndMeans(f))
	out.Stages[st] = sp
	f.BaseMs, f.PerConstraintNs = sp.BaseMs, sp.PerConstraintNs
	names := []Trace{first}
	for _, s := range sized {
		names = append(names, s.Trace)
	}
	if out.Calibration, err = withTraces(p.Calibration, names); err != nil {
		return nil, f, err
	}
	if err := out.validate(); err != nil {
		return nil, f, fmt.Errorf("calibrate: %w", err)
	}
	return &out, f, nil
}

// sizesAndMeans reads "4194275 constraints 59.9 ms, 16777215 constraints
// 166.3 ms", sizes in ascending order.
func sizesAndMeans(f SizeFit) string {
	idx := make([]int, len(f.Sizes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(f.Sizes[a], f.Sizes[b]) })
	var parts []string
	for _, i := range idx {
		parts = append(parts, fmt.Sprintf("%d constraints %.1f ms", f.Sizes[i], f.MeanMs[i]))
	}
	return strings.Join(parts, ", ")
}

// meanComputeMs is the mean of a one-worker trace's compute spans, those
// costSpans keeps, as Calibrate reads them; Calibrate itself refuses a bench
// prove trace, whose syntheses overlap.
func meanComputeMs(t Trace) (float64, error) {
	events, err := readTraceEvents(t.JSON, t.Name)
	if err != nil {
		return 0, err
	}
	var spans []traceEvent
	for _, e := range events {
		if e.Ph == "X" && e.Name == actors.StageCompute.String() {
			spans = append(spans, e)
		}
	}
	if len(spans) == 0 {
		return 0, fmt.Errorf("calibrate: trace %s has no compute spans", t.Name)
	}
	slices.SortFunc(spans, func(a, b traceEvent) int { return cmp.Compare(a.Ts, b.Ts) })
	spans = costSpans(actors.StageCompute.String(), spans)
	var sum float64
	for _, e := range spans {
		sum += e.Dur
	}
	return sum / float64(len(spans)) / 1000, nil
}
