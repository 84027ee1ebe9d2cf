package sim

import (
	"os"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/facts"
)

// factsProfile is the H200 of docs/cuda-facts.md: its memory as cudaMemGetInfo
// reported it, its measured call costs, and a compute kernel whose size is its
// duration (1 constraint = 1 ns alone), so that scripts can ask for "a 200 ms
// full-occupancy kernel".
func factsProfile(t *testing.T) *Profile {
	p, err := LoadProfile("seed-16g")
	if err != nil {
		t.Fatal(err)
	}
	q := *p
	q.Jitter = 0
	q.ReferenceConstraints = 1_000_000
	q.Stages = map[string]StageProfile{}
	for k, v := range p.Stages {
		q.Stages[k] = v
	}
	q.Stages["compute"] = StageProfile{PerConstraintNs: 1, Exponent: 1}
	// The costs of a cudaFree measured on the H200 after seed-16g was
	// made (docs/cuda-facts.md, "A copy after a free").
	q.Device.FreeMsPerGiB = 0.8
	q.Device.FreeCopyWorkMsPerGiB = 2.45
	return &q
}

// TestCUDAFacts replays, one case per row of docs/cuda-facts.md, the probe
// that was run on the H200 (gpu/testdata/cuda_facts.txt, shared with the
// emulated and the real device): calls on streams at given times, printed as
// when each call returned, whether it had to wait for another stream, and what
// cudaMemGetInfo said. The expected outputs are the measured behaviour; the
// simulator must reproduce them exactly.
func TestCUDAFacts(t *testing.T) {
	datadriven.RunTest(t, factsFile(), func(t *testing.T, td *datadriven.TestData) string {
		p, err := facts.Parse(td)
		if err != nil {
			t.Fatal(err)
		}
		k := NewKernel(factsProfile(t), []int64{p.Bytes()}, p.Policy(), 1)
		d := k.Devices()[0]
		var scratch gpu.Buffer
		if n := p.ScratchBytes(); n > 0 {
			// Made in the model directly: no host time passes before the script.
			scratch = d.m.Submit(gpu.Op{Kind: gpu.OpMalloc, Bytes: n}, nil).Result.Buffer
		}
		script := facts.NewScript(facts.Kernels{Compute: func(dur time.Duration) *gpu.Kernel {
			return &gpu.Kernel{Partition: "k", Size: int(dur)}
		}}, scratch)
		var lines []facts.Line
		for _, st := range p.Steps {
			k.At(st.At, func() {
				o, name, err := script.Op(st)
				if err != nil {
					t.Fatal(err)
				}
				called := k.Now()
				d.Submit(o, func(r gpu.Result) {
					script.Record(o, name, r)
					lines = append(lines, facts.NewLine(st, o, called, k.Now(), r, r.Free))
				})
			})
		}
		k.RunUntil(time.Hour, func() bool { return false })
		return facts.Format(lines)
	})
}

// factsFile is the probe file the test replays: gpu/testdata/cuda_facts.txt,
// or $CUZK_FACTS_FILE, a probe of one's own (the same format) to see what a
// card or the simulator does with a sequence before it becomes a fact.
func factsFile() string {
	if f := os.Getenv("CUZK_FACTS_FILE"); f != "" {
		return f
	}
	return "../gpu/testdata/cuda_facts.txt"
}
