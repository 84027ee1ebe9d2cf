package cli

import (
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
	"github.com/consensys/gnark/std/rangecheck"

	"github.com/cuzk/cuzk/keygen"
	"github.com/cuzk/cuzk/prover"
)

// rangeChecked checks four values to 8 bits with gnark's std rangecheck,
// which commits to them (api.Commit) in an R1CS.
type rangeChecked struct {
	X [4]frontend.Variable
}

func (c *rangeChecked) Define(api frontend.API) error {
	rc := rangecheck.New(api)
	for _, x := range c.X {
		rc.Check(x, 8)
	}
	return nil
}

// TestGnarkSolveWithCommitments: bench's timing of gnark's solver solves a
// circuit with a commitment, which gnark's bare Solve cannot outside a test
// binary (its commitment hint is a placeholder that its prover replaces, and
// that returns a random value only in tests), and refuses a witness that does
// not satisfy it.
func TestGnarkSolveWithCommitments(t *testing.T) {
	for _, tc := range []struct {
		name          string
		shape, assign frontend.Circuit
	}{
		{"rangecheck", &rangeChecked{}, &rangeChecked{X: [4]frontend.Variable{1, 200, 17, 255}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, tc.shape)
			if err != nil {
				t.Fatal(err)
			}
			r := ccs.(*cs.R1CS)
			pk, vk, err := keygen.Setup(r, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			w, err := frontend.NewWitness(tc.assign, ecc.BLS12_381.ScalarField())
			if err != nil {
				t.Fatal(err)
			}
			k := &prover.Keys{Circuit: tc.name, CS: r, PK: pk, VK: vk}
			if info, _ := r.CommitmentInfo.(constraint.Groth16Commitments); len(info) == 0 {
				t.Fatal("the circuit has no commitment: the case tests nothing")
			}
			if err := gnarkSolve(k, w); err != nil {
				t.Fatalf("gnarkSolve: %v", err)
			}
			bad, err := frontend.NewWitness(&rangeChecked{X: [4]frontend.Variable{1, 256, 17, 255}}, ecc.BLS12_381.ScalarField())
			if err != nil {
				t.Fatal(err)
			}
			if err := gnarkSolve(k, bad); err == nil {
				t.Fatal("gnarkSolve accepted a witness that does not satisfy the circuit")
			}
		})
	}
}
