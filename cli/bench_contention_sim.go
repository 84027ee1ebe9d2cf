package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/internal/par"
	"github.com/cuzk/cuzk/sim"
)

// contentionSim predicts a contention bench on the simulator: the same
// actors on a virtual clock, a device and stage costs from a profile that
// `cuzk sim calibrate` fitted to a one-worker run of the bench, and the
// partition's memory from the bench's flags. The same collector as on a
// device reads the events, so the two tables mean the same thing.
type contentionSim struct {
	profile *sim.Profile
	spec    contentionSpec
	seeds   int
}

func newContentionSim(path string, spec contentionSpec, seeds int) (*contentionSim, error) {
	if path == "" {
		return nil, errors.New("bench contention --backend sim: --profile is required (a profile from cuzk sim calibrate)")
	}
	p, err := sim.LoadProfile(path)
	if err != nil {
		return nil, fmt.Errorf("bench contention --backend sim: %w", err)
	}
	return contentionSimOf(p, spec, seeds), nil
}

// contentionSimOf predicts the bench spec describes with profile p (a copy
// of it, its partition set from spec), seeds seeds a configuration.
func contentionSimOf(profile *sim.Profile, spec contentionSpec, seeds int) *contentionSim {
	p := *profile
	// The flags say what a partition holds; the profile's costs are per
	// constraint, at the size the bench says its partitions have.
	gib := float64(int64(1) << 30)
	p.Partition = sim.PartitionProfile{VRAMGiB: float64(spec.staged) / gib, Exponent: 1,
		CopyGiB: float64(spec.copy) / gib, ScratchGiB: float64(spec.scratch) / gib}
	if spec.copy == 0 {
		// The profile's format reads 0 as "all of it"; a copy of nothing is
		// the smallest amount it can say.
		p.Partition.CopyGiB = 1.0 / gib
	}
	return &contentionSim{profile: &p, spec: spec, seeds: max(seeds, 1)}
}

// run predicts one design with n workers: with one seed, one simulated run;
// with more, the mean of the runs of seeds 1..N (meanRow), since where the
// profile draws (jitter, the order of handoffs) one run is one draw of what
// the card may do. Seed 1's trace goes to tracePath, seed i's beside it with
// "-s<i>" before the extension, so that each seed's handoffs can be read as
// the card's runs are.
func (c *contentionSim) run(design string, n int, tracePath string) (contentionRow, error) {
	rows, err := seedsSideBySide(max(c.seeds, 1), func(seed int) (contentionRow, error) {
		row, err := c.runSeed(design, n, uint64(seed), drawTracePath(tracePath, "s", seed))
		if err != nil {
			err = fmt.Errorf("seed %d: %w", seed, err)
		}
		return row, err
	})
	if err != nil {
		return contentionRow{}, err
	}
	return meanRow(rows, "seeds"), nil
}

// seedsSideBySide runs draw for seeds 1..n on the host's cores, each seed a
// simulation of its own, and returns their results in seed order, or the
// first error in seed order. (A device's runs are drawn one after another:
// meanOfDraws.)
func seedsSideBySide[T any](n int, draw func(seed int) (T, error)) ([]T, error) {
	return par.Collect(n, func(i int) (T, error) { return draw(i + 1) })
}

// meanOfDraws runs draws 1..n of one configuration (noun: what they are,
// "seeds" or "runs") and gives their meanRow, or the first draw's error.
func meanOfDraws(n int, noun string, draw func(i int) (contentionRow, error)) (contentionRow, error) {
	rows := make([]contentionRow, 0, max(n, 1))
	for i := 1; i <= max(n, 1); i++ {
		row, err := draw(i)
		if err != nil {
			return row, err
		}
		rows = append(rows, row)
	}
	return meanRow(rows, noun), nil
}

