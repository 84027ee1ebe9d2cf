package runner

import (
	"errors"
	"fmt"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/prover"
)

// ErrHostTooLarge: one partition of the job holds more host memory than the
// whole host-memory limit (actors.Config.HostMemLimit), so it could never
// start.
var ErrHostTooLarge = errors.New("partition too large for the host-memory limit")

// withHostGate fills in what the host-memory gate needs of the backend: one
// whose Compute overwrites the prepared vectors (the CPU backend's) leaves
// nothing for a retried device attempt, so such a partition is synthesized
// again.
func withHostGate(cfg actors.Config, b prover.Backend) actors.Config {
	cfg.PrepConsumed = cfg.PrepConsumed || prover.CapabilitiesOf(b).ConsumesPrepared
	return cfg
}

// hostFits refuses a job one of whose partitions holds more host memory than
// the limit (zero: no limit), naming both sizes.
func hostFits(id string, spec actors.JobSpec, limit int64) error {
	if limit > 0 && spec.HostBytes > limit {
		return fmt.Errorf("submit job %s: %w: one partition holds %s of host memory (%d bytes), the limit is %s (%d bytes)",
			id, ErrHostTooLarge, gpu.FormatBytes(spec.HostBytes), spec.HostBytes, gpu.FormatBytes(limit), limit)
	}
	return nil
}
