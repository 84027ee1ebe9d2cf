package circuits

import (
	"crypto/sha256"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/frontend"
)

// The count of shapes the costs were not measured on is the compiled count:
// more messages, more blocks per message, and the compressions of the lookup
// sums where they land.
func TestSHA2Prediction(t *testing.T) {
	layouts := []Layout{{"messages": 3, "blocks": 1}, {"messages": 2, "blocks": 2}}
	if testing.Short() || raceEnabled {
		layouts = layouts[:1] // each compiles 200,000 constraints
	}
	for _, l := range layouts {
		checkPrediction(t, SHA2{}, l)
	}
}

// A partition's public digests are crypto/sha256's of its messages, which
// the system accepts and whose digest it refuses once altered; messages and
// partitions differ.
func TestSHA2DigestsAreSHA256s(t *testing.T) {
	l := Layout{"messages": 2, "blocks": 2}
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
	seen := map[[sha256.Size]byte]bool{}
	for p := range 2 {
		asg, err := SHA2{}.Assign(l, []byte("sha2"), p)
		if err != nil {
			t.Fatal(err)
		}
		a := asg.(*sha2Circuit)
		for j, m := range a.Messages {
			if len(m) != 119 {
				t.Fatalf("two blocks hash %d bytes, want 119", len(m))
			}
			msg := make([]byte, len(m))
			for i, b := range m {
				msg[i] = b.Val.(uint8)
			}
			var got [sha256.Size]byte
			for half, v := range a.Digests[j] {
				e := v.(fr.Element)
				b := e.Bytes()
				copy(got[16*half:], b[16:])
			}
			if want := sha256.Sum256(msg); got != want {
				t.Fatalf("partition %d message %d: digest %x, crypto/sha256 %x", p, j, got, want)
			}
			seen[got] = true
		}
		if err := solve(a); err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
		if p == 0 {
			var e fr.Element
			e.SetUint64(1)
			e.Add(&e, ptr(a.Digests[1][1].(fr.Element)))
			a.Digests[1][1] = e
			if solve(a) == nil {
				t.Fatal("a wrong digest satisfies the system")
			}
		}
	}
	if len(seen) != 4 {
		t.Errorf("2 partitions × 2 messages give %d digests", len(seen))
	}
}

func ptr[T any](v T) *T { return &v }
