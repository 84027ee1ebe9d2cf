package prover

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark/backend/witness"
	csolver "github.com/consensys/gnark/constraint/solver"
	"github.com/consensys/gnark/frontend"

	"github.com/cuzk/cuzk/circuits"
)

// StageNames lists the stages in pipeline order, as reported in timings.
var StageNames = []string{"synthesize", "prep", "stage", "compute", "b_g2", "finalize"}

// Timings is how long each stage of one partition took.
type Timings map[string]time.Duration

// Witness builds the full witness of one partition of a job.
func Witness(k *Keys, seed []byte, partition int) (witness.Witness, error) {
	c, err := circuits.Lookup(k.Circuit)
	if err != nil {
		return nil, err
	}
	a, err := c.Assign(k.Layout, seed, partition)
	if err != nil {
		return nil, err
	}
	w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
	if err != nil {
		return nil, fmt.Errorf("witness of partition %d: %w", partition, err)
	}
	return w, nil
}

// Prove runs the whole staged pipeline for one witness in this goroutine, as
// the actors would for one partition with nothing else to do: the G2 MSM runs
// beside stage and compute, since it needs only prep's output, unless the
// backend computes it in Compute (its b_g2 time is then zero).
func Prove(ctx context.Context, k *Keys, b Backend, full witness.Witness, rnd io.Reader) (*Proof, Timings, error) {
	return ProveWith(ctx, k, b, full, rnd)
}

// ProveWith is Prove with gnark's solver options (hints: solver.WithHints)
// for the synthesize stage, beside k.SolverOptions. The commitments' MSMs
// are b's when it has them (SynthesizeFor, FinalizeFor).
func ProveWith(ctx context.Context, k *Keys, b Backend, full witness.Witness, rnd io.Reader, opts ...csolver.Option) (*Proof, Timings, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	t := Timings{}
	timed := func(name string, f func() error) error {
		start := time.Now()
		err := f()
		t[name] = time.Since(start)
		return err
	}
	var sol *Solution
	var prep *Prepared
	var staged Staged
	var comp *Computed
	var bg2 curve.G2Jac
	var proof *Proof
	if err := ctx.Err(); err != nil {
		return nil, t, err
	}
	if err := timed("synthesize", func() (err error) { sol, err = SynthesizeFor(b, k, full, opts...); return }); err != nil {
		return nil, t, err
	}
	if err := timed("prep", func() (err error) { prep, err = PrepFor(b, k, sol); return }); err != nil {
		sol.Release()
		return nil, t, err
	}
	defer prep.Release()
	if prep.Memory != nil { // prep copied what it needs
		sol.Release()
	}
	type g2result struct {
		took time.Duration
		err  error
	}
	g2done := make(chan g2result, 1)
	onDevice := ComputesBG2(b)
	if onDevice {
		g2done <- g2result{}
	} else {
		go func() {
			start := time.Now()
			var err error
			bg2, err = BG2(ctx, k, prep)
			g2done <- g2result{time.Since(start), err}
		}()
	}
	err := timed("stage", func() (err error) { staged, err = b.Stage(ctx, k, prep); return })
	if err == nil {
		err = timed("compute", func() (err error) { comp, err = b.Compute(ctx, k, staged); return })
		staged.Release()
	}
	g2 := <-g2done
	t["b_g2"] = g2.took
	for _, e := range []error{err, g2.err} {
		if e != nil {
			return nil, t, e
		}
	}
	if onDevice {
		if comp.B2 == nil {
			return nil, t, fmt.Errorf("backend %s computes b_g2 but left it out", b.Name())
		}
		bg2 = *comp.B2
	}
	if err := timed("finalize", func() (err error) { proof, err = FinalizeFor(b, k, comp, &bg2, prep, rnd); return }); err != nil {
		return nil, t, err
	}
	return proof, t, nil
}
