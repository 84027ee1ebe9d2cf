package cuda

import (
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// TestGrothHInTwoSteps: GrothMul then GrothSubDiv, with C's values where
// B's were, give GrothH's result element for element.
func TestGrothHInTwoSteps(t *testing.T) {
	d := testDevice(t)
	for _, logN := range []int{0, 3, 12, 17} {
		n := 1 << logN
		dom, err := d.NewDomain(logN, DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		a, b, c := randomFr(n), randomFr(n), randomFr(n)
		one := make([]Ptr, 3)
		for i, v := range [][]fr.Element{a, b, c} {
			if one[i], err = Upload(d, v, DefaultStream); err != nil {
				t.Fatal(err)
			}
		}
		if err := dom.GrothH(one[0], one[1], one[2], DefaultStream); err != nil {
			t.Fatal(err)
		}
		want := make([]fr.Element, n)
		if err := CopyOut(d, want, one[0], DefaultStream); err != nil {
			t.Fatal(err)
		}
		// Two vectors: a, then b, then c into b's place.
		two := make([]Ptr, 2)
		for i, v := range [][]fr.Element{a, b} {
			if two[i], err = Upload(d, v, DefaultStream); err != nil {
				t.Fatal(err)
			}
		}
		if err := dom.GrothMul(two[0], two[1], DefaultStream); err != nil {
			t.Fatal(err)
		}
		if err := CopyIn(d, two[1], c, DefaultStream); err != nil {
			t.Fatal(err)
		}
		if err := dom.GrothSubDiv(two[0], two[1], DefaultStream); err != nil {
			t.Fatal(err)
		}
		got := make([]fr.Element, n)
		if err := CopyOut(d, got, two[0], DefaultStream); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if !got[i].Equal(&want[i]) {
				t.Fatalf("2^%d: element %d of the two steps differs from GrothH's", logN, i)
			}
		}
		for _, p := range append(one, two...) {
			_ = d.Free(p)
		}
		_ = dom.Close()
	}
}
