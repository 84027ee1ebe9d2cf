package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sim calibrate --fit-repeat pools the stage spans of repeated runs of the
// --trace's run: with a copy of a porep-sha trace whose syntheses took twice
// as long (the same run in a slower process), the fitted synthesis cost lies
// between the two traces' own, the other stages stay the first trace's, and
// the repeat without --fit-scenario is refused.
func TestSimCalibrateFitRepeat(t *testing.T) {
	t.Chdir("..")
	dir := t.TempDir()
	const c4 = "docs/runs/h100-2026-12-06e/c4/"
	first := c4 + "trace-budget-w1-16.00GiB-log20.json.gz"
	scenario := c4 + "scenario-budget-w1-16.00GiB-log20.json"
	raw, err := readMaybeGzip(first)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(raw, &tr); err != nil {
		t.Fatal(err)
	}
	slowed := 0
	for _, e := range tr.TraceEvents {
		if e["name"] == "synthesize" && e["ph"] == "X" {
			e["dur"] = 2 * e["dur"].(float64)
			slowed++
		}
	}
	if slowed == 0 {
		t.Fatal("no synthesize spans in the trace")
	}
	slow := filepath.Join(dir, "slow.json")
	raw, err = json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(slow, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	calibrate := func(sub string, trace string, extra ...string) (synth, compute float64, source string) {
		d := filepath.Join(dir, sub)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := calibrateAtSize(t, d, trace, scenario, extra...)
		s, c := p.Stages["synthesize"], p.Stages["compute"]
		return s.PerConstraintNs, c.PerConstraintNs, s.Source
	}
	fastS, fastC, _ := calibrate("fast", first)
	slowS, _, _ := calibrate("slow", slow)
	pooledS, pooledC, source := calibrate("pooled", first, "--fit-repeat", slow)
	t.Logf("synthesize: %.4f ns a constraint alone, %.4f with syntheses twice as long, %.4f pooled; compute %.4f alone, %.4f pooled", fastS, slowS, pooledS, fastC, pooledC)
	if !(slowS > 1.5*fastS) {
		t.Fatalf("the slowed trace fits %.4f against %.4f: the copy did not slow the syntheses", slowS, fastS)
	}
	if mid := (fastS + slowS) / 2; pooledS < fastS+0.25*(slowS-fastS) || pooledS > slowS-0.25*(slowS-fastS) {
		t.Errorf("pooled synthesis %.4f ns a constraint, want between the two runs' own (%.4f, %.4f; mid %.4f)", pooledS, fastS, slowS, mid)
	}
	if d := pooledC/fastC - 1; d > 0.02 || d < -0.02 {
		t.Errorf("compute %.4f pooled against %.4f alone: a stage the repeat did not change moved", pooledC, fastC)
	}
	if !strings.Contains(source, "2 traces of one run") {
		t.Errorf("the pooled fit's source %q does not say it pooled two traces", source)
	}
	if _, stderr, err := run(t, "sim", "calibrate", "--profile", "docs/predictions/h100-porepsha-lanes-base.json",
		"--trace", first, "--constraints", "1M", "--fit-repeat", slow); err == nil || !strings.Contains(err.Error()+stderr, "--fit-scenario") {
		t.Errorf("--fit-repeat without --fit-scenario: %v %s, want it refused", err, stderr)
	}
}
