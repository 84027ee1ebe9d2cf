package sim

import (
	"bytes"
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
	t.Chdir("..")
	s, err := LoadScenario("docs/predictions/h200-mimc16m-16g-g-job.json")
	if err != nil {
		t.Fatal(err)
	}
	truth := s.profile
	n := s.Jobs[0].Size
	o := Options{Design: "budget", Workers: 1}
	var buf bytes.Buffer
	tw := trace.New(&buf)
	traced := o
	traced.Observer = tw
	if _, err := Run(s, traced); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Calibrate(truth, buf.Bytes(), n, "synthetic"); err == nil || !strings.Contains(err.Error(), "overlap") {
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
	fit, fits, err := FitThrough(&base, s, o, buf.Bytes(), "synthetic", n)
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
	fit, _, err = FitThrough(&quarter, s, o, buf.Bytes(), "synthetic", n)
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
	t.Chdir("..")
	s, err := LoadScenario("docs/predictions/h200-mimc16m-16g-g-job.json")
	if err != nil {
		t.Fatal(err)
	}
	tr := []byte(`{"traceEvents":[{"name":"synthesize","ph":"X","ts":0,"dur":1000}]}`)
	if _, _, err := FitThrough(s.profile, s, Options{Workers: 1}, tr, "tiny", s.Jobs[0].Size); err == nil || !strings.Contains(err.Error(), "no ") {
		t.Fatalf("a trace without most stages: %v, want the missing stage named", err)
	}
	if _, _, err := FitThrough(s.profile, s, Options{Workers: 1}, tr, "tiny", 0); err == nil {
		t.Fatal("partition size 0 accepted")
	}
}
