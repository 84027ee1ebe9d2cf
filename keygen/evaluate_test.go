package keygen

import (
	"math/big"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"

	"github.com/cuzk/cuzk/circuits"
)

// sequentialABC is the textbook evaluation, one constraint after the other
// with L_{i+1} = ω·L_i·(τ − ωⁱ)/(τ − ωⁱ⁺¹), as gnark's setup does it: the
// reference for the parallel evaluator.
func sequentialABC(r *cs.R1CS, domain *fft.Domain, tau fr.Element) (A, B, C []fr.Element) {
	nbWires := r.NbInternalVariables + r.GetNbPublicVariables() + r.GetNbSecretVariables()
	A, B, C = make([]fr.Element, nbWires), make([]fr.Element, nbWires), make([]fr.Element, nbWires)
	var L, wi, den, t fr.Element
	one := fr.One()
	L.Exp(tau, new(big.Int).SetUint64(domain.Cardinality)).Sub(&L, &one).Mul(&L, &domain.CardinalityInv)
	den.Sub(&tau, &one)
	den.Inverse(&den)
	L.Mul(&L, &den)
	wi = one
	add := func(res *fr.Element, term constraint.Term) {
		var p fr.Element
		p.Mul(&r.Coefficients[term.CoeffID()], &L)
		res.Add(res, &p)
	}
	it := r.GetR1CIterator()
	for c := it.Next(); c != nil; c = it.Next() {
		for _, term := range c.L {
			add(&A[term.WireID()], term)
		}
		for _, term := range c.R {
			add(&B[term.WireID()], term)
		}
		for _, term := range c.O {
			add(&C[term.WireID()], term)
		}
		t.Sub(&tau, &wi)
		L.Mul(&L, &domain.Generator).Mul(&L, &t)
		wi.Mul(&wi, &domain.Generator)
		t.Sub(&tau, &wi)
		t.Inverse(&t)
		L.Mul(&L, &t)
	}
	return A, B, C
}

func TestEvaluateMatchesSequential(t *testing.T) {
	for _, name := range circuits.Names() {
		t.Run(name, func(t *testing.T) {
			c, err := circuits.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := circuits.Smallest(c); err == nil && n > 1<<16 {
				t.Skipf("%s: its smallest instance has %d constraints", name, n) // sha2's: minutes here
			}
			l, err := c.Layout(circuits.MinConstraints)
			if err != nil {
				t.Fatal(err)
			}
			ccs, err := circuits.Compile(c, l)
			if err != nil {
				t.Fatal(err)
			}
			r := ccs.(*cs.R1CS)
			domain := fft.NewDomain(uint64(r.GetNbConstraints()))
			var tau fr.Element
			tau.SetUint64(0x5eed)
			A, B, C, err := evaluateABC(r, domain, tau)
			if err != nil {
				t.Fatal(err)
			}
			wA, wB, wC := sequentialABC(r, domain, tau)
			for m, pair := range [3][2][]fr.Element{{A, wA}, {B, wB}, {C, wC}} {
				got, want := pair[0], pair[1]
				if len(got) != len(want) {
					t.Fatalf("matrix %d: %d wires, want %d", m, len(got), len(want))
				}
				nonzero := 0
				for i := range want {
					if !got[i].Equal(&want[i]) {
						t.Fatalf("matrix %d wire %d: %s, want %s", m, i, got[i].String(), want[i].String())
					}
					if !want[i].IsZero() {
						nonzero++
					}
				}
				if nonzero == 0 {
					t.Fatalf("matrix %d is all zero: the comparison proves nothing", m)
				}
			}
		})
	}
}

// TestLagrangeSumsToOne: Σ_i L_i(τ) = 1 over the whole domain (the Lagrange
// basis interpolates the constant 1); a wrong power of ω in any chunk breaks it.
func TestLagrangeSumsToOne(t *testing.T) {
	for _, n := range []uint64{1, 2, 1024, 1 << 14} {
		domain := fft.NewDomain(n)
		var tau fr.Element
		tau.SetUint64(987654321)
		var sum fr.Element
		for _, l := range lagrange(domain, tau, int(n)) {
			sum.Add(&sum, &l)
		}
		if one := fr.One(); !sum.Equal(&one) {
			t.Fatalf("n=%d: Σ L_i(τ) = %s, want 1", n, sum.String())
		}
	}
}

func TestPowers(t *testing.T) {
	var x, s fr.Element
	x.SetUint64(3)
	s.SetUint64(5)
	v := make([]fr.Element, 5000)
	powers(v, s, x)
	want := s
	for i := range v {
		if !v[i].Equal(&want) {
			t.Fatalf("v[%d] = %s, want %s", i, v[i].String(), want.String())
		}
		want.Mul(&want, &x)
	}
}
