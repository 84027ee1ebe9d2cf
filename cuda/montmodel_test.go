package cuda

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// The model and the headers it includes, embedded so that a test binary run
// from anywhere (build/cuda.test on the GPU machine) can build it.
//
//go:embed testdata/montmodel.cc src/ff/*.cuh
var montModelSource embed.FS

// TestEvenOddMulModel checks the device's even/odd Montgomery multiplication
// (src/ff/mont_eo.cuh, CUZK_MUL=2) without a GPU: testdata/montmodel.cc runs
// its schedule with an interpreter of the same PTX carry chains, built here
// with the host's C++ compiler, and every product must equal a·b·R⁻¹ mod p
// from math/big, fully reduced, on Fr (with REDC and with REDCR, the
// reduction CUZK_NTT_MUL=1 gives the NTT) and Fp: edge values (0, 1, 2, p−1, p−2,
// (p±1)/2, R mod p, powers of two and their neighbours, limbs of all ones),
// every pair of them, random pairs, and values up to 2^(32N)−1 times 1 (the
// conversions out of Montgomery form). The model also fails on any carry the
// chains would lose.
func TestEvenOddMulModel(t *testing.T) {
	bin := buildHostModel(t, montModelSource, "testdata/montmodel.cc")
	rng := mrand.New(mrand.NewPCG(1, 2))
	for _, f := range []struct {
		name  string
		p     *big.Int
		limbs int
	}{{"fr", fr.Modulus(), 8}, {"frr", fr.Modulus(), 8}, {"fp", fp.Modulus(), 12}} {
		t.Run(f.name, func(t *testing.T) {
			var in bytes.Buffer
			var want []*big.Int
			R := new(big.Int).Lsh(big.NewInt(1), uint(32*f.limbs))
			rInv := new(big.Int).ModInverse(R, f.p)
			add := func(a, b *big.Int) {
				fmt.Fprintf(&in, "%s %x %x\n", f.name, a, b)
				w := new(big.Int).Mul(a, b)
				w.Mul(w, rInv).Mod(w, f.p)
				want = append(want, w)
			}
			edges := edgeValues(f.p, f.limbs, rng)
			for _, a := range edges {
				for _, b := range edges {
					add(a, b)
				}
			}
			for i := 0; i < 20000; i++ {
				add(randBelow(rng, f.p), randBelow(rng, f.p))
			}
			// Unreduced values below 2^(32N), times 1 from either side.
			one := big.NewInt(1)
			top := []*big.Int{new(big.Int).Sub(R, one), new(big.Int).Sub(R, big.NewInt(2)), new(big.Int).Sub(R, f.p),
				new(big.Int).Set(f.p), new(big.Int).Add(f.p, one), new(big.Int).Lsh(f.p, 1)}
			for i := 0; i < 1000; i++ {
				top = append(top, randBelow(rng, R))
			}
			for _, a := range top {
				if a.Cmp(R) < 0 {
					add(a, one)
					add(one, a)
				}
			}

			n := checkModelAnswers(t, runModel(t, bin, in.Bytes()), in.String(), want)
			t.Logf("%d products equal math/big's", n)
		})
	}
}

// edgeValues are field elements below p where carries are likely to go wrong.
func edgeValues(p *big.Int, limbs int, rng *mrand.Rand) []*big.Int {
	one := big.NewInt(1)
	R := new(big.Int).Lsh(one, uint(32*limbs))
	half := new(big.Int).Rsh(p, 1)
	v := []*big.Int{big.NewInt(0), one, big.NewInt(2), new(big.Int).Sub(p, one), new(big.Int).Sub(p, big.NewInt(2)),
		half, new(big.Int).Add(half, one), new(big.Int).Mod(R, p), new(big.Int).Mod(new(big.Int).Mul(R, R), p)}
	for k := 31; k < p.BitLen(); k += 32 {
		pow := new(big.Int).Lsh(one, uint(k))
		for _, d := range []int64{-1, 0, 1} {
			v = append(v, new(big.Int).Add(pow, big.NewInt(d)))
		}
		v = append(v, new(big.Int).Sub(p, pow))
	}
	// Limbs of all ones, zero or one at random, reduced below p.
	for i := 0; i < 16; i++ {
		x := new(big.Int)
		for j := limbs - 1; j >= 0; j-- {
			x.Lsh(x, 32)
			switch rng.IntN(3) {
			case 0:
				x.Or(x, big.NewInt(0xffffffff))
			case 1:
				x.Or(x, one)
			}
		}
		v = append(v, x.Mod(x, p))
	}
	return v
}

