package sim

import (
	"fmt"
	"io"
	"strings"

	"github.com/cuzk/cuzk/internal/par"
)

// Seeds runs scenario s under o once per seed, n seeds from o's seed (or the
// scenario's) on, and returns their reports in seed order. Where the model
// draws an order (the host's handoffs, each stage's jitter), one seed is one
// outcome: an OOM that turns on a race of microseconds is odds, which only
// several seeds give.
func Seeds(s *Scenario, o Options, n int) ([]*Report, error) {
	if n < 1 {
		return nil, fmt.Errorf("seeds: %d runs asked, want at least 1", n)
	}
	first := s.Seed
	if o.Seed != nil {
		first = *o.Seed
	}
	// Each seed is a run of its own (its kernel, actors and devices), so the
	// seeds run side by side on the host's cores; each report lands at its
	// seed's place, and the first error in seed order is the one returned.
	return par.Collect(n, func(i int) (*Report, error) {
		seed := first + uint64(i)
		oo := o
		oo.Seed, oo.Record, oo.Observer, oo.SeedDone = &seed, false, nil, nil
		res, err := Run(s, oo)
		if o.SeedDone != nil {
			o.SeedDone()
		}
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", seed, err)
		}
		return res.Report, nil
	})
}

// SeedSummary is what several seeds' reports of one design and worker count
// say together: throughput's mean and range, GPU busy's mean, and how many
// seeds met an OOM, failed a partition or did not finish.
type SeedSummary struct {
	Setup
	Seeds           int     `json:"seeds"`
	FirstSeed       uint64  `json:"first_seed"`
	ThroughputMean  float64 `json:"partitions_per_s_mean"`
	ThroughputLeast float64 `json:"partitions_per_s_least"`
	ThroughputMost  float64 `json:"partitions_per_s_most"`
	GPUBusyMeanPct  float64 `json:"gpu_busy_pct_mean"`
	WithOOM         int     `json:"seeds_with_oom"`
	WithFailed      int     `json:"seeds_with_failed_partitions"`
	Incomplete      int     `json:"seeds_incomplete"`
}

// Summarize sums up the reports of one design and worker count, one a seed
// (Seeds); reps must not be empty.
func Summarize(reps []*Report) SeedSummary {
	r0 := reps[0]
	s := SeedSummary{Setup: r0.Setup, Seeds: len(reps), FirstSeed: r0.Seed, ThroughputLeast: r0.Throughput, ThroughputMost: r0.Throughput}
	for _, r := range reps {
		s.ThroughputMean += r.Throughput
		s.GPUBusyMeanPct += r.GPUBusyPct
		s.ThroughputLeast = min(s.ThroughputLeast, r.Throughput)
		s.ThroughputMost = max(s.ThroughputMost, r.Throughput)
		if r.OOMs > 0 {
			s.WithOOM++
		}
		if r.Failed > 0 {
			s.WithFailed++
		}
		if !r.Complete {
			s.Incomplete++
		}
	}
	s.ThroughputMean /= float64(len(reps))
	s.GPUBusyMeanPct /= float64(len(reps))
	return s
}

// CompareSeeds is Compare with n seeds a row: every lock design with 1 to
// maxWorkers workers, each summed up over its seeds.
func CompareSeeds(s *Scenario, o Options, maxWorkers, n int) ([]SeedSummary, error) {
	var out []SeedSummary
	err := eachDesign(o, maxWorkers, func(oo Options) error {
		reps, err := Seeds(s, oo, n)
		if err == nil {
			out = append(out, Summarize(reps))
		}
		return err
	})
	return out, err
}

// WriteSeedsTable prints summaries as one table, a row each.
func WriteSeedsTable(w io.Writer, sums []SeedSummary) error {
	var b strings.Builder
	if len(sums) > 0 {
		s := sums[0]
		fmt.Fprintf(&b, "scenario %s, profile %s, %d device(s) of %.0f GiB, seeds %d to %d\n",
			s.Scenario, s.Profile, s.Devices, s.VRAMGiB, s.FirstSeed, s.FirstSeed+uint64(s.Seeds)-1)
	}
	fmt.Fprintf(&b, "%-14s %7s %8s %8s %8s %7s %9s %9s %9s\n",
		"design", "workers", "part/s", "least", "most", "GPU %", "OOM", "failed", "unended")
	frac := func(k, n int) string { return fmt.Sprintf("%d/%d", k, n) }
	for _, s := range sums {
		fmt.Fprintf(&b, "%-14s %7d %8.3f %8.3f %8.3f %7.1f %9s %9s %9s\n",
			s.Design, s.WorkersPerDevice, s.ThroughputMean, s.ThroughputLeast, s.ThroughputMost, s.GPUBusyMeanPct,
			frac(s.WithOOM, s.Seeds), frac(s.WithFailed, s.Seeds), frac(s.Incomplete, s.Seeds))
	}
	b.WriteString("part/s and GPU %: the seeds' mean; OOM, failed, unended: the seeds that met an OOM, failed a partition, or ran past the scenario's max_time_s\n")
	_, err := io.WriteString(w, b.String())
	return err
}
