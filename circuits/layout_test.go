package circuits

import (
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
)

// Every circuit's layout for a target of 2^k, k = 12..27, has at most 2^k
// constraints and more than 2^(k−1): its domain is 2^k, never 2^(k+1). The
// counts come from the measured unit costs; TestPredictedCountsCompile
// checks them against compilations. (A 16M target once gave 16,777,543
// constraints: a domain of 2^25 and twice the NTT and H work.) Below a
// circuit's smallest instance (sha2's is 157,756 constraints) a target gets
// that instance.
func TestLayoutsLandOnTheirPowerOfTwo(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			c, _ := Lookup(name)
			smallest := smallestInstance(t, c)
			for k := 12; k <= 27; k++ {
				target := 1 << k
				l, err := c.Layout(target)
				if err != nil {
					t.Fatalf("2^%d: %v", k, err)
				}
				n, err := c.Constraints(l)
				if err != nil {
					t.Fatalf("2^%d (%s): %v", k, l, err)
				}
				if target < smallest {
					if n != smallest {
						t.Errorf("2^%d, below the smallest instance (%d constraints): layout %s has %d", k, smallest, l, n)
					}
					continue
				}
				if n > target || Domain(n) != target {
					t.Errorf("2^%d: layout %s has %d constraints, a domain of %d", k, l, n, Domain(n))
				}
				t.Logf("2^%d: %s: %d constraints (%.2f%% of the domain)", k, l, n, 100*float64(n)/float64(target))
			}
		})
	}
}

// The predicted count is the compiled count, exactly, and the domain gnark's
// setup takes for it (fft.NewDomain of the constraint count) is 2^k.
func TestPredictedCountsCompile(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			c, _ := Lookup(name)
			for k := max(12, bits.Len(uint(smallestInstance(t, c)-1))); k <= 16; k++ {
				l, err := c.Layout(1 << k)
				if err != nil {
					t.Fatal(err)
				}
				checkPrediction(t, c, l)
				ccs, err := Compile(c, l)
				if err != nil {
					t.Fatal(err)
				}
				if d := fft.NewDomain(uint64(ccs.GetNbConstraints())).Cardinality; d != 1<<k {
					t.Errorf("2^%d: layout %s compiles to a domain of %d", k, l, d)
				}
			}
		})
	}
}

// CUZK_COMPILE_LAYOUTS=20,24 compiles every circuit at those powers of two
// and checks the count and the domain: minutes and tens of GiB at 2^24, so
// only on demand (the predictions at 2^12..2^16 are checked above, always).
func TestLargeLayoutsCompile(t *testing.T) {
	env := os.Getenv("CUZK_COMPILE_LAYOUTS")
	if env == "" {
		t.Skip("CUZK_COMPILE_LAYOUTS not set")
	}
	for _, f := range strings.Split(env, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 10 || k > 28 {
			t.Fatalf("CUZK_COMPILE_LAYOUTS=%s: want exponents 10..28", env)
		}
		for _, name := range Names() {
			c, _ := Lookup(name)
			l, err := c.Layout(1 << k)
			if err != nil {
				t.Fatal(err)
			}
			want, err := c.Constraints(l)
			if err != nil {
				t.Fatal(err)
			}
			got, err := countConstraints(c, l)
			if err != nil {
				t.Fatal(err)
			}
			if got != want || Domain(got) != 1<<k {
				t.Errorf("%s at 2^%d (%s): compiled %d constraints, predicted %d, domain %d", name, k, l, got, want, Domain(got))
			} else {
				t.Logf("%s at 2^%d (%s): %d constraints as predicted, domain 2^%d", name, k, l, got, k)
			}
		}
	}
}

func smallestInstance(t *testing.T, c Circuit) int {
	t.Helper()
	n, err := Smallest(c)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func checkPrediction(t *testing.T, c Circuit, l Layout) {
	t.Helper()
	want, err := countConstraints(c, l)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Constraints(l)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("%s %s: predicted %d constraints, compiled %d", c.Name(), l, got, want)
	}
}

