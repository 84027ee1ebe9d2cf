package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/prover"
)

// openGPU opens the real GPU backend on the given devices: the kernel library
// from --gpu-lib (else cuda's search order), one gpu.Device per index. The
// VRAM limit applies only when --vram-limit was given: its default sizes the
// emulated devices of the CPU backend, not a real card. Errors from a missing
// library or GPU match cuda.ErrUnavailable.
func openGPU(c *cli.Context, indices []int, vram int64, pool gpu.PoolPolicy) (prover.Backend, []gpu.Device, func(), error) {
	opt := gpuprove.Options{Library: c.String("gpu-lib"), Devices: indices, Pool: pool}
	if c.IsSet("vram-limit") {
		opt.VRAMLimit = vram
	}
	g, err := gpuprove.Open(opt)
	if err != nil {
		return nil, nil, nil, err
	}
	closeFn := func() {
		if err := g.Close(); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "close GPU: %v\n", err)
		}
	}
	return g.Backend, g.GPUDevices(), closeFn, nil
}

// preloadKeys puts the keys on the devices before the actors start, when the
// backend keeps them there, so that each device reports the memory left for
// partitions.
func preloadKeys(b prover.Backend, k *prover.Keys) error {
	if p, ok := b.(interface{ Preload(*prover.Keys) error }); ok {
		if err := p.Preload(k); err != nil {
			return fmt.Errorf("load keys onto the GPU: %w", err)
		}
	}
	return nil
}
