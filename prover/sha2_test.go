package prover

import (
	"context"
	"os"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/frontend"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/keygen"
)

// TestSHA2Commitments proves SHA-256 of a short message with gnark's
// std/hash/sha2, whose byte operations are lookups in tables committed to:
// ~157k constraints, most of them the tables' (3 minutes on two busy
// cores), so it runs only with CUZK_LONG_TESTS=1.
func TestSHA2Commitments(t *testing.T) {
	if os.Getenv("CUZK_LONG_TESTS") != "1" {
		t.Skip("157k constraints: set CUZK_LONG_TESTS=1")
	}
	r := compileGadget(t, &circuits.SHA256{})
	pk, vk, err := keygen.Setup(r, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := &Keys{Circuit: "sha2", CS: r, PK: pk, VK: vk}
	full, err := frontend.NewWitness(circuits.NewSHA256([circuits.SHA256Len]byte{'c', 'u', 'z', 'k'}), ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	public, _ := full.Public()
	proof, _, err := Prove(context.Background(), k, CPU{}, full, nil)
	if err != nil {
		t.Fatalf("%s solver: %v", k.SolverName(), err)
	}
	if err := groth16.Verify(proof, vk, public); err != nil {
		t.Fatalf("gnark's verifier: %v", err)
	}
	t.Logf("%d constraints, %d commitments, solved by %s", r.GetNbConstraints(), len(proof.Commitments), k.SolverName())
}
