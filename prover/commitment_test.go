package prover

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"math/big"
	"sync"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/internal/testenv"
	"github.com/cuzk/cuzk/keygen"
)

// gadgetCases are circuits whose gnark std gadgets commit, with two
// witnesses each.
var gadgetCases = []struct {
	name    string
	circuit frontend.Circuit
	assign  func(i int) frontend.Circuit
}{
	{"commit", &circuits.WithCommitment{}, func(i int) frontend.Circuit {
		return &circuits.WithCommitment{X: 3 + i, Y: (3 + i) * (3 + i)}
	}},
	{"two-commitments", &circuits.TwoCommitments{}, func(i int) frontend.Circuit { return &circuits.TwoCommitments{X: 5 + i, Y: 7, Z: (5 + i) * 7} }},
	{"rangecheck", &circuits.RangeCheck{}, func(i int) frontend.Circuit { return circuits.NewRangeCheck(uint64(1000003 + i)) }},
	{"logderivlookup", &circuits.TableLookup{}, func(i int) frontend.Circuit { return circuits.NewTableLookup(uint64(11 + i)) }},
	{"emulated", &circuits.EmulatedMul{}, func(i int) frontend.Circuit {
		return circuits.NewEmulatedMul(big.NewInt(int64(123456789+i)), new(big.Int).Lsh(big.NewInt(987654321), 100))
	}},
}

func compileGadget(t testing.TB, c frontend.Circuit) *cs.R1CS {
	t.Helper()
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, c)
	if err != nil {
		t.Fatal(err)
	}
	return ccs.(*cs.R1CS)
}

