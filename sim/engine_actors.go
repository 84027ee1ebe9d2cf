package sim

import (
	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
)

// startActors starts the production actors: the simulator runs exactly the
// code that proves on real GPUs.
func startActors(rt actors.Runtime, devices []gpu.Info, cfg actors.Config) (Engine, error) {
	e, err := actors.Start(rt, devices, cfg)
	if err != nil {
		return nil, err
	}
	return e, nil
}
