package sim

import (
	"bytes"
	"testing"
)

// A farm of 100 hosts × 8 GPUs with host failures finishes every job with
// each partition proved once, the cluster's lease table's invariants held
// throughout (RunCluster panics otherwise), and the same seed gives the same
// report.
func TestClusterFarm(t *testing.T) {
	s, err := LoadClusterScenario("farm-100x8")
	if err != nil {
		t.Fatal(err)
	}
	rate, workers, err := MeasureGPURate(s.Host)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := RunCluster(s, rate, workers, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	r1.WriteText(&b)
	t.Log(b.String())
	if !r1.Complete || r1.Proved != 10000 || r1.Jobs != 1000 {
		t.Fatalf("not every job finished: %+v", r1)
	}
	if r1.Duplicates != 0 {
		t.Fatalf("%d partitions proved twice", r1.Duplicates)
	}
	if r1.Failures == 0 || r1.LostGPUS <= 0 {
		t.Fatalf("no host failed or no work was lost: the scenario does not test failures: %+v", r1)
	}
	r2, err := RunCluster(s, rate, workers, 0)
	if err != nil {
		t.Fatal(err)
	}
	if *r1 != *r2 {
		t.Fatalf("same seed, different reports:\n%+v\n%+v", r1, r2)
	}
}