func randBelow(rng *mrand.Rand, n *big.Int) *big.Int {
	b := make([]byte, (n.BitLen()+7)/8)
	for {
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		x := new(big.Int).SetBytes(b)
		x.Rsh(x, uint(len(b)*8-n.BitLen()))
		if x.Cmp(n) < 0 {
			return x
		}
	}
}

// TestFusedMulModel checks the fused sum of two Fp products (eo_mul2 in
// src/ff/mont_eo.cuh, the point formulas' a·b + c·d under CUZK_MSM_MUL=1)
// and the Fp squaring (eo_sqr, CUZK_MSM_MUL=2) the same way: every result
// must equal (a·b + c·d)·R⁻¹ (a·a·R⁻¹) mod p, fully reduced, with no carry
// lost in the chains. Both products at their largest (every
// pair of edge values taken twice, a = c and b = d, which drives the
// accumulators to the bound mont_eo.cuh states), every pair of edge values
// beside a random and beside a maximal second product, and random
// quadruples.
func TestFusedMulModel(t *testing.T) {
	bin := buildHostModel(t, montModelSource, "testdata/montmodel.cc")
	rng := mrand.New(mrand.NewPCG(3, 4))
	p := fp.Modulus()
	const limbs = 12
	R := new(big.Int).Lsh(big.NewInt(1), 32*limbs)
	rInv := new(big.Int).ModInverse(R, p)
	var in bytes.Buffer
	var want []*big.Int
	add := func(a, b, c, d *big.Int) {
		fmt.Fprintf(&in, "fpm %x %x %x %x\n", a, b, c, d)
		w := new(big.Int).Mul(a, b)
		w.Add(w, new(big.Int).Mul(c, d))
		w.Mul(w, rInv).Mod(w, p)
		want = append(want, w)
	}
	edges := edgeValues(p, limbs, rng)
	top := new(big.Int).Sub(p, big.NewInt(1))
	for _, a := range edges {
		for _, b := range edges {
			add(a, b, a, b)
			add(a, b, top, top)
			add(top, top, a, b)
			add(a, b, randBelow(rng, p), randBelow(rng, p))
		}
	}
	for i := 0; i < 20000; i++ {
		add(randBelow(rng, p), randBelow(rng, p), randBelow(rng, p), randBelow(rng, p))
	}
	// The squaring (eo_sqr): every edge value, values with each limb's top
	// bit set or clear (the bit 2a moves up a limb), random values.
	square := func(a *big.Int) {
		fmt.Fprintf(&in, "fps %x %x\n", a, a)
		w := new(big.Int).Mul(a, a)
		w.Mul(w, rInv).Mod(w, p)
		want = append(want, w)
	}
	for _, a := range edges {
		square(a)
	}
	for i := 0; i < 2000; i++ {
		x := new(big.Int)
		for j := limbs - 1; j >= 0; j-- {
			x.Lsh(x, 32)
			x.Or(x, big.NewInt(int64(rng.Uint32()&0x7fffffff|uint32(rng.IntN(2))<<31)))
		}
		square(x.Mod(x, p))
	}
	for i := 0; i < 20000; i++ {
		square(randBelow(rng, p))
	}
	n := checkModelAnswers(t, runModel(t, bin, in.Bytes()), in.String(), want)
	t.Logf("%d fused sums and squares equal math/big's", n)
}

// checkModelAnswers compares the host model's output, one hexadecimal value
// a line, with want, naming the input line of the first few that differ, and
// returns how many it read.
func checkModelAnswers(t *testing.T, out []byte, input string, want []*big.Int) int {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(out))
	lines := strings.Split(input, "\n")
	n, bad := 0, 0
	for sc.Scan() {
		got, ok := new(big.Int).SetString(sc.Text(), 16)
		if n >= len(want) || !ok {
			t.Fatalf("host model: unexpected output line %d: %q", n, sc.Text())
		}
		if got.Cmp(want[n]) != 0 {
			if bad++; bad <= 5 {
				t.Errorf("%s: got %x, want %x", lines[n], got, want[n])
			}
		}
		n++
	}
	if n != len(want) {
		t.Fatalf("host model answered %d of %d", n, len(want))
	}
	if bad > 0 {
		t.Fatalf("%d of %d wrong", bad, n)
	}
	return n
}

