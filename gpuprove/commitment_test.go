package gpuprove_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/keygen"
	"github.com/cuzk/cuzk/prover"
)

// TestCommitmentProofsOnGPU proves circuits with gnark's commitments
// (std/rangecheck, and api.Commit called directly) on the GPU, b_g2 on the
// device and on the CPU, with keys from keygen and from gnark's setup: the
// K MSM on the device leaves out the committed wires, the commitments and
// their proof of knowledge are computed on the host, and gnark's verifier
// accepts the proofs.
func TestCommitmentProofsOnGPU(t *testing.T) {
	for _, tc := range []struct {
		name    string
		circuit frontend.Circuit
		assign  []frontend.Circuit
	}{
		{"rangecheck", &circuits.RangeCheck{}, []frontend.Circuit{circuits.NewRangeCheck(1000003), circuits.NewRangeCheck(99991)}},
		{"commit", &circuits.WithCommitment{}, []frontend.Circuit{&circuits.WithCommitment{X: 3, Y: 9}}},
	} {
		ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, tc.circuit)
		if err != nil {
			t.Fatal(err)
		}
		r := ccs.(*cs.R1CS)
		kpk, kvk, err := keygen.Setup(r, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		gpk, gvk, err := groth16.Setup(r)
		if err != nil {
			t.Fatal(err)
		}
		keySets := []*prover.Keys{
			{Circuit: tc.name, CS: r, PK: kpk, VK: kvk, Hash: tc.name + "-keygen"},
			{Circuit: tc.name, CS: r, PK: gpk.(*groth16bls.ProvingKey), VK: gvk.(*groth16bls.VerifyingKey), Hash: tc.name + "-gnark"},
		}
		for _, bg2 := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/bg2-gpu=%v", tc.name, bg2), func(t *testing.T) {
				g := openGPU(t, gpuprove.Options{BG2: bg2})
				for _, k := range keySets {
					for i, a := range tc.assign {
						full, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
						if err != nil {
							t.Fatal(err)
						}
						public, _ := full.Public()
						proof, _, err := prover.Prove(context.Background(), k, g.Backend, full, nil)
						if err != nil {
							t.Fatalf("%s, witness %d: %v", k.Hash, i, err)
						}
						if len(proof.Commitments) == 0 {
							t.Fatalf("%s: a proof without commitments", k.Hash)
						}
						if err := groth16.Verify(proof, k.VK, public); err != nil {
							t.Fatalf("%s, witness %d: gnark's verifier: %v", k.Hash, i, err)
						}
					}
				}
			})
		}
	}
}
