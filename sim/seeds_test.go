package sim

import (
	"sync/atomic"
	"testing"
)

// Summarize: the mean and range of throughput, the mean of GPU busy, and
// the seeds with an OOM, a failed partition or an unended run.
func TestSummarizeCountsSeeds(t *testing.T) {
	split3 := Setup{Design: "split", WorkersPerDevice: 3}
	reps := []*Report{
		{Setup: split3, Seed: 7, Throughput: 1, GPUBusyPct: 10, Complete: true},
		{Setup: split3, Seed: 8, Throughput: 3, GPUBusyPct: 20, OOMs: 2, Complete: true},
		{Setup: split3, Seed: 9, Throughput: 2, GPUBusyPct: 30, Failed: 1},
	}
	s := Summarize(reps)
	if s.Seeds != 3 || s.FirstSeed != 7 || s.Design != "split" || s.WorkersPerDevice != 3 {
		t.Errorf("summary names %d seeds from %d of %s × %d, want 3 from 7 of split × 3", s.Seeds, s.FirstSeed, s.Design, s.WorkersPerDevice)
	}
	if s.ThroughputMean != 2 || s.ThroughputLeast != 1 || s.ThroughputMost != 3 || s.GPUBusyMeanPct != 20 {
		t.Errorf("throughput %g (%g to %g), busy %g; want 2 (1 to 3), 20", s.ThroughputMean, s.ThroughputLeast, s.ThroughputMost, s.GPUBusyMeanPct)
	}
	if s.WithOOM != 1 || s.WithFailed != 1 || s.Incomplete != 1 {
		t.Errorf("seeds with an OOM %d, a failed partition %d, unended %d; want 1 each", s.WithOOM, s.WithFailed, s.Incomplete)
	}
}

// Seeds runs the seeds from the one asked on, each the run that seed gives
// alone.
func TestSeedsRunsConsecutiveSeeds(t *testing.T) {
	scn, err := LoadScenario("phase10-devsync")
	if err != nil {
		t.Fatal(err)
	}
	first := uint64(7)
	reps, err := Seeds(scn, Options{Design: "split-devsync", Workers: 3, Seed: &first}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 3 {
		t.Fatalf("%d reports, want 3", len(reps))
	}
	for i, r := range reps {
		seed := first + uint64(i)
		alone, err := Run(scn, Options{Design: "split-devsync", Workers: 3, Seed: &seed})
		if err != nil {
			t.Fatal(err)
		}
		if r.Seed != seed || r.Throughput != alone.Report.Throughput || r.OOMs != alone.Report.OOMs {
			t.Errorf("report %d: seed %d, %g partitions/s, %d OOMs; seed %d alone gives %g, %d",
				i, r.Seed, r.Throughput, r.OOMs, seed, alone.Report.Throughput, alone.Report.OOMs)
		}
	}
	if reps[0].Throughput == reps[1].Throughput && reps[1].Throughput == reps[2].Throughput {
		t.Errorf("three seeds gave one throughput (%g): the seed did not reach the run", reps[0].Throughput)
	}
	if _, err := Seeds(scn, Options{}, 0); err == nil {
		t.Error("Seeds with no seed to run: no error")
	}
}

// SeedDone is called once for each seed's run, seeds run side by side.
func TestSeedDoneCountsEachSeed(t *testing.T) {
	scn, err := LoadScenario("phase10-devsync")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	sums, err := CompareSeeds(scn, Options{SeedDone: func() { n.Add(1) }}, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(3 * len(sums)); n.Load() != want || len(sums) == 0 {
		t.Errorf("SeedDone called %d times for %d rows of 3 seeds, want %d", n.Load(), len(sums), want)
	}
}