// meanRow is the rows of one configuration's draws (noun: "seeds" of the
// simulator, "runs" on a device) as one row: the mean of the rates and of
// the busy share, the median of each count (so that an outcome such as an
// OOM is the row's when most draws had it), the range of the rates and
// their standard deviation, how many draws met an OOM, and the first
// draw's lock waits and errors.
func meanRow(rows []contentionRow, noun string) contentionRow {
	if len(rows) == 1 {
		return rows[0]
	}
	out := rows[0]
	var items, busy float64
	var wall time.Duration
	for _, r := range rows {
		items += r.ItemsPerS
		busy += r.GPUBusyPct
		wall += r.Wall
	}
	n := len(rows)
	out.ItemsPerS, out.GPUBusyPct, out.Wall = items/float64(n), busy/float64(n), wall/time.Duration(n)
	out.Draws, out.DrawNoun, out.DrawRange = n, noun, [2]float64{rows[0].ItemsPerS, rows[0].ItemsPerS}
	var sq float64
	for _, r := range rows {
		out.DrawRange[0], out.DrawRange[1] = min(out.DrawRange[0], r.ItemsPerS), max(out.DrawRange[1], r.ItemsPerS)
		sq += (r.ItemsPerS - out.ItemsPerS) * (r.ItemsPerS - out.ItemsPerS)
		if r.OOMPreStage+r.OOMFallback > 0 {
			out.DrawsOOM++
		}
	}
	out.DrawSD = math.Sqrt(sq / float64(n-1))
	med := func(get func(contentionRow) int) int {
		vs := make([]int, n)
		for i, r := range rows {
			vs[i] = get(r)
		}
		slices.Sort(vs)
		return vs[n/2]
	}
	out.Proved = med(func(r contentionRow) int { return r.Proved })
	out.Failed = med(func(r contentionRow) int { return r.Failed })
	out.Retries = med(func(r contentionRow) int { return r.Retries })
	out.OOMPreStage = med(func(r contentionRow) int { return r.OOMPreStage })
	out.OOMFallback = med(func(r contentionRow) int { return r.OOMFallback })
	out.Fallbacks = med(func(r contentionRow) int { return r.Fallbacks })
	out.DeviceWaited = med(func(r contentionRow) int { return r.DeviceWaited })
	return out
}

// runSeed simulates one design with n workers from seed and reads its
// events as a device run's are read; wall is the virtual time the job took.
// With a tracePath it writes the run's trace there.
func (c *contentionSim) runSeed(design string, n int, seed uint64, tracePath string) (contentionRow, error) {
	if tracePath == "" {
		return c.runSeedTo(design, n, seed, nil)
	}
	f, err := os.Create(tracePath)
	if err != nil {
		return contentionRow{}, fmt.Errorf("--trace-dir: %w", err)
	}
	row, err := c.runSeedTo(design, n, seed, f)
	return row, errors.Join(err, f.Close())
}

// runSeedTo is runSeed writing the run's trace to w (nil: none).
func (c *contentionSim) runSeedTo(design string, n int, seed uint64, w io.Writer) (row contentionRow, err error) {
	gib := float64(int64(1) << 30)
	vram := min(float64(c.spec.limit)/gib, c.profile.Device.VRAMGiB)
	sc, err := sim.NewScenario(sim.Scenario{Name: "contention", Seed: seed, Devices: 1, VRAMGiB: vram,
		HeadroomGiB: float64(c.spec.headroom) / gib, Design: design, WorkersPerDevice: n, MaxAttempts: c.spec.maxAttempts,
		LockHops: c.spec.lockHops, Jobs: []sim.JobConfig{{ID: "bench", Partitions: c.spec.items, Size: c.spec.size, DeclareScratch: true}}}, c.profile)
	if err != nil {
		return row, err
	}
	col := newContentionCollector()
	obs := actors.Observers{col}
	if w != nil {
		var closeTrace func() error
		obs, _, closeTrace = withTraceTo(obs, w)
		defer func() { err = errors.Join(err, closeTrace()) }()
	}
	if _, err := sim.Run(sc, sim.Options{Observer: obs}); err != nil {
		return row, err
	}
	select {
	case <-col.done:
	default:
		return row, fmt.Errorf("the simulated job did not finish (%d proved, %d failed of %d)", col.proved, col.failed, c.spec.items)
	}
	return col.row(design, n, col.end), nil
}
