package sim

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/trace"
)

// FitThrough recovers a profile's stage costs from a trace of a run whose
// syntheses overlap (eight at once under the host-memory gate, one GPU
// worker), which Calibrate refuses: the "measured" trace is the simulator's
// own run of a known profile, and the fit starts from costs that are off by
// factors of 0.6 to 1.7.
func TestFitThroughRecoversStageCosts(t *testing.T) {
	s, truth, n, o := fitCase(t)
	buf := simulatedTrace(t, s, o)
	if _, _, err := Calibrate(truth, buf, n, "synthetic"); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("Calibrate on overlapping syntheses: %v, want the overlap refused", err)
	}
	base := *truth
	base.Stages = maps.Clone(truth.Stages)
	factors := []float64{1.7, 0.6, 1.3, 0.8, 1.5}
	for i, st := range slices.Sorted(maps.Keys(base.Stages)) {
		sp := base.Stages[st]
		sp.PerConstraintNs *= factors[i%len(factors)]
		base.Stages[st] = sp
	}
	fit, fits, err := FitThrough(&base, s, o, n, Trace{Name: "synthetic", JSON: buf})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fits {
		want, got := truth.Stages[f.Stage].PerConstraintNs, fit.Stages[f.Stage].PerConstraintNs
		t.Logf("%-10s %2d spans, mean %8.2f ms measured, %8.2f simulated: %.4f ns a constraint (truth %.4f)", f.Stage, f.Count, f.MeanMs, f.SimMs, got, want)
		if f.MeanMs < 1e-3 {
			continue
		}
		if math.Abs(got-want) > 0.01*want || math.Abs(f.SimMs-f.MeanMs) > 0.01*f.MeanMs {
			t.Errorf("%s: fitted %.4f ns a constraint (simulated mean %.2f ms), truth %.4f (measured mean %.2f ms)", f.Stage, got, f.SimMs, want, f.MeanMs)
		}
	}
	// A base given at another reference size (the same partition, its
	// figures at a quarter of the size): the fit's profile, at the
	// trace's size, holds the same partition.
	quarter := base
	quarter.ReferenceConstraints = n / 4
	quarter.Partition.VRAMGiB = truth.Partition.VRAMGiB * float64(n/4) / float64(n)
	quarter.Partition.ScratchGiB = truth.Partition.ScratchGiB * float64(n/4) / float64(n)
	fit, _, err = FitThrough(&quarter, s, o, n, Trace{Name: "synthetic", JSON: buf})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fit.PartitionVRAM(n), truth.PartitionVRAM(n); math.Abs(float64(got-want)) > 1e-3*float64(want) {
		t.Errorf("base at a quarter of the size: a partition of %d constraints holds %d bytes in the fit, %d in truth", n, got, want)
	}
}

// A trace without the profile's stages, or no partition size, is an error
// that says so, not a fit.
func TestFitThroughBadInput(t *testing.T) {
	s, _, _, _ := fitCase(t)
	tr := []byte(`{"traceEvents":[{"name":"synthesize","ph":"X","ts":0,"dur":1000}]}`)
	if _, _, err := FitThrough(s.profile, s, Options{Workers: 1}, s.Jobs[0].Size, Trace{Name: "tiny", JSON: tr}); err == nil || !strings.Contains(err.Error(), "no ") {
		t.Fatalf("a trace without most stages: %v, want the missing stage named", err)
	}
	if _, _, err := FitThrough(s.profile, s, Options{Workers: 1}, 0, Trace{Name: "tiny", JSON: tr}); err == nil {
		t.Fatal("partition size 0 accepted")
	}
}

// Repeated runs of one scenario pool their spans: two traces of the same run
// whose syntheses cost 0.7 and 1.3 times the truth (two processes of one
// command, one lucky, one not) fit a synthesis cost near the truth, where
// either trace alone fits its own.
func TestFitThroughPoolsRepeatedRuns(t *testing.T) {
	s, truth, n, o := fitCase(t)
	run := func(factor float64) Trace {
		p := *truth
		p.Stages = maps.Clone(truth.Stages)
		sp := p.Stages["synthesize"]
		sp.PerConstraintNs *= factor
		p.Stages["synthesize"] = sp
		sc := *s
		sc.profile = &p
		return Trace{Name: fmt.Sprintf("x%.1f", factor), JSON: simulatedTrace(t, &sc, o)}
	}
	lucky, unlucky := run(0.7), run(1.3)
	want := truth.Stages["synthesize"].PerConstraintNs
	synth := func(traces ...Trace) (float64, StageFit) {
		fit, fits, err := FitThrough(truth, s, o, n, traces...)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fits {
			if f.Stage == "synthesize" {
				return fit.Stages["synthesize"].PerConstraintNs, f
			}
		}
		t.Fatal("no synthesize fit")
		return 0, StageFit{}
	}
	alone, _ := synth(lucky)
	pooled, f := synth(lucky, unlucky)
	t.Logf("synthesize: truth %.4f ns a constraint; the lucky run alone %.4f; pooled with the unlucky %.4f (%d spans)", want, alone, pooled, f.Count)
	if math.Abs(alone-0.7*want) > 0.03*want {
		t.Errorf("the lucky run alone fits %.4f, want its own 0.7 × %.4f", alone, want)
	}
	if math.Abs(pooled-want) > 0.05*want {
		t.Errorf("two runs pooled fit %.4f, want near the truth %.4f", pooled, want)
	}
	if _, one := synth(lucky); f.Count != 2*one.Count {
		t.Errorf("pooled over %d spans, want both runs' %d", f.Count, 2*one.Count)
	}
	if _, _, err := FitThrough(truth, s, o, n); err == nil {
		t.Error("no trace accepted")
	}
	if _, _, err := FitThrough(truth, s, o, n, lucky, Trace{Name: "empty", JSON: []byte(`{"traceEvents":[]}`)}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("a repeat without the stages: %v, want it named", err)
	}
}

// simulatedTrace is the production-format trace of s's run on the simulator
// with o: a "measured" run of s's profile.
func simulatedTrace(t *testing.T, s *Scenario, o Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := trace.New(&buf)
	o.Observer = tw
	if _, err := Run(s, o); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fitCase is the run the fit tests trace (from the repository's root): the
// 2^24 mimc scenario under 16 GiB whose syntheses overlap under its host
// gate, its profile (the truth), its partition size, and budget on one
// worker.
func fitCase(t *testing.T) (s *Scenario, truth *Profile, n int, o Options) {
	t.Helper()
	t.Chdir("..")
	s, err := LoadScenario("docs/predictions/h200-mimc16m-16g-g-job.json")
	if err != nil {
		t.Fatal(err)
	}
	return s, s.profile, s.Jobs[0].Size, Options{Design: "budget", Workers: 1}
}

// aloneSpans keeps the spans that overlap no other: a span inside a long
// one is not alone, nor is one that begins before the one before it ends,
// nor one that touches no neighbour but a span ending after the next starts.
func TestAloneSpans(t *testing.T) {
	ev := func(ts, dur float64) traceEvent { return traceEvent{Ts: ts * 1000, Dur: dur * 1000} }
	got := aloneSpans([]traceEvent{
		ev(30, 5),  // alone: 28 ended before
		ev(0, 10),  // overlaps the next
		ev(5, 2),   // inside the one before
		ev(20, 8),  // alone
		ev(40, 20), // overlaps 50
		ev(50, 1),
		ev(70, 3), // alone, last
	})
	if want := []float64{8, 5, 3}; !slices.Equal(got, want) {
		t.Errorf("alone: %v, want %v", got, want)
	}
}
