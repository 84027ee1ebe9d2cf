package cuda

import (
	"testing"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// TestMSMMulBits: every variant (msmVariants: the field operations of the
// point formulas, CUZK_MSM_MUL, and the bucket sums' register cap) gives the
// same bits as the plain products, not only the same point: the Jacobian result of
// every variant equals the first variant's limb for limb (both are computed
// from the same bucket representations, so any difference in a bucket shows
// up here), with and without the split, on random inputs, one point repeated
// (doublings in the buckets and the sums) and cancelling pairs, and each
// equals gnark-crypto's.
func TestMSMMulBits(t *testing.T) {
	d := testDevice(t)
	n := 1<<17 + 3
	if testing.Short() {
		n = 1 << 14
	}
	cases := mulBitsCases(randomPoints(n), n)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := cpuMSM(t, c.points, c.scalars)
			pp, ps, free := uploadMSM(t, d, c.points, c.scalars)
			defer free()
			var first bls12381.G1Jac
			for i, v := range msmVariants {
				setMSMVariant(t, v.mul, v.reduce)
				jac, err := d.MSM(pp, ps, n, Montgomery, c.opt, DefaultStream)
				if err != nil {
					t.Fatal(err)
				}
				var got bls12381.G1Affine
				got.FromJacobian(&jac)
				if !got.Equal(&want) {
					t.Fatalf("CUZK_MSM_MUL=%s CUZK_MSM_REDUCE_BLOCKS=%s: GPU MSM differs from gnark-crypto", v.mul, v.reduce)
				}
				if i == 0 {
					first = jac
				} else if jac.X != first.X || jac.Y != first.Y || jac.Z != first.Z {
					t.Fatalf("CUZK_MSM_MUL=%s CUZK_MSM_REDUCE_BLOCKS=%s: the same point as the first variant in other coordinates", v.mul, v.reduce)
				}
			}
		})
	}
}

// msmCase is one input of the variant tests: points, scalars, options.
type msmCase[P any] struct {
	name    string
	points  []P
	scalars []fr.Element
	opt     MSMOptions
}

// mulBitsCases are the inputs the variant tests of G1 and G2 run each
// variant on: random points and scalars (with a fixed window too), one of
// five points repeated (doublings in the buckets and the sums), cancelling
// pairs, and bit-heavy scalars through the split.
func mulBitsCases[P any, PP interface {
	*P
	Neg(*P) *P
}](base []P, n int) []msmCase[P] {
	repeated := make([]P, n)
	for i := range repeated {
		repeated[i] = base[i%5]
	}
	cancelling := append([]P(nil), base...)
	cs := randomFr(n)
	for i := 0; i+1 < n; i += 2 {
		PP(&cancelling[i+1]).Neg(&cancelling[i])
		cs[i+1] = cs[i]
	}
	bits := randomFr(n)
	for i := range bits {
		if i%3 != 0 {
			bits[i].SetUint64(uint64(i % 2))
		}
	}
	return []msmCase[P]{
		{"random", base, randomFr(n), MSMOptions{}},
		{"random window 11", base, randomFr(n), MSMOptions{Window: 11}},
		{"repeated points", repeated, randomFr(n), MSMOptions{}},
		{"cancelling pairs", cancelling, cs, MSMOptions{}},
		{"split, bit-heavy", base, bits, MSMOptions{Split: true}},
	}
}
