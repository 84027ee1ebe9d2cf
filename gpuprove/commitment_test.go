package gpuprove_test

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/internal/testenv"
	"github.com/cuzk/cuzk/keygen"
	"github.com/cuzk/cuzk/prover"
)

// TestCommitmentProofsOnGPU proves circuits with gnark's commitments
// (std/rangecheck, api.Commit once and twice) on the GPU, with b_g2 on the
// device and on the CPU and with the keys streamed, keys from keygen and
// from gnark's setup: the K MSM on the device leaves out the committed
// wires, the commitments and their proof of knowledge are computed on the
// device (the backend counts each), they equal the CPU's point for point
// with the mask fixed, gnark's verifier accepts the proofs, partitions
// proved at once share the device's commitment MSMs, and the device holds
// the bases as the plan says.
func TestCommitmentProofsOnGPU(t *testing.T) {
	for _, tc := range []struct {
		name    string
		circuit frontend.Circuit
		assign  []frontend.Circuit
	}{
		{"rangecheck", &circuits.RangeCheck{}, []frontend.Circuit{circuits.NewRangeCheck(1000003), circuits.NewRangeCheck(99991)}},
		{"commit", &circuits.WithCommitment{}, []frontend.Circuit{&circuits.WithCommitment{X: 3, Y: 9}}},
		{"two-commitments", &circuits.TwoCommitments{}, []frontend.Circuit{&circuits.TwoCommitments{X: 5, Y: 7, Z: 35}, &circuits.TwoCommitments{X: 6, Y: 7, Z: 42}}},
	} {
		ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, tc.circuit)
		if err != nil {
			t.Fatal(err)
		}
		r := ccs.(*cs.R1CS)
		nCommit := len(r.CommitmentInfo.(constraint.Groth16Commitments))
		kpk, kvk, err := keygen.Setup(r, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		gpk, gvk, err := groth16.Setup(r)
		if err != nil {
			t.Fatal(err)
		}
		mask := testenv.FixedMask(t, r)
		keySets := []*prover.Keys{
			{Circuit: tc.name, CS: r, PK: kpk, VK: kvk, Hash: tc.name + "-keygen", SolverOptions: mask},
			{Circuit: tc.name, CS: r, PK: gpk.(*groth16bls.ProvingKey), VK: gvk.(*groth16bls.VerifyingKey), Hash: tc.name + "-gnark", SolverOptions: mask},
		}
		for _, opt := range []gpuprove.Options{{BG2: true}, {BG2: false}, {BG2: true, KeyTier: gpuprove.TierPinned}} {
			t.Run(fmt.Sprintf("%s/bg2-gpu=%v/tier=%s", tc.name, opt.BG2, cmp.Or(opt.KeyTier, "auto")), func(t *testing.T) {
				g := openGPU(t, opt)
				for _, k := range keySets {
					var wits []witnessPair
					for i, a := range tc.assign {
						wits = append(wits, newWitnessPair(t, a))
						w := wits[i]
						ref, _, err := prover.Prove(context.Background(), k, prover.CPU{}, w.full, nil)
						if err != nil {
							t.Fatalf("%s, witness %d, on the CPU: %v", k.Hash, i, err)
						}
						before := g.Backend.CommitmentMSMs()
						proof, _, err := prover.Prove(context.Background(), k, g.Backend, w.full, nil)
						if err != nil {
							t.Fatalf("%s, witness %d: %v", k.Hash, i, err)
						}
						if ran := g.Backend.CommitmentMSMs() - before; ran != int64(nCommit+1) {
							t.Fatalf("%s, witness %d: %d commitment MSMs on the device, want %d commitments and the proof of knowledge", k.Hash, i, ran, nCommit)
						}
						if len(proof.Commitments) != nCommit || len(ref.Commitments) != nCommit {
							t.Fatalf("%s: %d commitments on the GPU, %d on the CPU, want %d", k.Hash, len(proof.Commitments), len(ref.Commitments), nCommit)
						}
						for j := range ref.Commitments {
							if !proof.Commitments[j].Equal(&ref.Commitments[j]) {
								t.Fatalf("%s, witness %d: commitment %d differs from the CPU's", k.Hash, i, j)
							}
						}
						if !proof.CommitmentPok.Equal(&ref.CommitmentPok) {
							t.Fatalf("%s, witness %d: the proof of knowledge differs from the CPU's", k.Hash, i)
						}
						if err := groth16.Verify(proof, k.VK, w.public); err != nil {
							t.Fatalf("%s, witness %d: gnark's verifier: %v", k.Hash, i, err)
						}
					}
					// Partitions proved at once: their commitment MSMs take the
					// device's in turn.
					before := g.Backend.CommitmentMSMs()
					var wg sync.WaitGroup
					errs := make([]error, 4)
					for j := range errs {
						wg.Add(1)
						go func() {
							defer wg.Done()
							w := wits[j%len(wits)]
							proof, _, err := prover.Prove(context.Background(), k, g.Backend, w.full, nil)
							if err == nil {
								err = groth16.Verify(proof, k.VK, w.public)
							}
							errs[j] = err
						}()
					}
					wg.Wait()
					for j, err := range errs {
						if err != nil {
							t.Fatalf("%s, proof %d of 4 at once: %v", k.Hash, j, err)
						}
					}
					if ran := g.Backend.CommitmentMSMs() - before; ran != int64(4*(nCommit+1)) {
						t.Fatalf("%s: %d commitment MSMs on the device for 4 proofs, want %d", k.Hash, ran, 4*(nCommit+1))
					}
					plan, err := g.Backend.Plan(0, k)
					if err != nil {
						t.Fatal(err)
					}
					if plan.Commitments <= 0 || plan.CommitScratch <= 0 || !strings.Contains(plan.String(), "commitment bases") {
						t.Fatalf("%s: the plan does not count the commitments:\n%s", k.Hash, plan)
					}
				}
				held := g.Backend.Held(0)
				var want int64
				for _, k := range keySets {
					plan, _ := g.Backend.Plan(0, k)
					want += plan.Commitments
				}
				if held.Commitments != want {
					t.Fatalf("device 0 holds %d bytes of commitment bases, the plans %d", held.Commitments, want)
				}
				t.Logf("device 0 holds %+v", held)
			})
		}
	}
}

