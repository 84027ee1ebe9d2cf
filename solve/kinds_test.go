package solve

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
)

// randomValue is 0 or 1 mostly, as in circuits of bits, else a value that
// is not a bit but is near one (2, −1, q − 2), small, or any element.
func randomValue(rng *rand.Rand, bitShare float64) fr.Element {
	var v fr.Element
	if rng.Float64() < bitShare {
		v.SetUint64(uint64(rng.IntN(2)))
		return v
	}
	switch rng.IntN(5) {
	case 0:
		v.SetUint64(2)
	case 1:
		v.SetInt64(-1)
	case 2:
		v.SetInt64(-2)
	case 3:
		v.SetUint64(rng.Uint64())
	default:
		v.SetRandom()
	}
	return v
}

// eval's integer sums of bits give what the field's operations give, term
// by term, on expressions of bits and of other values, with small, large
// and negative coefficients; and so do kindOf and mulKinds.
func TestKindsMatchFieldOperations(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var coefs []fr.Element // gnark's first ids: 0, 1, 2, −1, −2
	for _, c := range []int64{0, 1, 2, -1, -2, 3, 1 << 31, -(1 << 32), smallCoef - 1, -(smallCoef - 1), smallCoef, -smallCoef, 1 << 62} {
		var e fr.Element
		e.SetInt64(c)
		coefs = append(coefs, e)
	}
	for range 4 {
		var e fr.Element
		e.SetRandom()
		coefs = append(coefs, e)
	}
	var big2 fr.Element
	big2.SetBigInt(new(big.Int).Lsh(big.NewInt(1), 200))
	coefs = append(coefs, big2)
	var k fr.Element
	k.SetUint64(7)
	p := &Program{coefs: coefs, small: smallCoefs(coefs), consts: []fr.Element{{}, k}}
	if p.small[3] != -1 || p.small[4] != -2 || p.small[9] != -(smallCoef-1) || p.small[10] != notSmall || p.small[11] != notSmall {
		t.Fatalf("small coefficients %v", p.small)
	}
	const nWires = 64
	v := &values{w: make(fr.Vector, nWires), kind: make([]uint8, nWires)}
	for trial := range 2000 {
		bitShare := []float64{1, 0.9, 0.5, 0}[trial%4]
		for i := range v.w {
			v.w[i] = randomValue(rng, bitShare)
		}
		v.mark(0, nWires)
		for i := range v.w {
			want := kindAny
			if v.w[i].IsZero() {
				want = kindZero
			} else if v.w[i].IsOne() {
				want = kindOne
			}
			if v.kind[i] != want {
				t.Fatalf("kindOf(%s) = %d, want %d", v.w[i].String(), v.kind[i], want)
			}
		}
		n := rng.IntN(40)
		ts := make([]term, n)
		// A run of one coefficient kind (a word packed with powers of
		// two, a chain of −2) or a mix of all.
		pick := rng.IntN(len(coefs))
		for i := range ts {
			c := pick
			if trial%3 == 0 {
				c = rng.IntN(len(coefs))
			}
			ts[i] = term{coef: uint32(c), wire: uint32(rng.IntN(nWires))}
		}
		kc := uint32(rng.IntN(2))
		want := p.consts[kc]
		for _, tt := range ts {
			var m fr.Element
			m.Mul(&coefs[tt.coef], &v.w[tt.wire])
			want.Add(&want, &m)
		}
		var got fr.Element
		kind := p.eval(kc, ts, v, &got)
		if !got.Equal(&want) {
			t.Fatalf("trial %d: eval of %d terms %v gives %s, the field %s", trial, n, ts, got.String(), want.String())
		}
		if kind != kindOf(&want) {
			t.Fatalf("trial %d: eval's kind %d for %s", trial, kind, want.String())
		}
		a, b := v.w[rng.IntN(nWires)], v.w[rng.IntN(nWires)]
		var prod, ref fr.Element
		pk := mulKinds(&prod, &a, &b, kindOf(&a), kindOf(&b))
		ref.Mul(&a, &b)
		if !prod.Equal(&ref) || pk != kindOf(&ref) {
			t.Fatalf("mulKinds(%s, %s) = %s of kind %d, want %s", a.String(), b.String(), prod.String(), pk, ref.String())
		}
	}
}

// kindsCircuit puts bits and other values through each shape of
// constraint the kinds take a short way through: products of wires, of
// long expressions with small, negative and large coefficients, checks
// a·b = c, and bit decompositions.
type kindsCircuit struct {
	X, Y [20]frontend.Variable
	P    frontend.Variable `gnark:",public"`
}

