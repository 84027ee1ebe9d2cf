package cuda

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
)

// The affine model and the headers it includes, embedded for the same reason
// as montModelSource.
//
//go:embed testdata/affinemodel.cc src/ff/*.cuh src/ec/*.cuh src/msm/affine.cuh
var affineModelSource embed.FS

// buildHostModel writes the files of src (the model's main and the headers
// it includes) to a temporary directory, keeping their paths, and builds main
// with the host's C++ compiler; it skips the test when there is none.
func buildHostModel(t *testing.T, src embed.FS, main string) string {
	t.Helper()
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "c++"
	}
	if _, err := exec.LookPath(cxx); err != nil {
		t.Skipf("no C++ compiler (%s) for the host model: %v", cxx, err)
	}
	dir := t.TempDir()
	err := fs.WalkDir(src, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := src.ReadFile(name)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, strings.TrimSuffix(filepath.Base(main), ".cc"))
	if out, err := exec.Command(cxx, "-std=c++17", "-O2", "-o", bin, filepath.Join(dir, main)).CombinedOutput(); err != nil {
		t.Fatalf("build the host model: %v\n%s", err, out)
	}
	return bin
}

// runModel feeds in to the model and returns its output.
func runModel(t *testing.T, bin string, in []byte) []byte {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("host model: %v\n%s", err, stderr.String())
	}
	return out
}

func fpHex(e *fp.Element) string {
	return fmt.Sprintf("%016x%016x%016x%016x%016x%016x", e[5], e[4], e[3], e[2], e[1], e[0])
}

// rawFp is x < p as an element's limbs, as the device reads them (no
// conversion to Montgomery form), and rawBig the inverse.
func rawFp(x *big.Int) fp.Element {
	var e fp.Element
	for i, w := range x.Bits() {
		e[i] = uint64(w)
	}
	return e
}

func rawBig(e *fp.Element) *big.Int {
	w := new(big.Int)
	for i := len(e) - 1; i >= 0; i-- {
		w.Lsh(w, 64).Or(w, new(big.Int).SetUint64(e[i]))
	}
	return w
}

func fpFromHex(t *testing.T, s string) fp.Element {
	t.Helper()
	var e fp.Element
	if len(s) != 96 {
		t.Fatalf("host model: field element %q", s)
	}
	for i := range e {
		if _, err := fmt.Sscanf(s[96-16*(i+1):96-16*i], "%016x", &e[i]); err != nil {
			t.Fatalf("host model: field element %q: %v", s, err)
		}
	}
	return e
}