// TestKeysWithoutCommitmentsHoldNoCommitmentMemory: a key set without
// commitments places no bases and no commitment MSM buffer, and its proof
// runs no commitment MSM.
func TestKeysWithoutCommitmentsHoldNoCommitmentMemory(t *testing.T) {
	g := openGPU(t, gpuprove.Options{BG2: true})
	k := setupKeys(t, "mimc", 1<<12)
	if err := g.Backend.Preload(k); err != nil {
		t.Fatal(err)
	}
	plan, err := g.Backend.Plan(0, k)
	if err != nil {
		t.Fatal(err)
	}
	w, err := prover.Witness(k, []byte("no-commitments"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := prover.Prove(context.Background(), k, g.Backend, w, nil); err != nil {
		t.Fatal(err)
	}
	if held := g.Backend.Held(0); held.Commitments != 0 || plan.Commitments != 0 || plan.CommitScratch != 0 || g.Backend.CommitmentMSMs() != 0 {
		t.Fatalf("mimc: held %+v, plan %+v, %d commitment MSMs", held, plan, g.Backend.CommitmentMSMs())
	}
}

// witnessPair is a full witness and its public part.
type witnessPair struct {
	full, public witness.Witness
}

func newWitnessPair(t *testing.T, a frontend.Circuit) witnessPair {
	t.Helper()
	full, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	public, err := full.Public()
	if err != nil {
		t.Fatal(err)
	}
	return witnessPair{full, public}
}