// TestCommitmentProofsVerify proves each gadget circuit with keys from
// keygen and from gnark's setup, with both solvers, and checks what a gnark
// user cares about: gnark's verifier accepts the proof, the commitments are
// the ones gnark's prover computes for the same witness, and the wires are
// gnark's solver's.
func TestCommitmentProofsVerify(t *testing.T) {
	for _, tc := range gadgetCases {
		t.Run(tc.name, func(t *testing.T) {
			r := compileGadget(t, tc.circuit)
			info := r.CommitmentInfo.(constraint.Groth16Commitments)
			if len(info) == 0 {
				t.Fatalf("%s has no commitments: the test proves nothing new", tc.name)
			}
			t.Logf("%s: %d constraints, %d commitments", tc.name, r.GetNbConstraints(), len(info))
			kpk, kvk, err := keygen.Setup(r, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			gpk, gvk, err := groth16.Setup(r)
			if err != nil {
				t.Fatal(err)
			}
			for _, keys := range []struct {
				name string
				pk   *groth16bls.ProvingKey
				vk   *groth16bls.VerifyingKey
			}{{"keygen", kpk, kvk}, {"gnark-setup", gpk.(*groth16bls.ProvingKey), gvk.(*groth16bls.VerifyingKey)}} {
				for i, solver := range []Solver{SolverAuto, SolverGnark} {
					mask := testenv.FixedMask(t, r)
					k := &Keys{Circuit: tc.name, CS: r, PK: keys.pk, VK: keys.vk, Solver: solver, SolverOptions: mask}
					full, err := frontend.NewWitness(tc.assign(i), ecc.BLS12_381.ScalarField())
					if err != nil {
						t.Fatal(err)
					}
					public, _ := full.Public()
					proof, _, err := Prove(context.Background(), k, CPU{}, full, nil)
					if err != nil {
						t.Fatalf("%s keys, %s solver: %v", keys.name, k.SolverName(), err)
					}
					if err := groth16.Verify(proof, keys.vk, public); err != nil {
						t.Fatalf("%s keys, %s solver: gnark's verifier: %v", keys.name, k.SolverName(), err)
					}
					ref, err := groth16.Prove(r, keys.pk, full, backend.WithSolverOptions(mask...))
					if err != nil {
						t.Fatalf("gnark's prover: %v", err)
					}
					refCm := ref.(*groth16bls.Proof).Commitments
					if len(refCm) != len(proof.Commitments) {
						t.Fatalf("%d commitments, gnark's prover %d", len(proof.Commitments), len(refCm))
					}
					for j := range refCm {
						if !refCm[j].Equal(&proof.Commitments[j]) {
							t.Errorf("%s keys, %s solver: commitment %d differs from gnark's", keys.name, k.SolverName(), j)
						}
					}
					// The proof survives gnark's encoding.
					var buf bytes.Buffer
					if _, err := proof.WriteTo(&buf); err != nil {
						t.Fatal(err)
					}
					back := groth16.NewProof(ecc.BLS12_381)
					if _, err := back.ReadFrom(&buf); err != nil {
						t.Fatal(err)
					}
					if err := groth16.Verify(back, keys.vk, public); err != nil {
						t.Fatalf("decoded proof: %v", err)
					}
				}
			}
		})
	}
}

// TestCommitmentWiresMatchGnark solves with cuzk's solver and gnark's and
// compares every wire: the commitment hint gives both the same values.
func TestCommitmentWiresMatchGnark(t *testing.T) {
	tc := gadgetCases[2] // rangecheck: solved by cuzk's solver
	r := compileGadget(t, tc.circuit)
	pk, vk, err := keygen.Setup(r, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	full, err := frontend.NewWitness(tc.assign(0), ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	mask := testenv.FixedMask(t, r)
	cuzk := &Keys{CS: r, PK: pk, VK: vk, SolverOptions: mask}
	gnark := &Keys{CS: r, PK: pk, VK: vk, Solver: SolverGnark, SolverOptions: mask}
	if cuzk.SolverName() != "cuzk" {
		t.Fatalf("rangecheck is solved by %s, not cuzk's solver", cuzk.SolverName())
	}
	a, err := Synthesize(cuzk, full)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Synthesize(gnark, full)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Wires) != len(b.Wires) {
		t.Fatalf("%d wires, gnark %d", len(a.Wires), len(b.Wires))
	}
	for i := range a.Wires {
		if !a.Wires[i].Equal(&b.Wires[i]) {
			t.Fatalf("wire %d: cuzk %s, gnark %s", i, a.Wires[i].String(), b.Wires[i].String())
		}
	}
	for i := range a.Commitments.Points {
		if !a.Commitments.Points[i].Equal(&b.Commitments.Points[i]) {
			t.Fatalf("commitment %d differs", i)
		}
	}
}

// committingCPU is the CPU backend with commitment MSMs of its own, as the
// GPU backend has them: it counts its calls, and fails them with fail set.
type committingCPU struct {
	CPU
	fail error

	mu                 sync.Mutex
	commits, knowledge int
}

func (b *committingCPU) CommitMSM(k *Keys, i int, scalars []fr.Element) (curve.G1Affine, error) {
	b.mu.Lock()
	b.commits++
	b.mu.Unlock()
	var p curve.G1Affine
	if b.fail != nil {
		return p, b.fail
	}
	_, err := p.MultiExp(k.PK.CommitmentKeys[i].Basis, scalars, ecc.MultiExpConfig{})
	return p, err
}

func (b *committingCPU) KnowledgeMSM(k *Keys, scalars []fr.Element) (curve.G1Affine, error) {
	b.mu.Lock()
	b.knowledge++
	b.mu.Unlock()
	var bases []curve.G1Affine
	for _, ck := range k.PK.CommitmentKeys {
		bases = append(bases, ck.BasisExpSigma...)
	}
	var p curve.G1Affine
	if b.fail != nil {
		return p, b.fail
	}
	_, err := p.MultiExp(bases, scalars, ecc.MultiExpConfig{})
	return p, err
}

// A backend with commitment MSMs computes every commitment and the proof of
// knowledge, through Prove and through the stages' For variants, and its
// proofs are the host's point for point; one without leaves them to the
// host; and a failing one fails the proof with its own error, with either
// solver, rather than passing for an unsatisfied witness or falling back.
func TestCommitmentMSMsUseTheBackend(t *testing.T) {
	if CapabilitiesOf(CPU{}).Commitments != nil || CapabilitiesOf(&committingCPU{}).Commitments == nil {
		t.Fatal("CapabilitiesOf does not find the commitment MSMs where they are")
	}
	for _, tc := range gadgetCases[:3] { // commit, two-commitments, rangecheck
		t.Run(tc.name, func(t *testing.T) {
			r := compileGadget(t, tc.circuit)
			nCommit := len(r.CommitmentInfo.(constraint.Groth16Commitments))
			pk, vk, err := keygen.Setup(r, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, solver := range []Solver{SolverAuto, SolverGnark} {
				k := &Keys{Circuit: tc.name, CS: r, PK: pk, VK: vk, Solver: solver, SolverOptions: testenv.FixedMask(t, r)}
				full, err := frontend.NewWitness(tc.assign(0), ecc.BLS12_381.ScalarField())
				if err != nil {
					t.Fatal(err)
				}
				public, _ := full.Public()
				ref, _, err := Prove(context.Background(), k, CPU{}, full, nil)
				if err != nil {
					t.Fatal(err)
				}
				b := &committingCPU{}
				proof, _, err := Prove(context.Background(), k, b, full, nil)
				if err != nil {
					t.Fatalf("%s solver: %v", k.SolverName(), err)
				}
				if b.commits != nCommit || b.knowledge != 1 {
					t.Fatalf("%s solver: the backend computed %d commitments and %d proofs of knowledge, want %d and 1", k.SolverName(), b.commits, b.knowledge, nCommit)
				}
				if err := groth16.Verify(proof, vk, public); err != nil {
					t.Fatalf("%s solver: gnark's verifier: %v", k.SolverName(), err)
				}
				if !proof.CommitmentPok.Equal(&ref.CommitmentPok) || len(proof.Commitments) != len(ref.Commitments) {
					t.Fatalf("%s solver: the backend's proof of knowledge differs from the host's", k.SolverName())
				}
				for j := range ref.Commitments {
					if !proof.Commitments[j].Equal(&ref.Commitments[j]) {
						t.Fatalf("%s solver: commitment %d differs from the host's", k.SolverName(), j)
					}
				}
				// The stages without a backend leave the fake alone.
				if _, err := Synthesize(k, full); err != nil {
					t.Fatal(err)
				}
				if b.commits != nCommit {
					t.Fatalf("Synthesize used a backend it was not given")
				}

				errDevice := errors.New("device MSM failed")
				_, err = SynthesizeFor(&committingCPU{fail: errDevice}, k, full)
				if !errors.Is(err, errDevice) || errors.Is(err, ErrUnsatisfied) {
					t.Fatalf("%s solver: a failing commitment MSM gave %v, want its own error", k.SolverName(), err)
				}
				sol, err := SynthesizeFor(b, k, full)
				if err != nil {
					t.Fatal(err)
				}
				prep, err := Prep(k, sol)
				if err != nil {
					t.Fatal(err)
				}
				comp, err := CPU{}.Compute(context.Background(), k, cpuStaged{prep})
				if err != nil {
					t.Fatal(err)
				}
				bg2, err := BG2(context.Background(), k, prep)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := FinalizeFor(&committingCPU{fail: errDevice}, k, comp, &bg2, prep, rand.Reader); !errors.Is(err, errDevice) {
					t.Fatalf("a failing proof of knowledge gave %v, want its own error", err)
				}
			}
		})
	}
}
