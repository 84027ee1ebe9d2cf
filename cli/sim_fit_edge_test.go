package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/sim"
)

// The H200's porep-sha 2^26 calibration (runs/h200-2026-12-06k: two jobs,
// one worker, the whole card) sits where the CPU side just keeps up with
// the GPU: its syntheses take about 515 ms alone, started every 633 ms. The
// fit through the simulator never met its spans' mean there (the model's
// spans jump from about the cost to 1.55 times it with a few ms more, as one
// synthesis waits for another in the lanes), so synthesize takes its cost
// from the 12 of its 20 spans that overlapped no other; the other stages
// are fitted through the simulator beside it, as before.
func TestFitTakesSynthesisFromSpansAloneAtTheEdge(t *testing.T) {
	t.Chdir("..")
	dir := t.TempDir()
	runDir := "docs/runs/h200-2026-12-06k/"
	tr := untarFile(t, runDir+"atsize.tgz", "cal/trace-budget-w1-card-log26.json.gz", dir)
	out := filepath.Join(dir, "profile.json")
	_, stderr, err := run(t, "sim", "calibrate", "--profile", "docs/predictions/h100-porepsha-lanes-base.json",
		"--device-from", "sim/profiles/h200-contention-base.json", "--trace", tr, "--constraints", "67108404",
		"--stream-gib", "0", "--fit-scenario", runDir+"pred/fit.json", "--out", out)
	if err != nil {
		t.Fatalf("sim calibrate: %v\n%s", err, stderr)
	}
	p, err := sim.LoadProfile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(stderr, "\n") { // with --out, the fit's lines go to stderr
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = l
		}
	}
	if l := lines["synthesize"]; !strings.Contains(l, "the mean of the 12 spans that ran alone, 519.363 ms") {
		t.Errorf("synthesize: %q; want its cost from the 12 spans that ran alone (519.363 ms)", l)
	}
	if got := p.Stages["synthesize"].PerConstraintNs; got != 7.7392 {
		t.Errorf("synthesize: %.4f ns a constraint; want 519.363 ms at 67108404 constraints, 7.7392", got)
	}
	if s := p.Stages["synthesize"].Source; !strings.Contains(s, "overlapped no other") {
		t.Errorf("synthesize's source: %q", s)
	}
	for _, st := range []string{"compute", "prep", "finalize"} {
		if l := lines[st]; l == "" || strings.Contains(l, "ran alone") {
			t.Errorf("%s: %q; want it fitted through the simulator", st, l)
		}
	}
	// The committed profile of that call was fitted before the rule: its
	// synthesis is the rounds' last (538.5 ms).
	committed, err := sim.LoadProfile(runDir + "pred/profile.json")
	if err != nil {
		t.Fatal(err)
	}
	if committed.Stages["synthesize"].PerConstraintNs != 8.0239 {
		t.Errorf("the committed profile's synthesis: %.4f", committed.Stages["synthesize"].PerConstraintNs)
	}
}
