package circuits

import (
	"crypto/sha256"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/std/math/uints"
)

// The count of blocks the costs were not measured on is the compiled count:
// the compressions of the lookup sums land where predicted (three blocks
// add 26,472 constraints, the fourth 26,471).
func TestSHA2Prediction(t *testing.T) {
	blocks := []int{3, 4}
	if testing.Short() || raceEnabled {
		blocks = blocks[:1] // each compiles 200,000 constraints
	}
	for _, n := range blocks {
		checkPrediction(t, SHA2{}, Layout{"blocks": n})
	}
}

// A partition's public digest is crypto/sha256's of its message, which the
// system accepts and whose digest it refuses once altered; partitions hash
// different messages.
func TestSHA2DigestIsSHA256s(t *testing.T) {
	l := Layout{"blocks": 2}
	ccs, err := Compile(SHA2{}, l)
	if err != nil {
		t.Fatal(err)
	}
	solve := func(a *sha2Circuit) error {
		w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		_, err = ccs.Solve(w)
		return err
	}
	var digests [2][sha256.Size]byte
	for p := range digests {
		asg, err := SHA2{}.Assign(l, []byte("sha2"), p)
		if err != nil {
			t.Fatal(err)
		}
		a := asg.(*sha2Circuit)
		if len(a.Message) != 119 {
			t.Fatalf("two blocks hash %d bytes, want 119", len(a.Message))
		}
		msg := make([]byte, len(a.Message))
		for i, b := range a.Message {
			msg[i] = b.Val.(uint8)
		}
		for i, b := range a.Digest {
			digests[p][i] = b.Val.(uint8)
		}
		if want := sha256.Sum256(msg); digests[p] != want {
			t.Fatalf("partition %d: digest %x, crypto/sha256 %x", p, digests[p], want)
		}
		if err := solve(a); err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
		if p == 0 {
			a.Digest[31] = uints.NewU8(digests[p][31] ^ 1)
			if solve(a) == nil {
				t.Fatal("a wrong digest satisfies the system")
			}
		}
	}
	if digests[0] == digests[1] {
		t.Error("partitions 0 and 1 hash the same message")
	}
}
