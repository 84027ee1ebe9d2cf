package solve

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
	csolver "github.com/consensys/gnark/constraint/solver"
	_ "github.com/consensys/gnark/std" // registers std's hints
)

// gnarkHint is the registered hint named name.
func gnarkHint(t *testing.T, name string) csolver.Hint {
	t.Helper()
	for _, h := range csolver.GetRegisteredHints() {
		if csolver.GetHintName(h) == name {
			return h
		}
	}
	t.Fatalf("no registered hint %s", name)
	return nil
}

// Each native std hint gives gnark's outputs, reduced as gnark's solver
// reduces them, or defers to gnark's function on inputs it does not handle.
func TestStdHintsMatchGnark(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() fr.Element {
		var e fr.Element
		switch rng.IntN(4) {
		case 0:
			e.SetUint64(uint64(rng.IntN(256)))
		case 1:
			e.SetUint64(rng.Uint64())
		case 2:
			e.SetRandom()
		default:
			e.SetInt64(-int64(rng.IntN(1000))) // r − k: top bits set
		}
		return e
	}
	q := fr.Modulus()
	cases := []struct {
		name string
		out  int
		in   func() []fr.Element
	}{
		{nBitsHint, 255, func() []fr.Element { return []fr.Element{random()} }},
		{nBitsHint, 300, func() []fr.Element { return []fr.Element{random()} }},
		{"github.com/consensys/gnark/std/math/uints.xorHint", 1, func() []fr.Element { return []fr.Element{random(), random()} }},
		{"github.com/consensys/gnark/std/math/uints.andHint", 1, func() []fr.Element { return []fr.Element{random(), random()} }},
		{"github.com/consensys/gnark/std/math/uints.orHint", 1, func() []fr.Element { return []fr.Element{random(), random()} }},
		{"github.com/consensys/gnark/std/math/bitslice.partitionHint", 2, func() []fr.Element {
			var s fr.Element
			s.SetUint64(uint64(rng.IntN(300)))
			return []fr.Element{s, random()}
		}},
		{"github.com/consensys/gnark/std/math/bitslice.partitionHint", 2, func() []fr.Element {
			var s fr.Element
			s.SetUint64(uint64(rng.IntN(1 << 16))) // gnark's hint makes 2^s: a larger s takes its memory
			return []fr.Element{s, random()}
		}},
		{"github.com/consensys/gnark/std/rangecheck.DecomposeHint", 0, func() []fr.Element {
			var a, b fr.Element
			a.SetUint64(uint64(1 + rng.IntN(255)))
			b.SetUint64(uint64(1 + rng.IntN(70)))
			return []fr.Element{a, b, random()}
		}},
		{"github.com/consensys/gnark/std/math/uints.toBytes", 8, func() []fr.Element {
			var n fr.Element
			n.SetUint64(uint64(7 + rng.IntN(3)))
			return []fr.Element{n, random()}
		}},
	}
	for _, c := range cases {
		fn := gnarkHint(t, c.name)
		kinds := 0
		for range 400 {
			in := c.in()
			nOut := c.out
			if nOut == 0 { // DecomposeHint: as many limbs as the sizes give, or one too many
				vs, ls := in[0].Uint64(), in[1].Uint64()
				nOut = int((vs+ls-1)/ls) + rng.IntN(2)
			}
			h := &hint{name: c.name, out0: uint32(len(in)), n: uint32(nOut)}
			h.std = stdHintOf(c.name, len(in), nOut)
			if h.std == stdNone {
				t.Fatalf("%s: not native", c.name)
			}
			coefs := []fr.Element{{}, one} // gnark's ids 0 and 1
			p := &Program{consts: []fr.Element{{}}, coefs: coefs, small: smallCoefs(coefs)}
			w := make(fr.Vector, len(in)+nOut)
			for i := range in {
				w[i] = in[i]
				h.inputs = append(h.inputs, []term{{coef: constraint.CoeffIdOne, wire: uint32(i)}})
			}
			v := &values{w: w, kind: make([]uint8, len(w))}
			v.mark(0, uint32(len(in)))
			native := p.runStd(h, v)
			bin := make([]*big.Int, len(in))
			bout := make([]*big.Int, nOut)
			for i := range in {
				bin[i] = in[i].BigInt(new(big.Int))
			}
			for i := range bout {
				bout[i] = new(big.Int)
			}
			err := fn(q, bin, bout)
			if !native { // gnark's function runs: nothing to compare
				continue
			}
			kinds++
			if err != nil {
				t.Fatalf("%s(%v): native solved it, gnark's fails: %v", c.name, bin, err)
			}
			for i, o := range bout {
				var want fr.Element
				want.SetBigInt(o)
				if !w[len(in)+i].Equal(&want) {
					t.Fatalf("%s(%v) output %d: native %s, gnark %s", c.name, bin, i, w[len(in)+i].String(), want.String())
				}
			}
		}
		if kinds == 0 {
			t.Errorf("%s: never computed natively", c.name)
		}
	}
}

const bsb22Placeholder = "github.com/consensys/gnark/frontend/cs.Bsb22CommitmentComputePlaceholder"

// sha2's byte operations, word splits and range-check limbs take the path
// without big.Int: its comparison with gnark (TestMatchesGnark) covers it.
func TestSHA2StdHintsAreNative(t *testing.T) {
	p, _, _, _ := program(t, "sha2", 1<<12)
	seen := map[stdHint]int{}
	for _, h := range p.hints {
		seen[h.std]++
		if h.std == stdNone && h.table == nil && h.name != bsb22Placeholder && h.name != randomizeHint {
			t.Errorf("hint %s is not native", h.name)
		}
	}
	for _, k := range []stdHint{stdXor, stdAnd, stdPartition, stdDecompose, stdToBytes} {
		if seen[k] == 0 {
			t.Errorf("no native hint of kind %d in sha2: %v", k, seen)
		}
	}
}