// porep-sha's count is linear in each layout key at the round counts whose
// costs are measured differently (below four rounds) or on shapes layouts
// do not use (four and more), including layouts the search never picks.
func TestPoRepSHACountIsLinear(t *testing.T) {
	for _, rounds := range []int{1, 2, 4} {
		for _, l := range []Layout{
			{"challenges": 3, "depth": 2, "parents": 1, "fill": 1},
			{"challenges": 2, "depth": 3, "parents": 3, "fill": 5},
			{"challenges": 3, "depth": 2, "parents": 1, "fill": 1, "links": 1},
			{"challenges": 2, "depth": 3, "parents": 3, "fill": 5, "links": 1},
		} {
			if rounds == 1 && l["parents"] > 1 {
				continue // layouts keep one parent block at one round
			}
			l["rounds"] = rounds
			t.Run(fmt.Sprint(l), func(t *testing.T) { checkPrediction(t, PoRepSHA{}, l) })
		}
	}
}

// At full SHA-256, whose costs are measured on shapes without a path or a
// parent block, the prediction holds for a layout with both.
func TestPoRepSHAFullRoundsPrediction(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("compiles 180,000 constraints")
	}
	checkPrediction(t, PoRepSHA{}, Layout{"challenges": 1, "depth": 2, "parents": 2, "rounds": 64, "fill": 3, "links": 1})
}

// mimc's chain is compressed by gnark's compiler every 299 links, at two
// constraints each time: the prediction holds on both sides of the first
// compression (the 16M layout, 50,382 links, has 168 of them).
func TestMiMCCompressions(t *testing.T) {
	for _, n := range []int{mimcCompressEvery - 1, mimcCompressEvery} {
		checkPrediction(t, MiMCChain{}, Layout{"length": n})
	}
}

func TestDomain(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{1, 1}, {2, 2}, {3, 4}, {4095, 4096}, {4096, 4096}, {1 << 24, 1 << 24}, {1<<24 + 1, 1 << 25}, {16777543, 1 << 25},
	} {
		if got := Domain(tc.n); got != tc.want {
			t.Errorf("Domain(%d) = %d, want %d", tc.n, got, tc.want)
		}
		if tc.n > 1<<12 {
			continue // gnark's domain computes its twiddles: slow
		}
		if d := int(fft.NewDomain(uint64(tc.n)).Cardinality); d != tc.want {
			t.Errorf("gnark's domain for %d is %d, want %d", tc.n, d, tc.want)
		}
	}
}

func TestBadLayouts(t *testing.T) {
	for _, tc := range []struct {
		circuit string
		l       Layout
	}{
		{"mimc", Layout{}},
		{"porep", Layout{"depth": 0, "challenges": 1}},
		{"sha", Layout{"rounds": 0}},
		{"sha2", Layout{"messages": 1, "blocks": 0}},
		{"sha2", Layout{"messages": 0, "blocks": 1}},
		{"sha2", Layout{"blocks": 1}},
		{"porep-sha", Layout{"challenges": 1, "depth": 1, "parents": 1, "rounds": 65}},
		{"porep-sha", Layout{"challenges": 1, "depth": 21, "parents": 1, "rounds": 1}},
		{"porep-sha", Layout{"challenges": 1, "depth": 1, "parents": 0, "rounds": 1}},
		{"porep-sha", Layout{"challenges": 1, "depth": 1, "parents": 1, "rounds": 1, "fill": -1}},
		{"porep-sha", Layout{"challenges": 1, "depth": 1, "parents": 2, "rounds": 1}},
		{"porep-sha", Layout{"challenges": 1, "depth": 1, "parents": 1, "rounds": 1, "links": 2}},
	} {
		c, _ := Lookup(tc.circuit)
		if _, err := c.Constraints(tc.l); err == nil {
			t.Errorf("%s: layout %s accepted", tc.circuit, tc.l)
		}
		if _, err := c.Shape(tc.l); err == nil {
			t.Errorf("%s: layout %s has a shape", tc.circuit, tc.l)
		}
	}
}
