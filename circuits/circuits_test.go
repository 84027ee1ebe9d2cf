package circuits

import (
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/frontend"
)

// TestAssignmentsSatisfy checks that every circuit's assignment solves its
// R1CS, and that partitions of one job get different public inputs.
func TestAssignmentsSatisfy(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			if name == "sha2" && raceEnabled {
				t.Skip("three solves of sha2's smallest layout take minutes under the race detector; TestSHA2DigestsAreSHA256s solves sha2")
			}
			c, _ := Lookup(name)
			target := max(1<<12, Domain(smallestInstance(t, c)))
			l, err := c.Layout(target)
			if err != nil {
				t.Fatal(err)
			}
			ccs, err := Compile(c, l)
			if err != nil {
				t.Fatal(err)
			}
			if n := ccs.GetNbConstraints(); n <= target/2 || n > target {
				t.Errorf("layout %s gave %d constraints for a target of %d", l, n, target)
			}
			var publics []string
			for p := 0; p < 3; p++ {
				a, err := c.Assign(l, []byte("seed"), p)
				if err != nil {
					t.Fatal(err)
				}
				w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ccs.Solve(w); err != nil {
					t.Fatalf("partition %d: %v", p, err)
				}
				pub, _ := w.Public()
				b, _ := pub.MarshalBinary()
				publics = append(publics, string(b))
			}
			if publics[0] == publics[1] || publics[1] == publics[2] {
				t.Errorf("partitions share public inputs")
			}
		})
	}
}

func TestBadTargets(t *testing.T) {
	for _, name := range Names() {
		c, _ := Lookup(name)
		for _, n := range []int{-1, 0, 10} {
			if _, err := c.Layout(n); err == nil {
				t.Errorf("%s: target %d accepted", name, n)
			}
		}
	}
	if _, err := Lookup("nope"); err == nil {
		t.Error("unknown circuit accepted")
	}
}

// TestPorepPartitionsDiffer checks that the partitions of a job challenge
// different nodes, so that their public inputs differ, at the smallest size.
func TestPorepPartitionsDiffer(t *testing.T) {
	c := PoRep{}
	l, err := c.Layout(MinConstraints)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for p := 0; p < 10; p++ {
		for k := 0; k < l["challenges"]; k++ {
			idx := porepChallenge([]byte("s"), l["depth"], l["challenges"], p, k)
			if q, ok := seen[idx]; ok {
				t.Fatalf("partitions %d and %d both challenge node %d (layout %s)", q, p, idx, l)
			}
			seen[idx] = p
		}
	}
}
