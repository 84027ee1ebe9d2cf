package cli

import (
	"errors"
	"fmt"

	"github.com/cuzk/cuzk/actors"
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
}

func newContentionSim(path string, spec contentionSpec) (*contentionSim, error) {
	if path == "" {
		return nil, errors.New("bench contention --backend sim: --profile is required (a profile from cuzk sim calibrate)")
	}
	p, err := sim.LoadProfile(path)
	if err != nil {
		return nil, fmt.Errorf("bench contention --backend sim: %w", err)
	}
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
	return &contentionSim{profile: p, spec: spec}, nil
}

// run simulates one design with n workers and reads its events as a device
// run's are read; wall is the virtual time the job took.
func (c *contentionSim) run(design string, n int, tracePath string) (row contentionRow, err error) {
	gib := float64(int64(1) << 30)
	vram := min(float64(c.spec.limit)/gib, c.profile.Device.VRAMGiB)
	sc, err := sim.NewScenario(sim.Scenario{Name: "contention", Seed: 1, Devices: 1, VRAMGiB: vram,
		HeadroomGiB: float64(c.spec.headroom) / gib, Design: design, WorkersPerDevice: n, MaxAttempts: c.spec.maxAttempts,
		Jobs: []sim.JobConfig{{ID: "bench", Partitions: c.spec.items, Size: c.spec.size}}}, c.profile)
	if err != nil {
		return row, err
	}
	col := newContentionCollector()
	obs, closeTrace, err := withTrace(actors.Observers{col}, tracePath)
	if err != nil {
		return row, err
	}
	defer func() { err = errors.Join(err, closeTrace()) }()
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
