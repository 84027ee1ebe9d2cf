package cuda

import (
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// edgeScalars are the values a digit decomposition gets wrong first: zero,
// one, the largest scalars (r−1, r−2, whose top window is partial), powers
// of two on and off window boundaries, runs of ones (every digit at its
// maximum) and (r−1)/2.
func edgeScalars() []fr.Element {
	var out []fr.Element
	add := func(b *big.Int) {
		var e fr.Element
		e.SetBigInt(b)
		out = append(out, e)
	}
	r := fr.Modulus()
	one := big.NewInt(1)
	add(big.NewInt(0))
	add(one)
	add(big.NewInt(2))
	add(new(big.Int).Sub(r, one))
	add(new(big.Int).Sub(r, big.NewInt(2)))
	add(new(big.Int).Rsh(new(big.Int).Sub(r, one), 1))
	for _, k := range []uint{7, 8, 12, 16, 31, 32, 63, 64, 128, 200, 252, 253} {
		p := new(big.Int).Lsh(one, k)
		add(p)
		add(new(big.Int).Sub(p, one)) // k ones
	}
	return out
}

func checkG1(t *testing.T, what string, base bls12381.G1Affine, scalars []fr.Element, got []bls12381.G1Affine) {
	t.Helper()
	want := bls12381.BatchScalarMultiplicationG1(&base, scalars)
	if len(got) != len(want) {
		t.Fatalf("%s: %d points for %d scalars", what, len(got), len(want))
	}
	for i := range want {
		if !got[i].Equal(&want[i]) {
			t.Fatalf("%s: point %d (scalar %s) differs from gnark-crypto", what, i, scalars[i].String())
		}
	}
}

func checkG2(t *testing.T, what string, base bls12381.G2Affine, scalars []fr.Element, got []bls12381.G2Affine) {
	t.Helper()
	want := bls12381.BatchScalarMultiplicationG2(&base, scalars)
	if len(got) != len(want) {
		t.Fatalf("%s: %d points for %d scalars", what, len(got), len(want))
	}
	for i := range want {
		if !got[i].Equal(&want[i]) {
			t.Fatalf("%s: point %d (scalar %s) differs from gnark-crypto", what, i, scalars[i].String())
		}
	}
}

// TestFixedBaseG1 compares the device with gnark-crypto at several sizes and
// window widths, batches smaller than the input (so that both host buffers
// and a partial last batch are used), another base than the generator, and
// the edge scalars at every width.
func TestFixedBaseG1(t *testing.T) {
	d := testDevice(t)
	_, _, g1, _ := bls12381.Generators()
	other := randomPoints(1)[0]
	cases := []struct {
		n   int
		opt FixedBaseOptions
	}{
		{1, FixedBaseOptions{}}, {3, FixedBaseOptions{}}, {1000, FixedBaseOptions{}},
		{4097, FixedBaseOptions{Batch: 1000}}, {1 << 16, FixedBaseOptions{}},
		{1 << 20, FixedBaseOptions{Batch: 300000}},
		{2000, FixedBaseOptions{Window: 1}}, {2000, FixedBaseOptions{Window: 7}},
		{2000, FixedBaseOptions{Window: 13}}, {2000, FixedBaseOptions{Window: 16}},
	}
	for _, c := range cases {
		scalars := randomFr(c.n)
		got, err := d.FixedBaseG1(g1, scalars, c.opt, DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		checkG1(t, "random", g1, scalars, got)
	}
	scalars := randomFr(777)
	got, err := d.FixedBaseG1(other, scalars, FixedBaseOptions{}, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	checkG1(t, "other base", other, scalars, got)
	edge := edgeScalars()
	for _, w := range []int{0, 1, 2, 5, 8, 11, 12, 16} {
		got, err := d.FixedBaseG1(g1, edge, FixedBaseOptions{Window: w}, DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		checkG1(t, "edge scalars", g1, edge, got)
	}
}

func TestFixedBaseG2(t *testing.T) {
	d := testDevice(t)
	_, _, _, g2 := bls12381.Generators()
	other := randomPointsG2(1)[0]
	cases := []struct {
		n   int
		opt FixedBaseOptions
	}{
		{1, FixedBaseOptions{}}, {3, FixedBaseOptions{}}, {1000, FixedBaseOptions{}},
		{4097, FixedBaseOptions{Batch: 1000}}, {1 << 16, FixedBaseOptions{}},
		{1 << 18, FixedBaseOptions{Batch: 100000}},
		{2000, FixedBaseOptions{Window: 1}}, {2000, FixedBaseOptions{Window: 7}},
		{2000, FixedBaseOptions{Window: 12}},
	}
	for _, c := range cases {
		scalars := randomFr(c.n)
		got, err := d.FixedBaseG2(g2, scalars, c.opt, DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		checkG2(t, "random", g2, scalars, got)
	}
	scalars := randomFr(777)
	got, err := d.FixedBaseG2(other, scalars, FixedBaseOptions{}, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	checkG2(t, "other base", other, scalars, got)
	edge := edgeScalars()
	for _, w := range []int{0, 1, 3, 8, 12} {
		got, err := d.FixedBaseG2(g2, edge, FixedBaseOptions{Window: w}, DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		checkG2(t, "edge scalars", g2, edge, got)
	}
}

// TestFixedBaseDegenerate: no scalars, a base at infinity, a base off the
// subgroup and a window out of range.
func TestFixedBaseDegenerate(t *testing.T) {
	d := testDevice(t)
	_, _, g1, g2 := bls12381.Generators()
	if got, err := d.FixedBaseG1(g1, nil, FixedBaseOptions{}, DefaultStream); err != nil || len(got) != 0 {
		t.Fatalf("no scalars: %d points, %v", len(got), err)
	}
	var inf1 bls12381.G1Affine
	got1, err := d.FixedBaseG1(inf1, randomFr(5), FixedBaseOptions{}, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got1 {
		if !got1[i].IsInfinity() {
			t.Fatal("a multiple of the point at infinity is finite")
		}
	}
	var inf2 bls12381.G2Affine
	got2, err := d.FixedBaseG2(inf2, randomFr(5), FixedBaseOptions{}, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got2 {
		if !got2[i].IsInfinity() {
			t.Fatal("a multiple of the G2 point at infinity is finite")
		}
	}
	if _, err := d.FixedBaseG1(g1, randomFr(5), FixedBaseOptions{Window: MaxFixedBaseWindow + 1}, DefaultStream); err == nil {
		t.Error("a 17-bit window was accepted")
	}
	if _, err := d.FixedBaseG2(g2, randomFr(5), FixedBaseOptions{Window: -1}, DefaultStream); err == nil {
		t.Error("a negative window was accepted")
	}
	if _, err := d.FixedBaseG1(offSubgroupG1(t), randomFr(5), FixedBaseOptions{}, DefaultStream); err == nil {
		t.Error("a base off the subgroup was accepted")
	}
}

// offSubgroupG1 returns a point of the curve outside the r-torsion: the
// first x from 1 up with a square x³ + 4 and a point that r does not kill.
func offSubgroupG1(t *testing.T) bls12381.G1Affine {
	t.Helper()
	var p bls12381.G1Affine
	var b, y2 = p.X, p.X
	b.SetUint64(4)
	for x := uint64(1); x < 1000; x++ {
		p.X.SetUint64(x)
		y2.Square(&p.X).Mul(&y2, &p.X).Add(&y2, &b)
		if p.Y.Sqrt(&y2) == nil {
			continue
		}
		if p.IsOnCurve() && !p.IsInSubGroup() {
			return p
		}
	}
	t.Fatal("no point off the subgroup found")
	return p
}

// tableScalars returns the multipliers of a c-bit window table: entry
// w·2^c + k is k·2^(c·w) mod r.
func tableScalars(c int) []fr.Element {
	nw := fixedBaseWindows(c)
	out := make([]fr.Element, nw<<c)
	var step, shift fr.Element
	step.SetOne()
	shift.SetUint64(1 << c)
	for w := range nw {
		row := out[w<<c : (w+1)<<c]
		for k := 1; k < len(row); k++ {
			row[k].Add(&row[k-1], &step)
		}
		step.Mul(&step, &shift)
	}
	return out
}

// TestFixedBaseTable checks, without a device, the table the kernel reads:
// its points against gnark-crypto's multiplications by k·2^(c·w), and that
// summing table[w·2^c + digit_w(s)] over the windows, as each thread does,
// gives s·G.
func TestFixedBaseTable(t *testing.T) {
	_, _, g1, g2 := bls12381.Generators()
	G1, G2 := g1Group(nil), g2Group(nil)
	for _, c := range []int{1, 6} {
		table := G1.table(g1, c)
		want := bls12381.BatchScalarMultiplicationG1(&g1, tableScalars(c))
		if len(table) != len(want) {
			t.Fatalf("c=%d: %d table points, want %d", c, len(table), len(want))
		}
		for i := range want {
			if !table[i].Equal(&want[i]) {
				t.Fatalf("G1 c=%d: table entry %d (window %d, multiple %d) is wrong", c, i, i>>c, i&(1<<c-1))
			}
		}
	}
	for _, c := range []int{4} {
		table := G2.table(g2, c)
		want := bls12381.BatchScalarMultiplicationG2(&g2, tableScalars(c))
		for i := range want {
			if !table[i].Equal(&want[i]) {
				t.Fatalf("G2 c=%d: table entry %d (window %d, multiple %d) is wrong", c, i, i>>c, i&(1<<c-1))
			}
		}
	}

	scalars := append(edgeScalars(), randomFr(20)...)
	want := bls12381.BatchScalarMultiplicationG1(&g1, scalars)
	for _, c := range []int{1, 7, 8} {
		table := G1.table(g1, c)
		for i := range scalars {
			var s big.Int
			scalars[i].BigInt(&s)
			var acc bls12381.G1Jac // Z = 0: infinity
			for w := range fixedBaseWindows(c) {
				d := 0
				for k := range c {
					d |= int(s.Bit(w*c+k)) << k
				}
				if d != 0 {
					acc.AddMixed(&table[w<<c|d])
				}
			}
			var got bls12381.G1Affine
			got.FromJacobian(&acc)
			if !got.Equal(&want[i]) {
				t.Fatalf("c=%d: scalar %s: the table sum is not s·G", c, scalars[i].String())
			}
		}
	}
}

func TestFixedBaseWindowChoice(t *testing.T) {
	for _, c := range []struct{ n, want int }{{1, 4}, {1000, 4}, {1 << 16, 9}, {1 << 20, 12}, {1 << 24, 12}} {
		if got := fixedBaseWindow(c.n); got != c.want {
			t.Errorf("window for %d scalars: %d, want %d", c.n, got, c.want)
		}
	}
	for c := 1; c <= MaxFixedBaseWindow; c++ {
		if fixedBaseWindows(c)*c < fr.Bits {
			t.Errorf("%d windows of %d bits do not cover a scalar", fixedBaseWindows(c), c)
		}
	}
}

// TestJacobianToAffine checks the batch conversions against gnark-crypto's
// one-point FromJacobian, with points at infinity among them and chunks of
// several sizes.
func TestJacobianToAffine(t *testing.T) {
	g1JacobianToAffine(nil, nil)
	g2JacobianToAffine(nil, nil)
	_, _, g1, g2 := bls12381.Generators()
	for _, n := range []int{1, 5, 3000} {
		// (i+1)·G, in Jacobian coordinates with Z ≠ 1 from the additions.
		in1 := make([]bls12381.G1Jac, n)
		in2 := make([]bls12381.G2Jac, n)
		in1[0].FromAffine(&g1)
		in2[0].FromAffine(&g2)
		for i := 1; i < n; i++ {
			in1[i].Set(&in1[i-1]).AddMixed(&g1)
			in2[i].Set(&in2[i-1]).AddMixed(&g2)
		}
		for i := 0; i < n; i += 3 {
			in1[i].Double(&in1[i])
			in2[i].Double(&in2[i])
		}
		for i := 1; i < n; i += 7 {
			in1[i].Z.SetZero()
			in2[i].Z.SetZero()
		}
		out1 := make([]bls12381.G1Affine, n)
		out2 := make([]bls12381.G2Affine, n)
		g1JacobianToAffine(out1, in1)
		g2JacobianToAffine(out2, in2)
		for i := range n {
			var w1 bls12381.G1Affine
			var w2 bls12381.G2Affine
			w1.FromJacobian(&in1[i])
			w2.FromJacobian(&in2[i])
			if !out1[i].Equal(&w1) || !out2[i].Equal(&w2) {
				t.Fatalf("n=%d: point %d differs from FromJacobian", n, i)
			}
		}
	}
}

// BenchmarkFixedBase times FixedBaseG1/G2 (host table, device additions,
// host conversion, all of it) against gnark-crypto's batch multiplication at
// the log2 sizes in $CUZK_FIXED_BASE_BENCH (default 16); -test.bench
// 'FixedBase/.*gpu' leaves out the CPU.
func BenchmarkFixedBase(b *testing.B) {
	sizes := os.Getenv("CUZK_FIXED_BASE_BENCH")
	if sizes == "" {
		sizes = "16"
	}
	_, _, g1, g2 := bls12381.Generators()
	for _, s := range strings.Split(sizes, ",") {
		logN, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		scalars := randomFr(1 << logN)
		runs := []struct {
			name string
			run  func() error
		}{
			{"g1/gpu", func() error {
				_, err := testDevice(b).FixedBaseG1(g1, scalars, FixedBaseOptions{}, DefaultStream)
				return err
			}},
			{"g2/gpu", func() error {
				_, err := testDevice(b).FixedBaseG2(g2, scalars, FixedBaseOptions{}, DefaultStream)
				return err
			}},
			{"g1/cpu", func() error { bls12381.BatchScalarMultiplicationG1(&g1, scalars); return nil }},
			{"g2/cpu", func() error { bls12381.BatchScalarMultiplicationG2(&g2, scalars); return nil }},
		}
		for _, r := range runs {
			b.Run(fmt.Sprintf("2^%d/%s", logN, r.name), func(b *testing.B) {
				for b.Loop() {
					if err := r.run(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
