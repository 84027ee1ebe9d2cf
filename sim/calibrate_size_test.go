package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/actors"
)

// computeTrace is a one-worker trace whose compute spans take ms each (the
// first, which grew the pool, twice that), with one span of every other
// stage the profile has.
func computeTrace(ms float64) []byte {
	var b traceBuilder
	for i := range 4 {
		at := float64(i) * 1000
		d := ms
		if i == 0 {
			d = 2 * ms
		}
		for j, st := range []string{"synthesize", "prep", "b_g2", "finalize"} {
			b.span(0, st, "bench/0", at+float64(j)*100, 10)
		}
		b.span(1, "compute", "bench/0", at+500, d)
	}
	return b.json()
}

// Compute at two sizes gives a fixed cost and a cost a constraint: 12 ms at
// 1,000 constraints and 30 ms at 4,000 are 6 ms + 6 µs a constraint, so
// 2,000 take 18 ms, where the cost a constraint alone gives 24.
func TestFitComputeSizes(t *testing.T) {
	base := contentionBase(t)
	first := Trace{"small", computeTrace(12)}
	p, _, err := Calibrate(base, first.JSON, 1000, first.Name)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := p.StageCost(actors.StageCompute, 2000)
	got, fit, err := FitComputeSizes(p, first, 1000, SizedTrace{Trace{"large", computeTrace(30)}, 4000})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := got.StageCost(actors.StageCompute, 2000)
	if before != 24*time.Millisecond || after != 18*time.Millisecond {
		t.Errorf("compute at 2,000 constraints: %v from one size, %v from two; want 24ms and 18ms", before, after)
	}
	if fit.BaseMs != 6 || fit.PerConstraintNs != 6000 || len(fit.Sizes) != 2 {
		t.Errorf("fit %+v, want base 6 ms, 6000 ns a constraint, 2 sizes", fit)
	}
	if p.Stages["compute"].BaseMs != 0 {
		t.Errorf("the fit changed the profile it was given")
	}
	// A span that shrinks with the size makes no line.
	if _, _, err := FitComputeSizes(p, first, 1000, SizedTrace{Trace{"odd", computeTrace(8)}, 4000}); err == nil || !strings.Contains(err.Error(), "no line") {
		t.Errorf("compute shorter at 4,000 constraints than at 1,000: got %v, want an error", err)
	}
	if _, _, err := FitComputeSizes(p, first, 1000, SizedTrace{Trace{"same", computeTrace(30)}, 1000}); err == nil {
		t.Errorf("a sized trace of the first trace's size: want an error")
	}
}

// A proving profile takes the card's device figures from its contention
// calibration and keeps its own CPU model and stages.
func TestWithDeviceOf(t *testing.T) {
	card := contentionBase(t)
	card.Device.MallocFreeWaitMsPerGiB = 3.25
	card.Host.Handoff = &HandoffProfile{NewestFirst: 0.9}
	p, err := LoadProfile("../docs/predictions/h200-porepsha64m-card.json")
	if err != nil {
		t.Fatal(err)
	}
	p.Host.CPUOrder, p.Host.CPUHold = CPULanes, 2
	got := p.WithDeviceOf(card)
	if got.Device.MallocFreeWaitMsPerGiB != 3.25 || got.Host.Handoff == nil || got.Host.Handoff.NewestFirst != 0.9 {
		t.Errorf("device %+v, handoff %+v: want the card's", got.Device, got.Host.Handoff)
	}
	if got.Host.Cores != p.Host.Cores || got.Host.CPUOrder != CPULanes || got.Host.CPUHold != 2 || got.Stages["compute"].PerConstraintNs != p.Stages["compute"].PerConstraintNs {
		t.Errorf("host %+v: want the proving profile's CPU model and stages", got.Host)
	}
	if p.Device.MallocFreeWaitMsPerGiB == 3.25 {
		t.Errorf("WithDeviceOf changed the profile it was given")
	}
	if err := got.validate(); err != nil {
		t.Error(err)
	}
}
