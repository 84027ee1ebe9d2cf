package prover

import (
	"context"
	"os"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	tedwards "github.com/consensys/gnark-crypto/ecc/twistededwards"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/constraint"
	csolver "github.com/consensys/gnark/constraint/solver"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/std/algebra/native/twistededwards"
	"github.com/consensys/gnark/std/hash/mimc"
	"github.com/consensys/gnark/std/hash/sha3"
	"github.com/consensys/gnark/std/math/bits"
	"github.com/consensys/gnark/std/math/cmp"
	"github.com/consensys/gnark/std/math/uints"
	"github.com/consensys/gnark/std/selector"

	"github.com/cuzk/cuzk/internal/testenv"
	"github.com/cuzk/cuzk/keygen"
)

// Gadgets of gnark's std library without commitments of their own (the
// ones with are in commitment_test.go). Each hashes or transforms private
// inputs and checks something that holds for any input, so that no native
// reference is needed: what is checked is that cuzk's prover proves what
// gnark's solver solves, with the same wires. (std/hash/poseidon2 does not
// compile for BLS12-381's field in gnark v0.14.)

type gMiMC struct{ X, Y frontend.Variable }

func (c *gMiMC) Define(api frontend.API) error {
	h, err := mimc.NewMiMC(api)
	if err != nil {
		return err
	}
	h.Write(c.X, c.Y)
	api.AssertIsDifferent(h.Sum(), 0)
	return nil
}

type gBits struct {
	X frontend.Variable `gnark:",public"`
}

func (c *gBits) Define(api frontend.API) error {
	b := bits.ToBinary(api, c.X, bits.WithNbDigits(64))
	api.AssertIsEqual(bits.FromBinary(api, b), c.X)
	return nil
}

type gCmp struct{ X, Y frontend.Variable }

func (c *gCmp) Define(api frontend.API) error {
	api.AssertIsEqual(cmp.IsLess(api, c.X, c.Y), 1)
	return nil
}

type gMux struct {
	Sel    frontend.Variable
	Inputs [8]frontend.Variable
	Out    frontend.Variable `gnark:",public"`
}

func (c *gMux) Define(api frontend.API) error {
	api.AssertIsEqual(selector.Mux(api, c.Sel, c.Inputs[:]...), c.Out)
	return nil
}

// gJubjub multiplies Jubjub's base point (BLS12-381's twisted Edwards
// curve, native) by a private scalar.
type gJubjub struct{ S frontend.Variable }

func (c *gJubjub) Define(api frontend.API) error {
	curve, err := twistededwards.NewEdCurve(api, tedwards.BLS12_381)
	if err != nil {
		return err
	}
	base := curve.Params().Base
	p := curve.ScalarMul(twistededwards.Point{X: base[0], Y: base[1]}, c.S)
	curve.AssertIsOnCurve(p)
	return nil
}

type gKeccak struct{ Message [8]uints.U8 }

func (c *gKeccak) Define(api frontend.API) error {
	h, err := sha3.NewLegacyKeccak256(api)
	if err != nil {
		return err
	}
	h.Write(c.Message[:])
	if len(h.Sum()) != 32 {
		api.AssertIsEqual(1, 0)
	}
	return nil
}

func TestStdGadgets(t *testing.T) {
	cases := []struct {
		name    string
		circuit frontend.Circuit
		assign  frontend.Circuit
		long    bool
	}{
		{"hash/mimc", &gMiMC{}, &gMiMC{X: 1, Y: 2}, false},
		{"math/bits", &gBits{}, &gBits{X: 0xdeadbeefcafe}, false},
		{"math/cmp", &gCmp{}, &gCmp{X: 3, Y: 1000}, false},
		{"selector", &gMux{}, &gMux{Sel: 5, Inputs: [8]frontend.Variable{10, 11, 12, 13, 14, 15, 16, 17}, Out: 15}, false},
		{"algebra/native/twistededwards", &gJubjub{}, &gJubjub{S: 123456789}, false},
		{"hash/sha3 (keccak256)", &gKeccak{}, &gKeccak{Message: [8]uints.U8(uints.NewU8Array([]byte("cuzkcuzk")))}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.long && os.Getenv("CUZK_LONG_TESTS") != "1" {
				t.Skip("large: set CUZK_LONG_TESTS=1")
			}
			r := compileGadget(t, tc.circuit)
			pk, vk, err := keygen.Setup(r, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			full, err := frontend.NewWitness(tc.assign, ecc.BLS12_381.ScalarField())
			if err != nil {
				t.Fatal(err)
			}
			var opts []csolver.Option
			info := r.CommitmentInfo.(constraint.Groth16Commitments)
			if len(info) > 0 {
				opts = testenv.FixedMask(t, r)
			}
			cuzk := &Keys{CS: r, PK: pk, VK: vk, SolverOptions: opts}
			gnark := &Keys{CS: r, PK: pk, VK: vk, SolverOptions: opts, Solver: SolverGnark}
			a, err := Synthesize(cuzk, full)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Synthesize(gnark, full)
			if err != nil {
				t.Fatal(err)
			}
			for i := range b.Wires {
				if !a.Wires[i].Equal(&b.Wires[i]) {
					t.Fatalf("wire %d: %s solver %s, gnark's %s", i, cuzk.SolverName(), a.Wires[i].String(), b.Wires[i].String())
				}
			}
			proof, _, err := Prove(context.Background(), cuzk, CPU{}, full, nil)
			if err != nil {
				t.Fatal(err)
			}
			public, _ := full.Public()
			if err := groth16.Verify(proof, vk, public); err != nil {
				t.Fatalf("gnark's verifier: %v", err)
			}
			t.Logf("%s: %d constraints, %d commitments, solved by %s", tc.name, r.GetNbConstraints(), len(info), cuzk.SolverName())
		})
	}
}
