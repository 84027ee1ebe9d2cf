package emu

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/facts"
)

// TestCUDAFacts replays the H200 probe (gpu/testdata/cuda_facts.txt) on the
// emulated device in real time, with the H200's measured copy bandwidth and
// pool growth cost, and holds it to the measured semantics: who waited for
// whom, what ran out of memory, what free memory cudaMemGetInfo saw, and about
// how long each call took. Kernels run one at a time here (the engine is not
// shared by rate), so how long they took is not compared.
func TestCUDAFacts(t *testing.T) {
	if testing.Short() {
		t.Skip("replays about 4 s of probes in real time")
	}
	datadriven.RunTest(t, "../testdata/cuda_facts.txt", func(t *testing.T, td *datadriven.TestData) string {
		p, err := facts.Parse(td)
		if err != nil {
			t.Fatal(err)
		}
		d, err := New(Options{Capacity: p.Bytes(), Pool: p.Policy(), CopyBandwidth: 55e9, PoolGrowCost: 10 * time.Millisecond, PoolRegrowCost: time.Millisecond,
			HostAllocCost: 38500 * time.Microsecond, FreeCopyWorkPerGiB: 2450 * time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		var scratch gpu.Buffer
		if n := p.ScratchBytes(); n > 0 {
			scratch = call(t, d, gpu.Op{Kind: gpu.OpMalloc, Bytes: n}).Buffer
		}
		kernels := facts.Kernels{Compute: func(dur time.Duration) *gpu.Kernel {
			return &gpu.Kernel{Partition: "k", Run: func(context.Context) error { time.Sleep(dur); return nil }}
		}}
		lines, err := facts.RunWallClock(d, p, kernels, scratch, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		out, err := facts.Judge(td.Expected, lines, facts.Tolerance{Slack: 30 * time.Millisecond, Frac: 0.15, FreeGiB: 0.01, SkipKernelTimes: true})
		if err != nil {
			t.Fatal(err)
		}
		return out
	})
}
