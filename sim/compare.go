package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/cuzk/cuzk/actors"
)

// Compare runs scenario s once per lock design and worker count (1..maxWorkers),
// keeping everything else, and returns the reports in design-major order.
func Compare(s *Scenario, o Options, maxWorkers int) ([]*Report, error) {
	var out []*Report
	err := eachDesign(o, maxWorkers, func(oo Options) error {
		res, err := Run(s, oo)
		if err == nil {
			out = append(out, res.Report)
		}
		return err
	})
	return out, err
}

// eachDesign calls run with o set to each lock design and worker count
// (1..maxWorkers), in design-major order, until one fails.
func eachDesign(o Options, maxWorkers int, run func(Options) error) error {
	for _, d := range actors.Designs {
		for w := 1; w <= maxWorkers; w++ {
			oo := o
			oo.Design, oo.Workers, oo.Record = d, w, false
			if err := run(oo); err != nil {
				return fmt.Errorf("compare %s with %d workers: %w", d, w, err)
			}
		}
	}
	return nil
}

// WriteCompareTable prints reports from Compare as one table.
func WriteCompareTable(w io.Writer, reps []*Report) error {
	var b strings.Builder
	if len(reps) > 0 {
		r := reps[0]
		fmt.Fprintf(&b, "scenario %s, profile %s, %d device(s) of %.0f GiB, seed %d\n", r.Scenario, r.Profile, r.Devices, r.VRAMGiB, r.Seed)
	}
	fmt.Fprintf(&b, "%-14s %7s %8s %8s %7s %6s %8s %6s %6s %8s %11s %11s\n",
		"design", "workers", "part/s", "s/job10", "GPU %", "OOM", "fallback", "retry", "failed", "VRAM GiB", "dev waits", "lock wait99")
	for _, r := range reps {
		var wait99 float64
		for _, l := range r.Locks {
			wait99 = max(wait99, l.WaitP99Ms)
		}
		done := ""
		if !r.Complete {
			done = " (incomplete)"
		}
		fmt.Fprintf(&b, "%-14s %7d %8.3f %8.1f %7.1f %6d %8d %6d %6d %8.2f %11d %9.0fms%s\n",
			r.Design, r.WorkersPerDevice, r.Throughput, r.SecondsPerJob10, r.GPUBusyPct, r.OOMs, r.Fallbacks,
			r.Retries, r.Failed, r.VRAMPeakGiB, r.DeviceWaits, wait99, done)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCompareJSON prints reports from Compare as a JSON array.
func WriteCompareJSON(w io.Writer, reps []*Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(reps)
}
