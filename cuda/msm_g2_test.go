package cuda

import (
	"math/big"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

const g2PoolSize = 1 << 16

var (
	g2PoolOnce sync.Once
	g2Pool     []bls12381.G2Affine
)

// randomPointsG2 returns n random G2 points: the first n of a pool of
// g2PoolSize random multiples of the generator, repeated when n is larger.
func randomPointsG2(n int) []bls12381.G2Affine {
	g2PoolOnce.Do(func() {
		_, _, _, g2 := bls12381.Generators()
		g2Pool = bls12381.BatchScalarMultiplicationG2(&g2, randomFr(g2PoolSize))
	})
	out := make([]bls12381.G2Affine, n)
	for i := 0; i < n; i += g2PoolSize {
		copy(out[i:], g2Pool)
	}
	return out
}

func cpuMSMG2(t testing.TB, points []bls12381.G2Affine, scalars []fr.Element) bls12381.G2Affine {
	t.Helper()
	var jac bls12381.G2Jac
	var r bls12381.G2Affine
	if len(points) == 0 {
		return r
	}
	if _, err := jac.MultiExp(points, scalars, ecc.MultiExpConfig{}); err != nil {
		t.Fatal(err)
	}
	r.FromJacobian(&jac)
	return r
}

func gpuMSMG2(t testing.TB, d *Device, points []bls12381.G2Affine, scalars any, n int, form ScalarForm, opt MSMOptions) bls12381.G2Affine {
	t.Helper()
	pp, ps, free := uploadMSM(t, d, points, scalars)
	defer free()
	jac, err := d.MSMG2(pp, ps, n, form, opt, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	var r bls12381.G2Affine
	r.FromJacobian(&jac)
	if !r.IsOnCurve() {
		t.Fatal("G2 MSM result is not on the curve")
	}
	return r
}

// g2MulVariants are the G2 MSM's run-time choices of field operations
// (CUZK_MSM_G2_MUL: 0 Karatsuba over reduced Fp products, 1 Fp2 products
// with lazy reduction, 2 that and the fused sums a b + c d with lazy
// reduction). The G2 tests run each against gnark-crypto, so the
// card checks every variant it times.
var g2MulVariants = []string{"0", "1", "2"}

// forG2Variants runs f once per variant, as a subtest with the variant set.
func forG2Variants(t *testing.T, f func(t *testing.T)) {
	for _, v := range g2MulVariants {
		t.Run("CUZK_MSM_G2_MUL="+v, func(t *testing.T) {
			t.Setenv("CUZK_MSM_G2_MUL", v)
			f(t)
		})
	}
}

func TestMSMG2(t *testing.T) {
	d := testDevice(t)
	for _, n := range []int{1, 2, 3, 7, 100, 1000, 4097, 1 << 16} {
		points := randomPointsG2(n)
		scalars := randomFr(n)
		want := cpuMSMG2(t, points, scalars)
		forG2Variants(t, func(t *testing.T) {
			got := gpuMSMG2(t, d, points, scalars, n, Montgomery, MSMOptions{})
			if !got.Equal(&want) {
				t.Fatalf("n=%d random: GPU G2 MSM differs from gnark-crypto", n)
			}
		})
	}
}

// TestMSMG2MulBits: every G2 variant gives the same bits, not only the same
// point: the Jacobian result of each lazy variant equals the plain one's limb
// for limb (both fully reduce every value, so any difference in a bucket
// would show), with and without the split, on random inputs, repeated points
// (doublings in the buckets and the sums) and cancelling pairs, and each
// equals gnark-crypto's.
func TestMSMG2MulBits(t *testing.T) {
	d := testDevice(t)
	n := 1<<16 + 3
	if testing.Short() {
		n = 1 << 12
	}
	cases := mulBitsCases(randomPointsG2(n), n)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := cpuMSMG2(t, c.points, c.scalars)
			pp, ps, free := uploadMSM(t, d, c.points, c.scalars)
			defer free()
			var first bls12381.G2Jac
			for i, v := range g2MulVariants {
				t.Setenv("CUZK_MSM_G2_MUL", v)
				jac, err := d.MSMG2(pp, ps, n, Montgomery, c.opt, DefaultStream)
				if err != nil {
					t.Fatal(err)
				}
				var got bls12381.G2Affine
				got.FromJacobian(&jac)
				if !got.Equal(&want) {
					t.Fatalf("CUZK_MSM_G2_MUL=%s: GPU G2 MSM differs from gnark-crypto", v)
				}
				if i == 0 {
					first = jac
				} else if jac.X != first.X || jac.Y != first.Y || jac.Z != first.Z {
					t.Fatalf("CUZK_MSM_G2_MUL=%s: the same point as CUZK_MSM_G2_MUL=%s in other coordinates", v, g2MulVariants[0])
				}
			}
		})
	}
}