func (c *kindsCircuit) Define(api frontend.API) error {
	var l, r frontend.Variable = 3, 0
	for i := range c.X {
		xy := api.Mul(c.X[i], c.Y[i])
		// (1 − x)·3y: one term and a constant each side
		nxy := api.Mul(api.Sub(1, c.X[i]), api.Mul(3, c.Y[i]))
		l = api.Add(l, api.Mul(c.X[i], 1<<i), api.Mul(xy, -2), nxy)
		r = api.Sub(r, api.Mul(c.Y[i], new(big.Int).Lsh(big.NewInt(1), uint(i*12))))
		// x + y − 2xy, the XOR of bits, times a third value
		api.AssertIsEqual(api.Mul(api.Sub(api.Add(c.X[i], c.Y[i]), api.Mul(2, xy)), c.Y[(i+1)%len(c.Y)]),
			api.Mul(c.Y[(i+1)%len(c.Y)], api.Sub(api.Add(c.X[i], c.Y[i]), api.Mul(2, xy))))
		api.AssertIsEqual(xy, api.Mul(c.Y[i], c.X[i]))
	}
	lr := api.Mul(l, r)
	bits := api.ToBinary(api.Add(l, lr), 255)
	api.AssertIsEqual(api.FromBinary(bits...), api.Add(l, lr))
	api.AssertIsEqual(api.Mul(c.P, 1), c.P)
	return nil
}

// cuzk's solver gives gnark's W, A, B and C on a circuit whose wires are
// bits in some witnesses and other values, on the same constraints, in
// others; and the checks a·b = c of bits fail where gnark's do.
func TestKindsMatchGnark(t *testing.T) {
	p, r := gadgetProgram(t, &kindsCircuit{})
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 40 {
		bitShare := []float64{1, 0.95, 0.5, 0}[trial%4]
		var a kindsCircuit
		for i := range a.X {
			a.X[i], a.Y[i] = randomValue(rng, bitShare), randomValue(rng, bitShare)
		}
		a.P = randomValue(rng, bitShare)
		w, err := frontend.NewWitness(&a, ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Solve(w.Vector().(fr.Vector))
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		want, err := r.Solve(w)
		if err != nil {
			t.Fatalf("trial %d: gnark: %v", trial, err)
		}
		ws := want.(*cs.R1CSSolution)
		for _, v := range []struct {
			what      string
			got, want fr.Vector
		}{{"W", got.W, ws.W}, {"A", got.A, ws.A}, {"B", got.B, ws.B}, {"C", got.C, ws.C}} {
			if i := firstDiff(v.got, v.want); i >= 0 {
				t.Fatalf("trial %d (bits %.0f %%): %s differs from gnark's at %d", trial, 100*bitShare, v.what, i)
			}
		}
		p.Release(got)
	}
}

// boolCircuit checks a product of bits against a bit, and that a value is a bit.
type boolCircuit struct{ X, Y, Z, B frontend.Variable }

func (c *boolCircuit) Define(api frontend.API) error {
	api.AssertIsEqual(api.Mul(c.X, c.Y), c.Z)
	api.AssertIsBoolean(c.B)
	return nil
}

func TestKindsChecksFailAsGnarks(t *testing.T) {
	p, r := gadgetProgram(t, &boolCircuit{})
	for _, tc := range []struct {
		x, y, z, b int64
		ok         bool
	}{
		{1, 1, 1, 0, true}, {1, 0, 0, 1, true}, {0, 1, 0, 1, true}, {2, 3, 6, 1, true},
		{1, 1, 0, 0, false}, {0, 1, 1, 0, false}, {1, 0, 1, 1, false}, {2, 3, 1, 0, false},
		{1, 1, 1, 2, false}, {0, 0, 0, -1, false},
	} {
		a := boolCircuit{X: tc.x, Y: tc.y, Z: tc.z, B: tc.b}
		w, err := frontend.NewWitness(&a, ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Solve(w.Vector().(fr.Vector))
		_, gerr := r.Solve(w)
		if (err == nil) != tc.ok || (gerr == nil) != tc.ok {
			t.Fatalf("%v: cuzk %v, gnark %v; want success %v", tc, err, gerr, tc.ok)
		}
		if !tc.ok && !errors.Is(err, ErrUnsatisfied) {
			t.Fatalf("%v: %v, want ErrUnsatisfied", tc, err)
		}
	}
}