// TestLazyFp2MulModel checks the Fp2 product with lazy reduction (eo_fp2_mul
// in src/ff/mont_eo.cuh, the G2 point formulas' products under
// CUZK_MSM_G2_MUL=1) and the fused sum a b + c d (eo_fp2_mul2, under
// CUZK_MSM_G2_MUL=2) against gnark-crypto's arithmetic: both components must
// equal those of the schoolbook E2 product written with fp.Element (c0 = a0
// b0 - a1 b1, c1 = a0 b1 + a1 b0, Montgomery products on the same limbs the
// device reads), with no carry lost in the chains. Every pair of edge values
// as a, times a maximal b (p - 1, p - 1), a's swap, a itself (both products
// at the bound the reduction assumes) and a random b, and the fused sums at
// their largest; random pairs and quadruples; values with each limb's top
// bit set or clear.
func TestLazyFp2MulModel(t *testing.T) {
	bin := buildHostModel(t, montModelSource, "testdata/montmodel.cc")
	rng := mrand.New(mrand.NewPCG(5, 6))
	p := fp.Modulus()
	const limbs = 12
	type e2 struct{ a0, a1 fp.Element }
	var in bytes.Buffer
	var want []*big.Int
	mul := func(a, b e2) e2 { // the schoolbook E2 product
		var c0, c1, u fp.Element
		c0.Mul(&a.a0, &b.a0)
		u.Mul(&a.a1, &b.a1)
		c0.Sub(&c0, &u)
		c1.Mul(&a.a0, &b.a1)
		u.Mul(&a.a1, &b.a0)
		c1.Add(&c1, &u)
		return e2{c0, c1}
	}
	add := func(a, b e2) {
		fmt.Fprintf(&in, "fp2m %s %s %s %s\n", fpHex(&a.a0), fpHex(&a.a1), fpHex(&b.a0), fpHex(&b.a1))
		c := mul(a, b)
		want = append(want, rawBig(&c.a0), rawBig(&c.a1))
	}
	// The fused sum a b + c d (eo_fp2_mul2, CUZK_MSM_G2_MUL=2).
	add2 := func(a, b, c, d e2) {
		fmt.Fprintf(&in, "fp2m2 %s %s %s %s %s %s %s %s\n", fpHex(&a.a0), fpHex(&a.a1), fpHex(&b.a0), fpHex(&b.a1),
			fpHex(&c.a0), fpHex(&c.a1), fpHex(&d.a0), fpHex(&d.a1))
		x, y := mul(a, b), mul(c, d)
		x.a0.Add(&x.a0, &y.a0)
		x.a1.Add(&x.a1, &y.a1)
		want = append(want, rawBig(&x.a0), rawBig(&x.a1))
	}
	rnd := func() e2 { return e2{rawFp(randBelow(rng, p)), rawFp(randBelow(rng, p))} }
	topBits := func() fp.Element {
		x := new(big.Int)
		for j := limbs - 1; j >= 0; j-- {
			x.Lsh(x, 32)
			x.Or(x, big.NewInt(int64(rng.Uint32()&0x7fffffff|uint32(rng.IntN(2))<<31)))
		}
		return rawFp(x.Mod(x, p))
	}
	edges := edgeValues(p, limbs, rng)
	top := rawFp(new(big.Int).Sub(p, big.NewInt(1)))
	maxb := e2{top, top}
	for _, x := range edges {
		for _, y := range edges {
			a := e2{rawFp(x), rawFp(y)}
			add(a, maxb)
			add(maxb, a)
			add(a, e2{a.a1, a.a0})
			add(a, a)
			add(a, rnd())
			// Both sums at their largest (a b + a b with the real parts' second
			// products zero and at the top), beside a maximal and a random c d.
			z := e2{a.a0, rawFp(big.NewInt(0))}
			add2(a, a, a, a)
			add2(z, maxb, z, maxb)
			add2(a, maxb, maxb, a)
			add2(a, e2{a.a1, a.a0}, rnd(), rnd())
		}
	}
	for i := 0; i < 2000; i++ {
		add(e2{topBits(), topBits()}, e2{topBits(), topBits()})
		add2(e2{topBits(), topBits()}, e2{topBits(), topBits()}, e2{topBits(), topBits()}, e2{topBits(), topBits()})
	}
	for i := 0; i < 20000; i++ {
		add(rnd(), rnd())
		add2(rnd(), rnd(), rnd(), rnd())
	}
	// checkModelAnswers names input lines by output line: give it the input
	// with each line twice, one per component.
	var twice strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(in.String(), "\n"), "\n") {
		twice.WriteString(l + "\n" + l + "\n")
	}
	n := checkModelAnswers(t, runModel(t, bin, in.Bytes()), twice.String(), want)
	t.Logf("%d Fp2 products and fused sums (%d components) equal gnark-crypto's", n/2, n)
}