// TestMSMG2EdgeCases: zero scalars, points at infinity, repeated points
// (doubling and cancellation in the buckets), equal scalars and canonical
// scalars at or above r.
func TestMSMG2EdgeCases(t *testing.T) {
	d := testDevice(t)
	const n = 5000
	base := randomPointsG2(n)

	cases := map[string]func() ([]bls12381.G2Affine, []fr.Element){
		"zero scalars": func() ([]bls12381.G2Affine, []fr.Element) {
			s := randomFr(n)
			for i := 0; i < n; i += 3 {
				s[i].SetZero()
			}
			return base, s
		},
		"all zero": func() ([]bls12381.G2Affine, []fr.Element) { return base, make([]fr.Element, n) },
		"infinity points": func() ([]bls12381.G2Affine, []fr.Element) {
			p := append([]bls12381.G2Affine(nil), base...)
			for i := 0; i < n; i += 7 {
				p[i].SetInfinity()
			}
			return p, randomFr(n)
		},
		"all infinity": func() ([]bls12381.G2Affine, []fr.Element) {
			return make([]bls12381.G2Affine, n), randomFr(n)
		},
		"repeated points": func() ([]bls12381.G2Affine, []fr.Element) {
			p := make([]bls12381.G2Affine, n)
			for i := range p {
				p[i] = base[i%3]
			}
			return p, randomFr(n)
		},
		"repeated point and scalar": func() ([]bls12381.G2Affine, []fr.Element) {
			p := make([]bls12381.G2Affine, n)
			s := make([]fr.Element, n)
			s0 := randomFr(1)[0]
			for i := range p {
				p[i] = base[0]
				s[i] = s0
			}
			return p, s
		},
		"point and its negation": func() ([]bls12381.G2Affine, []fr.Element) {
			p := make([]bls12381.G2Affine, n)
			s := make([]fr.Element, n)
			s0 := randomFr(1)[0]
			for i := range p {
				p[i] = base[i/2]
				if i%2 == 1 {
					p[i].Neg(&p[i])
				}
				s[i] = s0
			}
			return p, s
		},
		"small scalars": func() ([]bls12381.G2Affine, []fr.Element) {
			s := make([]fr.Element, n)
			for i := range s {
				s[i].SetUint64(uint64(i % 5))
			}
			return base, s
		},
		"minus one": func() ([]bls12381.G2Affine, []fr.Element) {
			s := make([]fr.Element, n)
			for i := range s {
				s[i].SetOne()
				s[i].Neg(&s[i])
			}
			return base, s
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			p, s := mk()
			want := cpuMSMG2(t, p, s)
			forG2Variants(t, func(t *testing.T) {
				got := gpuMSMG2(t, d, p, s, n, Montgomery, MSMOptions{})
				if !got.Equal(&want) {
					t.Fatalf("GPU G2 MSM differs from gnark-crypto")
				}
			})
		})
	}
	forG2Variants(t, func(t *testing.T) { testMSMG2Canonical(t, d, base, n) })
}

