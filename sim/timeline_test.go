package sim

import (
	"bytes"
	"strings"
	"testing"
)

// A run that took no virtual time (a budget that refuses every partition at
// once, nothing before the device part) still has a timeline: its failures
// at the start of a millisecond's window.
func TestTimelineOfARunThatTookNoTime(t *testing.T) {
	s, err := ParseScenario("refused.json", []byte(`{"name": "refused", "devices": 1, "design": "budget",
		"workers_per_device": 2, "vram_gib": 0.5, "max_attempts": 1, "stages_before": [],
		"jobs": [{"id": "p", "partitions": 3}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(s, Options{Record: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.SimulatedS != 0 || res.Report.Failed != 3 {
		t.Fatalf("%g s simulated, %d failed; want a run of no time with 3 failed", res.Report.SimulatedS, res.Report.Failed)
	}
	var b bytes.Buffer
	if err := res.WriteTimeline(&b); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "failed at 0.000s"); n != 3 || !strings.Contains(b.String(), "</svg>") {
		t.Errorf("timeline marks %d failures, want 3, and a whole drawing:\n%s", n, b.String())
	}
}
