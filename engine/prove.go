package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint/solver"
	"github.com/consensys/gnark/frontend"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/emu"
	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
)

// Errors a caller may want to tell apart; Prove's errors wrap them.
var (
	// ErrUnsatisfied: the witness does not satisfy the circuit; the error
	// names the constraint.
	ErrUnsatisfied = prover.ErrUnsatisfied
	// ErrBadWitness: the witness is for another field or of another size.
	ErrBadWitness = prover.ErrBadWitness
	// ErrMissingHint: the circuit calls a hint that was not given
	// (WithHints); the error names it.
	ErrMissingHint = prover.ErrMissingHint
)

// Prove proves one full witness (gnark's witness.Witness, public and secret
// parts) with cuzk's staged prover and returns gnark's Groth16 proof, which
// Prove has checked with gnark's verifier.
func Prove(ctx context.Context, keys *Keys, full witness.Witness, opts ...Option) (groth16.Proof, error) {
	if keys == nil {
		return nil, errors.New("no keys")
	}
	o := collect(opts)
	backend, done, err := openBackend(o)
	if err != nil {
		return nil, err
	}
	defer done()
	p, _, err := prover.ProveWith(ctx, o.keysFor(keys), backend, full, o.rnd, o.solver...)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// ProveAll proves a job: one witness per partition, through the same actors,
// lock design and service as cuzk prove and the daemon (WithDesign; WithWorkers
// workers per device; on the GPU backend every device it opened, else one
// emulated device). Proofs come back in the order of the witnesses, each
// checked by gnark's verifier. The first partition that fails stops the job:
// its queued partitions are dropped, and the error names the partition.
func ProveAll(ctx context.Context, keys *Keys, witnesses []witness.Witness, opts ...Option) ([]groth16.Proof, error) {
	if keys == nil {
		return nil, errors.New("no keys")
	}
	o := collect(opts)
	if o.workers < 1 {
		return nil, fmt.Errorf("%d workers: at least one is needed", o.workers)
	}
	if len(witnesses) == 0 {
		return nil, nil
	}
	for i, w := range witnesses {
		if w == nil {
			return nil, fmt.Errorf("partition %d: %w: no witness", i, ErrBadWitness)
		}
	}
	backend, devices, done, err := openDevices(o)
	if err != nil {
		return nil, err
	}
	defer done()
	st, err := store.OpenInMemory()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	const id = "engine-job"
	stop := &stopOnFailure{id: id}
	cfg := actors.Config{Design: o.design, WorkersPerDevice: o.workers, MaxAttempts: 1}.WithDefaults()
	svc, err := runner.StartService(runner.ServiceOptions{Backend: backend, Devices: devices, Config: cfg, Store: st,
		Observer: stop, Randomness: o.rnd, Seed: 1})
	if err != nil {
		return nil, err
	}
	stop.svc = svc
	defer svc.Close(context.Background())
	// The runner's synthesize stage takes the caller's solver options from
	// the keys.
	k := o.keysFor(keys, o.solver...)
	sub := runner.Submission{JobRequest: runner.JobRequest{ID: id, Keys: k, Partitions: len(witnesses), Inputs: witnesses}}
	reps, err := svc.Run(ctx, []runner.Submission{sub}, time.Minute)
	if err != nil {
		return nil, err
	}
	if rep := reps[0]; rep.State != runner.StateDone {
		for _, p := range rep.Partitions {
			if p.State == "failed" {
				return nil, fmt.Errorf("partition %d: %s", p.Index, p.LastError)
			}
		}
		return nil, fmt.Errorf("job %s: %s", rep.State, rep.Error)
	}
	recs, err := st.Proofs(id)
	if err != nil {
		return nil, err
	}
	proofs := make([]groth16.Proof, len(witnesses))
	for _, r := range recs {
		p := &groth16bls.Proof{}
		if _, err := p.ReadFrom(bytes.NewReader(r.Proof)); err != nil {
			return nil, fmt.Errorf("partition %d: decode proof: %w", r.Index, err)
		}
		proofs[r.Index] = p
	}
	return proofs, nil
}

// stopOnFailure cancels a job when one of its partitions fails for good.
type stopOnFailure struct {
	id  string
	svc *runner.Service
}

func (s *stopOnFailure) Observe(e actors.Event) {
	if e.Kind == actors.EvPartitionFailed && e.Partition.Job == s.id && s.svc != nil {
		// Cancel takes the service's locks: not on the actors' goroutine.
		go s.svc.Cancel(s.id)
	}
}

// openDevices returns the backend the options ask for, the devices the
// actors drive (the GPUs it opened, or one emulated device for the CPU
// backend), and what to call when done.
func openDevices(o *options) (prover.Backend, []gpu.Device, func(), error) {
	if o.opened == nil && (o.backend == BackendGPU || o.backend == BackendAuto) {
		g, err := OpenGPU(o.library, o.devices...)
		switch {
		case err == nil:
			return g.Backend, g.GPUDevices(), func() { g.Close() }, nil
		case o.backend == BackendGPU || !errors.Is(err, cuda.ErrUnavailable):
			return nil, nil, nil, err
		}
	}
	backend, done, err := openBackend(o)
	if err != nil {
		return nil, nil, nil, err
	}
	dev, err := emu.New(emu.Options{Capacity: 1 << 40})
	if err != nil {
		done()
		return nil, nil, nil, err
	}
	return backend, []gpu.Device{dev}, func() { dev.Close(); done() }, nil
}

// keysFor returns the prover's keys, with gnark's solver if asked for and
// extra solver options after the keys' own: a copy when either changes them,
// so as not to change the keys others use.
func (o *options) keysFor(keys *Keys, extra ...solver.Option) *prover.Keys {
	k := keys.k
	if !o.gnarkSol && len(extra) == 0 {
		return k
	}
	s := k.Solver
	if o.gnarkSol {
		s = prover.SolverGnark
	}
	return &prover.Keys{Circuit: k.Circuit, Layout: k.Layout, CS: k.CS, PK: k.PK, VK: k.VK, Hash: k.Hash, Dir: k.Dir,
		Solver: s, SolverOptions: append(slices.Clip(k.SolverOptions), extra...)}
}

// openBackend returns the backend the options ask for and what to call when
// done with it.
func openBackend(o *options) (prover.Backend, func(), error) {
	if o.opened != nil {
		return o.opened, func() {}, nil
	}
	switch o.backend {
	case BackendCPU, "":
		return prover.CPU{}, func() {}, nil
	case BackendGPU, BackendAuto:
		g, err := OpenGPU(o.library, o.devices...)
		if err != nil {
			if o.backend == BackendAuto && errors.Is(err, cuda.ErrUnavailable) {
				return prover.CPU{}, func() {}, nil
			}
			return nil, nil, err
		}
		return g.Backend, func() { g.Close() }, nil
	}
	return nil, nil, fmt.Errorf("unknown backend %q (cpu, gpu or auto)", o.backend)
}

// OpenGPU opens cuzk's GPU backend on the given CUDA devices (default 0),
// with b_g2 on the device; lib is the kernel library's path (empty: the
// search order of cuda.Load). Pass its Backend to WithProverBackend and
// Close it when done. Without the library, a driver or a GPU the error
// matches cuda.ErrUnavailable.
func OpenGPU(lib string, devices ...int) (*gpuprove.GPUs, error) {
	g, err := gpuprove.Open(gpuprove.Options{Library: lib, Devices: devices, BG2: true})
	if err != nil {
		return nil, fmt.Errorf("open the GPU backend: %w", err)
	}
	return g, nil
}

// Verify checks a proof against the keys' verifying key and the public
// part of a witness, with gnark's verifier.
func Verify(keys *Keys, proof groth16.Proof, public witness.Witness) error {
	if keys == nil || public == nil {
		return errors.New("verify: no keys or no public witness")
	}
	if _, ok := proof.(*groth16bls.Proof); !ok {
		return fmt.Errorf("proof is a %T, not a BLS12-381 Groth16 proof", proof)
	}
	if _, ok := public.Vector().(fr.Vector); !ok {
		return fmt.Errorf("%w: public witness is not over BLS12-381's scalar field", ErrBadWitness)
	}
	return groth16.Verify(proof, keys.k.VK, public)
}

// Witnesses builds the full witnesses of assignments over BLS12-381's
// scalar field, one per partition, as ProveAll takes them.
func Witnesses(assignments ...frontend.Circuit) ([]witness.Witness, error) {
	out := make([]witness.Witness, len(assignments))
	for i, a := range assignments {
		w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
		if err != nil {
			return nil, fmt.Errorf("witness %d: %w", i, err)
		}
		out[i] = w
	}
	return out, nil
}
