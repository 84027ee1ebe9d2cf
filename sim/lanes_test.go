package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
)

// Four syntheses of 4 cores each start at once on an 8-core host, beside a
// finalize of 2 cores. Shared, the five ask for 18 cores and all run at 8/18
// of their speed: every synthesis ends at 2.25 s, when the host has done the
// 18 core-seconds. In lanes the pool asks for 8 (all the host has) and gets
// 8/10 of the host, as Go shares its threads, finalize 2/10: 6.4 cores, 4 to
// the first synthesis (its whole width: done at 1 s), 2.4 to the second; the
// third and fourth wait. Finalize runs at 0.8 either way it is not the
// pool's, and ends at 1.25 s. The last synthesis ends at 2.4 s, not 2.25: at
// the end it runs alone, 4 cores wide, where shared all four end together.
func TestLanesServeEarlierPartitionsFirst(t *testing.T) {
	for _, tc := range []struct {
		order       string
		first, last time.Duration
	}{
		{CPUShared, 2250 * time.Millisecond, 2250 * time.Millisecond},
		{CPULanes, time.Second, 2400 * time.Millisecond},
	} {
		t.Run(tc.order, func(t *testing.T) {
			p := factsProfile(t)
			p.Host.Cores = 8
			p.Host.CPUOrder = tc.order
			p.Stages["synthesize"] = StageProfile{Cores: 4}
			p.Stages["finalize"] = StageProfile{Cores: 2}
			if err := p.validate(); err != nil {
				t.Fatal(err)
			}
			k := NewKernel(p, []int64{16 * gib}, gpu.DefaultPoolPolicy(), 1)
			var ends []time.Duration
			for i := range 4 {
				k.cpu.run(actors.PartitionID{Job: "j", Partition: i}, actors.StageSynthesize, time.Second, func() { ends = append(ends, k.Now()) })
			}
			var finalized time.Duration
			k.cpu.run(actors.PartitionID{Job: "old"}, actors.StageFinalize, time.Second, func() { finalized = k.Now() })
			k.RunUntil(time.Hour, func() bool { return false })
			if len(ends) != 4 {
				t.Fatalf("%d of 4 syntheses ended", len(ends))
			}
			near := func(got, want time.Duration) bool { return (got - want).Abs() < time.Millisecond }
			if !near(ends[0], tc.first) || !near(ends[3], tc.last) {
				t.Fatalf("syntheses ended at %v, want the first at %v and the last at %v", ends, tc.first, tc.last)
			}
			// Finalize is not the pool's: it gets its share either way.
			if tc.order == CPULanes && !near(finalized, 1250*time.Millisecond) {
				t.Fatalf("finalize ended at %v, want 1.25 s (8/10 of its 2 cores while the pool asks for all 8)", finalized)
			}
		})
	}
}

// A partition keeps its place from its synthesis to its prep: a prep of the
// first partition that starts after later syntheses goes before them.
func TestLanesPrepKeepsPlace(t *testing.T) {
	p := factsProfile(t)
	p.Host.Cores = 4
	p.Host.CPUOrder = CPULanes
	p.Stages["synthesize"] = StageProfile{Cores: 4}
	p.Stages["prep"] = StageProfile{Cores: 4}
	if err := p.validate(); err != nil {
		t.Fatal(err)
	}
	k := NewKernel(p, []int64{16 * gib}, gpu.DefaultPoolPolicy(), 1)
	var log []string
	note := func(s string) func() { return func() { log = append(log, fmt.Sprintf("%s@%v", s, k.Now())) } }
	first := actors.PartitionID{Job: "j", Partition: 0}
	k.cpu.run(first, actors.StageSynthesize, 100*time.Millisecond, func() {
		note("synth0")()
		k.cpu.run(first, actors.StagePrep, 100*time.Millisecond, note("prep0"))
	})
	k.cpu.run(actors.PartitionID{Job: "j", Partition: 1}, actors.StageSynthesize, 100*time.Millisecond, note("synth1"))
	k.RunUntil(time.Hour, func() bool { return false })
	want := "[synth0@100ms prep0@200ms synth1@300ms]"
	if got := fmt.Sprint(log); got != want {
		t.Fatalf("ran %s, want %s", got, want)
	}
}

// With cpu_hold 2, while no partition is prepared and waiting for its
// compute only the two earliest lanes synthesize, so they do not share
// the memory bandwidth with the later ones; a prepared partition lifts
// the hold, and prep is never held.
func TestHoldRunsTheEarliestLanes(t *testing.T) {
	for _, tc := range []struct {
		hold int
		want string
	}{
		// four syntheses at half the bandwidth each: twice what the host has
		{0, "[synth0@1.5s synth1@1.5s synth2@1.5s synth3@1.5s prep0@1.6s]"},
		// two at a time until prep0 ends at 1.1 s and lifts the hold
		{2, "[synth0@1s synth1@1s prep0@1.1s synth2@2s synth3@2.1s]"},
	} {
		t.Run(fmt.Sprint("hold ", tc.hold), func(t *testing.T) {
			p := factsProfile(t)
			p.Host.Cores = 8
			p.Host.CPUOrder = CPULanes
			p.Host.CPUHold = tc.hold
			p.Stages["synthesize"] = StageProfile{Cores: 2, MemBWShare: 0.5}
			p.Stages["prep"] = StageProfile{Cores: 2, MemBWShare: 0.5}
			if err := p.validate(); err != nil {
				t.Fatal(err)
			}
			k := NewKernel(p, []int64{16 * gib}, gpu.DefaultPoolPolicy(), 1)
			var log []string
			note := func(s string) func() { return func() { log = append(log, fmt.Sprintf("%s@%v", s, k.Now())) } }
			for i := range 4 {
				id := actors.PartitionID{Job: "j", Partition: i}
				k.cpu.run(id, actors.StageSynthesize, time.Second, func() {
					note(fmt.Sprint("synth", i))()
					if i == 0 {
						k.cpu.run(id, actors.StagePrep, 100*time.Millisecond, note("prep0"))
					}
				})
			}
			k.RunUntil(time.Hour, func() bool { return false })
			slices.Sort(log)
			want := strings.Fields(strings.Trim(tc.want, "[]"))
			slices.Sort(want)
			if fmt.Sprint(log) != fmt.Sprint(want) {
				t.Fatalf("ran %v, want %v", log, want)
			}
		})
	}
}

// A hold needs the lanes.
func TestHoldNeedsLanes(t *testing.T) {
	p := factsProfile(t)
	p.Host.CPUOrder = CPUShared
	p.Host.CPUHold = 2
	if err := p.validate(); err == nil || !strings.Contains(err.Error(), "cpu_hold") {
		t.Fatalf("cpu_hold with shared cores: %v", err)
	}
}
