package cli

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/prover"
)

// errNoGPUBackend is returned until the GPU prover backend is built in.
var errNoGPUBackend = errors.New("this build has no GPU prover backend")

// openGPU opens the real GPU backend on the given devices.
func openGPU(c *cli.Context, indices []int, vram int64, pool gpu.PoolPolicy) (prover.Backend, []gpu.Device, func(), error) {
	return nil, nil, nil, errNoGPUBackend
}
