package sim

import "testing"

// A scenario says which CPU stages a worker runs around the device part:
// with synthesis in a pipeline of its own (as cuzk runs it) the workers
// feed the GPU sooner, and the stage left out is never charged.
func TestStagesAroundTheDevicePart(t *testing.T) {
	run := func(before string) *Report {
		t.Helper()
		s, err := ParseScenario("pipeline.json", []byte(`{"name": "pipeline", "devices": 1, "design": "budget",
			"workers_per_device": 2, `+before+` "jobs": [{"id": "p", "count": 2, "partitions": 10}]}`))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Report
	}
	all, ahead := run(""), run(`"stages_before": ["prep"],`)
	if all.Partitions != 20 || ahead.Partitions != 20 {
		t.Fatalf("proved %d and %d of 20", all.Partitions, ahead.Partitions)
	}
	if ahead.Throughput <= all.Throughput || ahead.GPUBusyPct <= all.GPUBusyPct {
		t.Errorf("synthesis elsewhere: %.3f partitions/s, %.1f %% busy; on the workers: %.3f, %.1f %%; want more and busier",
			ahead.Throughput, ahead.GPUBusyPct, all.Throughput, all.GPUBusyPct)
	}
}
