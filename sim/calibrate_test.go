package sim

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"os"
	"strings"
	"testing"
)

func readTrace(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Calibrating from the one-worker H200 trace gives the stage costs of the
// profile the two-GPU prediction was made with (by hand, from that trace),
// and the result is a valid profile.
func TestCalibrateFromTrace(t *testing.T) {
	base, err := LoadProfile("../docs/predictions/h200x2-mimc256k.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := LoadProfile("../docs/predictions/h200x2-mimc1m.json")
	if err != nil {
		t.Fatal(err)
	}
	name := "gpu-mimc1m-g2-budget-w1-card.json.gz"
	got, fits, err := Calibrate(base, readTrace(t, "../docs/traces/"+name), 1048305, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(fits) != len(base.Stages) {
		t.Fatalf("fits %+v", fits)
	}
	for st, w := range want.Stages {
		g := got.Stages[st]
		// The hand-made profile used means rounded to 10 µs.
		if d := math.Abs(g.PerConstraintNs - w.PerConstraintNs); d > 0.01*w.PerConstraintNs+0.01 {
			t.Errorf("%s: %.4f ns per constraint, the hand-made profile has %.4f", st, g.PerConstraintNs, w.PerConstraintNs)
		}
		if !g.Calibrated || !strings.Contains(g.Source, name) || g.Cores != base.Stages[st].Cores {
			t.Errorf("%s: %+v", st, g)
		}
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseProfile("calibrated", b); err != nil {
		t.Fatalf("calibrated profile does not load: %v", err)
	}
	if base.Stages["compute"].PerConstraintNs == got.Stages["compute"].PerConstraintNs {
		t.Error("the base profile was changed, or nothing was calibrated")
	}
}

// Stage costs must be solo: a trace of three workers is refused, and so is a
// trace without the stages.
func TestCalibrateRefuses(t *testing.T) {
	base, err := LoadProfile("../docs/predictions/h200x2-mimc256k.json")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Calibrate(base, readTrace(t, "../docs/traces/gpu-mimc256k-single-w3-card.json.gz"), 262076, "w3")
	if err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("a three-worker trace: got %v", err)
	}
	if _, _, err := Calibrate(base, []byte(`{"traceEvents":[]}`), 1000, "empty"); err == nil {
		t.Error("an empty trace was accepted")
	}
	if _, _, err := Calibrate(base, []byte(`not json`), 1000, "bad"); err == nil {
		t.Error("a malformed trace was accepted")
	}
	var buf bytes.Buffer
	buf.WriteString(`{"traceEvents":[]}`)
	if _, _, err := Calibrate(base, buf.Bytes(), 0, "zero"); err == nil {
		t.Error("a partition of 0 constraints was accepted")
	}
}