func testMSMG2Canonical(t *testing.T, d *Device, base []bls12381.G2Affine, n int) {
	t.Run("canonical scalars", func(t *testing.T) {
		raw := make([][4]uint64, n)
		reduced := make([]fr.Element, n)
		mod := fr.Modulus()
		for i := range raw {
			s := randomFr(1)[0]
			v := s.BigInt(new(big.Int))
			if i%4 == 0 {
				v.Add(v, mod) // still below 2^256
			}
			if i%11 == 0 {
				v.Lsh(big.NewInt(1), 256).Sub(v, big.NewInt(1)) // 2^256 - 1
			}
			for j := 0; j < 4; j++ {
				raw[i][j] = new(big.Int).Rsh(v, uint(64*j)).Uint64()
			}
			reduced[i].SetBigInt(v)
		}
		want := cpuMSMG2(t, base, reduced)
		got := gpuMSMG2(t, d, base, raw, n, Canonical, MSMOptions{})
		if !got.Equal(&want) {
			t.Fatalf("GPU G2 MSM differs from gnark-crypto")
		}
	})
}

// TestMSMG2Windows forces a spread of window sizes, including ones that
// divide 255.
func TestMSMG2Windows(t *testing.T) {
	d := testDevice(t)
	const n = 3001
	points := randomPointsG2(n)
	scalars := randomFr(n)
	want := cpuMSMG2(t, points, scalars)
	forG2Variants(t, func(t *testing.T) {
		for _, c := range []int{4, 5, 6, 7, 8, 9, 11, 13, 15, 16, 17, 20, 22} {
			got := gpuMSMG2(t, d, points, scalars, n, Montgomery, MSMOptions{Window: c})
			if !got.Equal(&want) {
				t.Fatalf("window %d: GPU G2 MSM differs from gnark-crypto", c)
			}
		}
	})
}

func TestMSMG2Empty(t *testing.T) {
	d := testDevice(t)
	jac, err := d.MSMG2(0, 0, 0, Montgomery, MSMOptions{}, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if !jac.Z.IsZero() {
		t.Fatal("empty G2 MSM is not the point at infinity")
	}
}

func medianDuration(v []time.Duration) time.Duration {
	s := append([]time.Duration(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// TestMSMG2Timing checks a 2^20 G2 MSM against gnark-crypto and logs both
// times: the GPU's with points and scalars already on the device (one
// warm-up, median of 5) under each CUZK_MSM_G2_MUL, the CPU's as
// G2Jac.MultiExp on all cores (median of 3).
func TestMSMG2Timing(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	d := testDevice(t)
	const n = 1 << 20
	points := randomPointsG2(n)
	scalars := randomFr(n)
	var cpuTimes []time.Duration
	var want bls12381.G2Affine
	for i := 0; i < 3; i++ {
		start := time.Now()
		want = cpuMSMG2(t, points, scalars)
		cpuTimes = append(cpuTimes, time.Since(start))
	}
	pp, err := Upload(d, points, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(pp)
	ps, err := Upload(d, scalars, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(ps)
	c := medianDuration(cpuTimes)
	// Each G2 variant (g2MulVariants, CUZK_MSM_G2_MUL), timed the same way.
	for _, v := range g2MulVariants {
		t.Setenv("CUZK_MSM_G2_MUL", v)
		var gpuTimes []time.Duration
		for i := 0; i < 6; i++ {
			if err := d.Sync(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			jac, err := d.MSMG2(pp, ps, n, Montgomery, MSMOptions{}, DefaultStream)
			el := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			var got bls12381.G2Affine
			got.FromJacobian(&jac)
			if !got.Equal(&want) {
				t.Fatalf("CUZK_MSM_G2_MUL=%s run %d: GPU G2 MSM 2^20 differs from gnark-crypto", v, i)
			}
			if i > 0 {
				gpuTimes = append(gpuTimes, el)
			}
		}
		g := medianDuration(gpuTimes)
		t.Logf("G2MSM 2^20 CUZK_MSM_G2_MUL=%s: gpu %.2f ms (median of 5, data on device), cpu gnark %.1f ms (median of 3), ratio %.1fx",
			v, float64(g.Microseconds())/1e3, float64(c.Microseconds())/1e3, float64(c)/float64(g))
	}
}