// TestFieldInverseModel checks the device's inversion (src/ff/inverse.cuh:
// Bernstein-Yang divsteps in batches of 30) through the host model: the
// Montgomery-form inverse of every edge value and of random elements of Fp,
// and of Fp2 elements, equals gnark-crypto's, 0 gives 0, and every
// inversion reaches g = 0 within the batches the proven bound allows.
func TestFieldInverseModel(t *testing.T) {
	bin := buildHostModel(t, affineModelSource, "testdata/affinemodel.cc")
	rng := mrand.New(mrand.NewPCG(3, 4))
	var in bytes.Buffer
	var want []fp.Element
	for _, x := range append(edgeValues(fp.Modulus(), 12, rng), big.NewInt(0)) {
		e := rawFp(x)
		fmt.Fprintf(&in, "inv fp %s\n", fpHex(&e))
		want = append(want, *new(fp.Element).Inverse(&e))
	}
	for i := 0; i < 5000; i++ {
		e := rawFp(randBelow(rng, fp.Modulus()))
		fmt.Fprintf(&in, "inv fp %s\n", fpHex(&e))
		want = append(want, *new(fp.Element).Inverse(&e))
	}
	nfp := len(want)
	var want2 []bls12381.E2
	for i := 0; i < 500; i++ {
		var a bls12381.E2
		switch i {
		case 0:
		case 1:
			a.A0.SetOne()
		case 2:
			a.A1.SetOne()
		default:
			a.MustSetRandom()
		}
		fmt.Fprintf(&in, "inv fp2 %s %s\n", fpHex(&a.A0), fpHex(&a.A1))
		want2 = append(want2, *new(bls12381.E2).Inverse(&a))
	}
	sc := bufio.NewScanner(bytes.NewReader(runModel(t, bin, in.Bytes())))
	maxB, sumB := 0, 0
	for i := 0; i < nfp+len(want2); i++ {
		if !sc.Scan() {
			t.Fatalf("host model answered %d of %d inversions", i, nfp+len(want2))
		}
		f := strings.Fields(sc.Text())
		if i < nfp {
			var b int
			if len(f) != 2 {
				t.Fatalf("host model: %q", sc.Text())
			}
			fmt.Sscan(f[1], &b)
			maxB, sumB = max(maxB, b), sumB+b
			if got := fpFromHex(t, f[0]); got != want[i] {
				t.Fatalf("inverse %d: got %s, want %s", i, fpHex(&got), fpHex(&want[i]))
			}
			continue
		}
		w := want2[i-nfp]
		if len(f) != 2 || fpFromHex(t, f[0]) != w.A0 || fpFromHex(t, f[1]) != w.A1 {
			t.Fatalf("Fp2 inverse %d: got %q, want %s %s", i-nfp, sc.Text(), fpHex(&w.A0), fpHex(&w.A1))
		}
	}
	t.Logf("%d Fp and %d Fp2 inverses equal gnark-crypto's; batches of 30 divsteps: mean %.1f, most %d (bound 37)",
		nfp, len(want2), float64(sumB)/float64(nfp), maxB)
}

// affineCase is one accumulation for the model: wc windows of n sorted
// entries (digits below bw), starting at window w0, and the model's
// parameters: chunk e, threads g, min pairs.
type affineCase struct {
	name          string
	e, g, minPair int
	w0, wc, n, bw int
	digits, vals  []uint32
}

// affineEntries builds a window's sorted entries: the digits by dist, then
// the points of each run (bucket) by pattern, from a pool of npool points
// whose index 0 is the point at infinity, index 1 a point with x = 0 (G1)
// and index 2 a point T with y = 0. T is on neither curve (their groups have
// odd order), so its sums depend on the order of the additions except in
// runs of T and infinity alone ("torsion": T + T = infinity whatever the
// order); there its doubling must stay out of the batch, whose product it
// would zero, spoiling the other runs of the chunk.
func affineEntries(rng *mrand.Rand, n, bw, npool int, dist, pattern string) (digits, vals []uint32) {
	digits = make([]uint32, n)
	switch dist {
	case "uniform":
		for i := range digits {
			digits[i] = uint32(rng.IntN(bw))
		}
	case "zero-heavy":
		for i := range digits {
			if rng.IntN(2) == 0 {
				digits[i] = uint32(rng.IntN(bw))
			}
		}
	case "one-bucket":
		for i := range digits {
			digits[i] = uint32(bw / 2)
		}
	case "lengths": // runs of length 1, 2, 3, ... in digits 1, 2, 3, ...
		d, left := 1, 1
		for i := range digits {
			digits[i] = uint32(d)
			if left--; left == 0 && d < bw-1 {
				d++
				left = d
			}
		}
	case "all-zero":
	default:
		panic(dist)
	}
	slices.Sort(digits)
	vals = make([]uint32, n)
	random := func() uint32 { return uint32(3+rng.IntN(npool-3)) | uint32(rng.IntN(2))<<31 }
	for i := 0; i < n; {
		L := 1
		for i+L < n && digits[i+L] == digits[i] {
			L++
		}
		p := pattern
		if p == "mixed" {
			p = []string{"random", "same", "cancel", "special", "torsion"}[rng.IntN(5)]
		}
		v := random()
		for k := 0; k < L; k++ {
			switch p {
			case "random":
				vals[i+k] = random()
			case "same": // doublings
				vals[i+k] = v
			case "cancel": // P, -P, P, ...
				vals[i+k] = v ^ uint32(k&1)<<31
			case "special": // infinity, x = 0, repeats, random
				switch rng.IntN(4) {
				case 0, 1:
					vals[i+k] = uint32(rng.IntN(2)) | uint32(rng.IntN(2))<<31
				case 2:
					vals[i+k] = v
				default:
					vals[i+k] = random()
				}
			case "torsion":
				vals[i+k] = uint32(2*rng.IntN(2)) | uint32(rng.IntN(2))<<31
			default:
				panic(p)
			}
		}
		i += L
	}
	return digits, vals
}

