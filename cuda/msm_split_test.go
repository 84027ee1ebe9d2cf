package cuda

import (
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"testing"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// A scalar mix for the split tests: the value of scalar i given a seeded
// source (Montgomery form, reduced).
type scalarMix func(i, n int, r *mrand.Rand) fr.Element

func randomScalar(r *mrand.Rand) fr.Element {
	// Uniform below 2^254 < r, read as a Montgomery form.
	return fr.Element{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64() >> 2}
}

// bitsMix: a fraction f of the scalars are 0 or 1 (half each), the rest random.
func bitsMix(f float64) scalarMix {
	return func(_, _ int, r *mrand.Rand) fr.Element {
		var e fr.Element
		switch x := r.Float64(); {
		case x < f/2:
		case x < f:
			e.SetOne()
		default:
			e = randomScalar(r)
		}
		return e
	}
}

var splitMixes = []struct {
	name string
	mix  scalarMix
}{
	{"random", bitsMix(0)},
	{"90% 0/1", bitsMix(0.9)},
	{"all zero", func(int, int, *mrand.Rand) fr.Element { return fr.Element{} }},
	{"all one", func(int, int, *mrand.Rand) fr.Element { return fr.One() }},
	{"all one but one", func(i, n int, r *mrand.Rand) fr.Element {
		if i == n/2 {
			return randomScalar(r)
		}
		return fr.One()
	}},
	{"zeros and ones only", bitsMix(1)},
	{"small and top", func(i, _ int, r *mrand.Rand) fr.Element {
		var e fr.Element
		switch i % 5 {
		case 0:
			e.SetUint64(2)
		case 1:
			e.SetOne()
			e.Neg(&e) // r - 1: digits with carries into every window
		case 2:
			e.SetOne()
		case 3:
			e.SetUint64(1 << 15)
		}
		return e
	}},
}

func mixScalars(mix scalarMix, n int, seed uint64) []fr.Element {
	r := mrand.New(mrand.NewPCG(seed, 0x5eed))
	v := make([]fr.Element, n)
	for i := range v {
		v[i] = mix(i, n, r)
	}
	return v
}

// canonicalAbove writes each scalar as a canonical integer, adding r once or
// twice where the sum stays below 2^256: zero becomes r or 2r, one r + 1 or
// 2r + 1, which the split must still classify as zero and one.
func canonicalAbove(v []fr.Element) [][4]uint64 {
	out := make([][4]uint64, len(v))
	for i := range v {
		out[i] = plusR(&v[i], i%3)
	}
	return out
}

// plusR is the integer value of e plus k times r, or plus fewer multiples of
// r where k would reach 2^256.
func plusR(e *fr.Element, k int) [4]uint64 {
	r := fr.Modulus()
	limit := new(big.Int).Lsh(big.NewInt(1), 256)
	x := new(big.Int)
	e.BigInt(x)
	for ; k > 0; k-- {
		if y := new(big.Int).Add(x, r); y.Cmp(limit) < 0 {
			x = y
		}
	}
	var out [4]uint64
	for j, w := range x.Bits() {
		out[j] = uint64(w)
	}
	return out
}

func wantStats(v []fr.Element) MSMStats {
	var st MSMStats
	for i := range v {
		switch {
		case v[i].IsZero():
			st.Zero++
		case v[i].IsOne():
			st.One++
		default:
			st.Other++
		}
	}
	return st
}

// checkSplit computes one MSM three ways (gnark-crypto, the device without
// the split, the device with it) and fails unless all three agree and the
// split's counts match the scalars. points is []bls12381.G1Affine or
// []bls12381.G2Affine; scalars the device form of reduced.
func checkSplit(t *testing.T, d *Device, points any, reduced []fr.Element, scalars any, form ScalarForm, opt MSMOptions) {
	t.Helper()
	n := len(reduced)
	want := wantStats(reduced)
	// msm runs the device MSM with o and says whether it equals gnark-crypto's.
	var msm func(o MSMOptions) (bool, MSMStats, error)
	var group string
	switch p := points.(type) {
	case []bls12381.G1Affine:
		cpu := cpuMSM(t, p, reduced)
		pp, ps, free := uploadMSM(t, d, p, scalars)
		defer free()
		group, msm = "G1", func(o MSMOptions) (bool, MSMStats, error) {
			jac, st, err := d.MSMWithStats(pp, ps, n, form, o, DefaultStream)
			var got bls12381.G1Affine
			got.FromJacobian(&jac)
			return got.Equal(&cpu), st, err
		}
	case []bls12381.G2Affine:
		cpu := cpuMSMG2(t, p, reduced)
		pp, ps, free := uploadMSM(t, d, p, scalars)
		defer free()
		group, msm = "G2", func(o MSMOptions) (bool, MSMStats, error) {
			jac, st, err := d.MSMG2WithStats(pp, ps, n, form, o, DefaultStream)
			var got bls12381.G2Affine
			got.FromJacobian(&jac)
			return got.Equal(&cpu), st, err
		}
	default:
		t.Fatalf("points of type %T", points)
	}
	for _, split := range []bool{false, true} {
		o := opt
		o.Split = split
		equal, st, err := msm(o)
		if err != nil {
			t.Fatalf("split=%v: %v", split, err)
		}
		if !equal {
			t.Fatalf("split=%v: %s MSM of %d (%+v) differs from gnark-crypto", split, group, n, want)
		}
		w := MSMStats{Other: n}
		if split {
			w = want
		}
		if st != w {
			t.Fatalf("split=%v: counts %+v, want %+v", split, st, w)
		}
	}
}

// groupPoints returns n random points of G1 or G2 (the G2 ones from the pool
// of msm_g2_test.go).
func groupPoints(g2 bool, n int) any {
	if g2 {
		return randomPointsG2(n)
	}
	return randomPoints(n)
}

func groupName(g2 bool) string {
	if g2 {
		return "G2"
	}
	return "G1"
}

// TestMSMSplit: every mix at sizes that are and are not multiples of the
// ones' chunk, in both scalar forms, on both groups.
func TestMSMSplit(t *testing.T) {
	d := testDevice(t)
	sizes := []int{1, 2, 7, 100, 4097}
	for _, g2 := range []bool{false, true} {
		for _, n := range sizes {
			points := groupPoints(g2, n)
			for mi, m := range splitMixes {
				reduced := mixScalars(m.mix, n, uint64(n*100+mi))
				t.Run(fmt.Sprintf("%s/n=%d/%s", groupName(g2), n, m.name), func(t *testing.T) {
					checkSplit(t, d, points, reduced, reduced, Montgomery, MSMOptions{})
					checkSplit(t, d, points, reduced, canonicalAbove(reduced), Canonical, MSMOptions{})
				})
			}
		}
	}
}

// TestMSMSplitLarge: the mixes that matter in proving at a size where the
// ones' sum takes several tree levels and Pippenger several window batches
// of sorted runs.
func TestMSMSplitLarge(t *testing.T) {
	d := testDevice(t)
	n := 1<<17 - 1
	if testing.Short() {
		n = 1<<14 + 5
	}
	for _, g2 := range []bool{false, true} {
		points := groupPoints(g2, n)
		for _, f := range []float64{0, 0.5, 0.9, 0.999} {
			reduced := mixScalars(bitsMix(f), n, uint64(f*1000))
			t.Run(fmt.Sprintf("%s/bits=%v", groupName(g2), f), func(t *testing.T) {
				checkSplit(t, d, points, reduced, reduced, Montgomery, MSMOptions{})
			})
		}
	}
}

// TestMSMSplitN1: a single scalar of each class, both forms.
func TestMSMSplitN1(t *testing.T) {
	d := testDevice(t)
	var one, other, minusOne fr.Element
	one.SetOne()
	other.SetUint64(3)
	minusOne.Neg(&one)
	for _, g2 := range []bool{false, true} {
		points := groupPoints(g2, 1)
		for _, s := range []fr.Element{{}, one, other, minusOne} {
			reduced := []fr.Element{s}
			checkSplit(t, d, points, reduced, reduced, Montgomery, MSMOptions{})
			for k := 0; k < 3; k++ { // s, s + r, s + 2r where below 2^256
				checkSplit(t, d, points, reduced, [][4]uint64{plusR(&s, k)}, Canonical, MSMOptions{})
			}
		}
	}
}

// TestMSMSplitChunks forces the ones' chunk to sizes that do not divide the
// number of ones, down to one point per thread (the tree does every
// addition), and checks a window override reaches the Pippenger part.
func TestMSMSplitChunks(t *testing.T) {
	d := testDevice(t)
	const n = 3001
	for _, g2 := range []bool{false, true} {
		points := groupPoints(g2, n)
		reduced := mixScalars(bitsMix(0.9), n, 7)
		for _, chunk := range []string{"1", "3", "7", "128", "5000"} {
			t.Run(fmt.Sprintf("%s/chunk=%s", groupName(g2), chunk), func(t *testing.T) {
				t.Setenv("CUZK_MSM_ONES_CHUNK", chunk)
				checkSplit(t, d, points, reduced, reduced, Montgomery, MSMOptions{})
			})
		}
		for _, c := range []int{4, 13} {
			t.Run(fmt.Sprintf("%s/window=%d", groupName(g2), c), func(t *testing.T) {
				checkSplit(t, d, points, reduced, reduced, Montgomery, MSMOptions{Window: c})
			})
		}
	}
}

// TestMSMSplitPoints: the ones' sum meets points at infinity, the same point
// twice (a doubling where a chunk holds just the pair) and a point with its
// negation (the sum goes back to infinity and on).
func TestMSMSplitPoints(t *testing.T) {
	d := testDevice(t)
	const n = 2000
	reduced := mixScalars(bitsMix(0.9), n, 11)
	g1 := randomPoints(n)
	g2 := randomPointsG2(n)
	for i := 0; i < n; i++ {
		switch i % 8 {
		case 1:
			g1[i].SetInfinity()
			g2[i].SetInfinity()
		case 2:
			g1[i], g2[i] = g1[i-1], g2[i-1] // infinity again
		case 5:
			g1[i], g2[i] = g1[i-1], g2[i-1]
		case 7:
			g1[i].Neg(&g1[i-1])
			g2[i].Neg(&g2[i-1])
		}
	}
	for _, chunk := range []string{"", "1", "2", "8"} {
		t.Run("chunk="+chunk, func(t *testing.T) {
			if chunk != "" {
				t.Setenv("CUZK_MSM_ONES_CHUNK", chunk)
			}
			allOne := make([]fr.Element, n)
			for i := range allOne {
				allOne[i].SetOne()
			}
			for _, s := range [][]fr.Element{reduced, allOne} {
				checkSplit(t, d, g1, s, s, Montgomery, MSMOptions{})
				checkSplit(t, d, g2, s, s, Montgomery, MSMOptions{})
			}
		})
	}
}

func TestMSMSplitEmpty(t *testing.T) {
	d := testDevice(t)
	for _, split := range []bool{false, true} {
		j1, st1, err := d.MSMWithStats(0, 0, 0, Montgomery, MSMOptions{Split: split}, DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		j2, st2, err := d.MSMG2WithStats(0, 0, 0, Montgomery, MSMOptions{Split: split}, DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		if !j1.Z.IsZero() || !j2.Z.IsZero() || st1 != (MSMStats{}) || st2 != (MSMStats{}) {
			t.Fatalf("split=%v: empty MSM is not infinity with no scalars", split)
		}
	}
}

// benchPointsPool repeats a pool of 2^16 random G1 points: making 2^22
// distinct ones would take longer than the benchmark.
func benchPointsPool(n int) []bls12381.G1Affine {
	const pool = 1 << 16
	base := randomPoints(min(n, pool))
	out := make([]bls12381.G1Affine, n)
	for i := 0; i < n; i += len(base) {
		copy(out[i:], base)
	}
	return out
}

// BenchmarkMSMSplit times the MSM with and without the split at 2^20 and
// 2^22 points, with 0, 50 % and 90 % of the scalars 0 or 1, on G1 and G2,
// points and scalars on the device.
func BenchmarkMSMSplit(b *testing.B) {
	d := testDevice(b)
	for _, g2 := range []bool{false, true} {
		for _, lg := range []int{20, 22} {
			n := 1 << lg
			var pp Ptr
			var err error
			if g2 {
				pp, err = Upload(d, randomPointsG2(n), DefaultStream)
			} else {
				pp, err = Upload(d, benchPointsPool(n), DefaultStream)
			}
			if err != nil {
				b.Fatal(err)
			}
			for _, f := range []float64{0, 0.5, 0.9} {
				ps, err := Upload(d, mixScalars(bitsMix(f), n, uint64(lg)), DefaultStream)
				if err != nil {
					b.Fatal(err)
				}
				for _, split := range []bool{false, true} {
					name := fmt.Sprintf("%s/2^%d/bits=%v/split=%v", groupName(g2), lg, f, split)
					b.Run(name, func(b *testing.B) {
						opt := MSMOptions{Split: split}
						for b.Loop() {
							var err error
							if g2 {
								_, err = d.MSMG2(pp, ps, n, Montgomery, opt, DefaultStream)
							} else {
								_, err = d.MSM(pp, ps, n, Montgomery, opt, DefaultStream)
							}
							if err != nil {
								b.Fatal(err)
							}
						}
					})
				}
				_ = d.Free(ps)
			}
			_ = d.Free(pp)
		}
	}
}
