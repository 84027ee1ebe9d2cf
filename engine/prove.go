package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/frontend"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/prover"
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

// ProveAll proves a job: one witness per partition, WithWorkers of them at
// once (each proof is parallel in itself). Proofs come back in the order of
// the witnesses. The first failure cancels the partitions not yet started
// and is returned, naming the partition.
func ProveAll(ctx context.Context, keys *Keys, witnesses []witness.Witness, opts ...Option) ([]groth16.Proof, error) {
	if keys == nil {
		return nil, errors.New("no keys")
	}
	o := collect(opts)
	if o.workers < 1 {
		return nil, fmt.Errorf("%d workers: at least one is needed", o.workers)
	}
	backend, done, err := openBackend(o)
	if err != nil {
		return nil, err
	}
	defer done()
	k := o.keysFor(keys)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	proofs := make([]groth16.Proof, len(witnesses))
	errs := make([]error, len(witnesses))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(o.workers, len(witnesses)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p, _, err := prover.ProveWith(ctx, k, backend, witnesses[i], o.rnd, o.solver...)
				if err != nil {
					errs[i] = fmt.Errorf("partition %d: %w", i, err)
					cancel()
					continue
				}
				proofs[i] = p
			}
		}()
	}
feed:
	for i := range witnesses {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return proofs, nil
}

// keysFor returns the prover's keys, with gnark's solver if asked for: a
// copy, so as not to change the solver of keys others use.
func (o *options) keysFor(keys *Keys) *prover.Keys {
	k := keys.k
	if !o.gnarkSol {
		return k
	}
	return &prover.Keys{Circuit: k.Circuit, Layout: k.Layout, CS: k.CS, PK: k.PK, VK: k.VK, Hash: k.Hash, Dir: k.Dir,
		Solver: prover.SolverGnark, SolverOptions: k.SolverOptions}
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