// affineCases: every digit distribution with every pattern, at several
// window counts and sizes, each at a spread of chunk sizes, thread counts
// and minimum pairs (the extremes: rounds down to single pairs, and none).
func affineCases(rng *mrand.Rand, npool int, short bool) []affineCase {
	type shape struct{ w0, wc, n, bw int }
	shapes := []shape{{0, 1, 1, 5}, {0, 1, 2, 5}, {2, 3, 7, 5}, {1, 2, 100, 17}, {0, 3, 1000, 17}, {3, 2, 3000, 65}}
	if short {
		shapes = shapes[:5]
	}
	dists := []string{"uniform", "zero-heavy", "one-bucket", "lengths", "all-zero"}
	patterns := []string{"random", "same", "cancel", "special", "torsion", "mixed"}
	params := [][3]int{{1, 1, 1}, {2, 3, 1}, {3, 1, 2}, {4, 2, 1}, {5, 7, 3}, {8, 1, 1}, {33, 2, 2}, {64, 3, 24},
		{256, 1 << 20, 1}, {256, 5, 24}, {256, 1, 1 << 20}, {7, 4, 1 << 20}}
	var out []affineCase
	for si, sh := range shapes {
		for di, dist := range dists {
			for pi, pat := range patterns {
				c := affineCase{w0: sh.w0, wc: sh.wc, n: sh.n, bw: sh.bw}
				for w := 0; w < sh.wc; w++ {
					// Windows differ: the case's distribution in the first,
					// the others uniform or one bucket.
					d := dist
					if w > 0 {
						d = dists[(di+w)%3]
					}
					dg, vl := affineEntries(rng, sh.n, sh.bw, npool, d, pat)
					c.digits = append(c.digits, dg...)
					c.vals = append(c.vals, vl...)
				}
				// Each (distribution, pattern) pair meets a few parameter
				// sets, rotating so that all of them meet every shape.
				for k := 0; k < 3; k++ {
					p := params[(si+di*5+pi+4*k)%len(params)]
					c.e, c.g, c.minPair = p[0], p[1], p[2]
					c.name = fmt.Sprintf("w0=%d wc=%d n=%d bw=%d %s/%s e=%d g=%d min=%d", sh.w0, sh.wc, sh.n, sh.bw,
						dist, pat, c.e, c.g, c.minPair)
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// affineCurve is what TestAffineAccumulationModel needs of G1 or G2.
type affineCurve[P any, J any] struct {
	name   string
	pool   func(n int) []P // n points, the first three as affineEntries says
	write  func(w io.Writer, p *P)
	neg    func(p *P) P
	add    func(j *J, p *P)
	parse  func(t *testing.T, f []string) J // the model's X Y Z
	equal  func(a, b *J) bool
	fields int // hex fields of one coordinate
}

func runAffineModel[P any, J any](t *testing.T, bin string, c affineCurve[P, J], cases []affineCase, npool int) {
	pool := c.pool(npool)
	var in bytes.Buffer
	for _, k := range cases {
		fmt.Fprintf(&in, "acc %s %d %d %d %d %d %d %d %d\n", c.name, k.e, k.g, k.minPair, k.w0, k.wc, k.n, k.bw, len(pool))
		for i := range pool {
			c.write(&in, &pool[i])
		}
		for i := range k.digits {
			fmt.Fprintf(&in, "%d %d\n", k.digits[i], k.vals[i])
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(runModel(t, bin, in.Bytes())))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	totals := map[string]int64{}
	for _, k := range cases {
		if !sc.Scan() || !strings.HasPrefix(sc.Text(), "stats ") {
			t.Fatalf("%s: host model: no stats line", k.name)
		}
		f := strings.Fields(sc.Text())[1:]
		for i := 0; i+1 < len(f); i += 2 {
			var v int64
			fmt.Sscan(f[i+1], &v)
			totals[f[i]] += v
		}
		want := make([]J, (k.w0+k.wc)*k.bw)
		for p, d := range k.digits {
			if d == 0 {
				continue
			}
			pt := pool[k.vals[p]&0x7fffffff]
			if k.vals[p]>>31 != 0 {
				pt = c.neg(&pt)
			}
			c.add(&want[(k.w0+p/k.n)*k.bw+int(d)], &pt)
		}
		for b := range want {
			if !sc.Scan() {
				t.Fatalf("%s: host model answered %d of %d buckets", k.name, b, len(want))
			}
			f := strings.Fields(sc.Text())
			if len(f) != 3*c.fields {
				t.Fatalf("%s: host model: bucket line %q", k.name, sc.Text())
			}
			if got := c.parse(t, f); !c.equal(&got, &want[b]) {
				t.Fatalf("%s: bucket %d differs from the sum of its points", k.name, b)
			}
		}
	}
	// The scenarios must reach every branch of the pass.
	for _, s := range []string{"rounds", "batched", "add", "dbl", "first", "second", "inf", "finishes"} {
		if totals[s] == 0 {
			t.Errorf("no %s in any case: the scenarios no longer exercise it", s)
		}
	}
	t.Logf("%d accumulations, every bucket equal to the sum of its points; %d chunks, %d rounds, %d batched additions "+
		"(%.1f a round); pairs: %d add, %d double, %d first or second at infinity, %d cancelling; %d XYZZ finishes",
		len(cases), totals["chunks"], totals["rounds"], totals["batched"],
		float64(totals["batched"])/float64(max(totals["rounds"], 1)), totals["add"], totals["dbl"],
		totals["first"]+totals["second"], totals["inf"], totals["finishes"])
}

// TestAffineAccumulationModel checks the batched-affine bucket accumulation
// (src/msm/affine.cuh, the kernel of CUZK_MSM_AFFINE=1 builds) without a GPU:
// the host model runs the device's pass over sorted entries built here, and
// every bucket, after the fixup's sum of the chunk slots, must equal the sum
// of its points by gnark-crypto, on G1 and G2. The entries cover digit 0,
// runs of every length up to 65 and a window that is one run, chunks from 1
// to 256 entries cutting runs anywhere, one to many thread slots (lists
// reused across chunks), rounds down to single pairs or none, and the pairs
// that bypass the batch: infinity on either side, P + (-P), doublings,
// points with x = 0. The model fails on its own on a bucket written twice, a
// slot not written once, or a list index past its capacity.
func TestAffineAccumulationModel(t *testing.T) {
	bin := buildHostModel(t, affineModelSource, "testdata/affinemodel.cc")
	const npool = 24
	t.Run("g1", func(t *testing.T) {
		rng := mrand.New(mrand.NewPCG(5, 6))
		c := affineCurve[bls12381.G1Affine, bls12381.G1Jac]{
			name: "g1",
			pool: func(n int) []bls12381.G1Affine {
				p := randomPoints(n)
				p[0].SetInfinity()
				p[1].X.SetZero()
				p[1].Y.SetUint64(2) // (0, 2): y^2 = x^3 + 4
				if !p[1].IsOnCurve() {
					t.Fatal("(0, 2) is not on G1's curve")
				}
				p[2].X.SetUint64(5)
				p[2].Y.SetZero()
				return p
			},
			write: func(w io.Writer, p *bls12381.G1Affine) { fmt.Fprintf(w, "%s %s\n", fpHex(&p.X), fpHex(&p.Y)) },
			neg:   func(p *bls12381.G1Affine) bls12381.G1Affine { var q bls12381.G1Affine; q.Neg(p); return q },
			add:   func(j *bls12381.G1Jac, p *bls12381.G1Affine) { j.AddMixed(p) },
			parse: func(t *testing.T, f []string) bls12381.G1Jac {
				return bls12381.G1Jac{X: fpFromHex(t, f[0]), Y: fpFromHex(t, f[1]), Z: fpFromHex(t, f[2])}
			},
			equal:  func(a, b *bls12381.G1Jac) bool { return a.Equal(b) },
			fields: 1,
		}
		runAffineModel(t, bin, c, affineCases(rng, npool, testing.Short()), npool)
	})
	t.Run("g2", func(t *testing.T) {
		rng := mrand.New(mrand.NewPCG(7, 8))
		c := affineCurve[bls12381.G2Affine, bls12381.G2Jac]{
			name: "g2",
			pool: func(n int) []bls12381.G2Affine {
				_, _, _, g2 := bls12381.Generators()
				p := bls12381.BatchScalarMultiplicationG2(&g2, randomFr(n))
				p[0].SetInfinity()
				p[2].X.A0.SetUint64(5)
				p[2].Y.SetZero()
				return p
			},
			write: func(w io.Writer, p *bls12381.G2Affine) {
				fmt.Fprintf(w, "%s %s %s %s\n", fpHex(&p.X.A0), fpHex(&p.X.A1), fpHex(&p.Y.A0), fpHex(&p.Y.A1))
			},
			neg: func(p *bls12381.G2Affine) bls12381.G2Affine { var q bls12381.G2Affine; q.Neg(p); return q },
			add: func(j *bls12381.G2Jac, p *bls12381.G2Affine) { j.AddMixed(p) },
			parse: func(t *testing.T, f []string) bls12381.G2Jac {
				var j bls12381.G2Jac
				j.X.A0, j.X.A1 = fpFromHex(t, f[0]), fpFromHex(t, f[1])
				j.Y.A0, j.Y.A1 = fpFromHex(t, f[2]), fpFromHex(t, f[3])
				j.Z.A0, j.Z.A1 = fpFromHex(t, f[4]), fpFromHex(t, f[5])
				return j
			},
			equal:  func(a, b *bls12381.G2Jac) bool { return a.Equal(b) },
			fields: 2,
		}
		cases := affineCases(rng, npool, true)
		runAffineModel(t, bin, c, cases, npool)
	})
}

//go:embed testdata/xyzzmodel.cc src/ff/*.cuh src/ec/*.cuh
var xyzzModelSource embed.FS

// TestFusedFormulasModel checks that the point formulas with each MUL
// (src/ec/xyzz.cuh, CUZK_MSM_MUL) give the same bits as with plain products
// on random G1 points, the doubling and cancelling branches included
// (testdata/xyzzmodel.cc): the bucket sums the two settings give must be
// identical, not only equal as points.
func TestFusedFormulasModel(t *testing.T) {
	bin := buildHostModel(t, xyzzModelSource, "testdata/xyzzmodel.cc")
	const n = 400
	var in bytes.Buffer
	fmt.Fprintf(&in, "g1 %d\n", n)
	for _, p := range randomPoints(n) {
		fmt.Fprintf(&in, "%s %s\n", fpHex(&p.X), fpHex(&p.Y))
	}
	out := strings.TrimSpace(string(runModel(t, bin, in.Bytes())))
	var k int
	if _, err := fmt.Sscanf(out, "additions %d", &k); err != nil || k < 10*n {
		t.Fatalf("host model: %q", out)
	}
	t.Logf("%d additions, the same bits with every MUL", k)
}
