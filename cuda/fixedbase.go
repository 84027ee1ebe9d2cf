package cuda

/*
#include "bridge.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/internal/par"
)

// MaxFixedBaseWindow is the widest window of a fixed-base table, in bits.
const MaxFixedBaseWindow = 16

// FixedBaseOptions tunes a fixed-base multiplication; the zero value picks
// everything by size.
type FixedBaseOptions struct {
	// Window is the table's window in bits, 1..MaxFixedBaseWindow; 0 chooses
	// by the number of scalars (at most 12).
	Window int
	// Batch is how many scalars are on the device at once; 0 means 2^22 on
	// G1 and 2^21 on G2 (about 0.7 GB of device memory either way).
	Batch int
}

// FixedBaseG1 returns scalars[i]·base for every i, computed on the device:
// base must be in the prime-order subgroup (as the generators are), scalars
// are fr.Element values as gnark-crypto holds them, the points come back in
// affine form with (0, 0) for a zero scalar. The
// host builds base's window table with gnark-crypto's point arithmetic, the
// device adds one table point per window for each scalar, in batches of
// opt.Batch, and the host converts each batch to affine form while the
// device computes the next. Ordered on s; it blocks until the last point is
// converted.
func (d *Device) FixedBaseG1(base bls12381.G1Affine, scalars []fr.Element, opt FixedBaseOptions, s Stream) ([]bls12381.G1Affine, error) {
	g := g1Group(d.lib.fn.fixedBaseG1)
	return fixedBase(d, &g, base, scalars, opt, s)
}

// FixedBaseG2 is FixedBaseG1 on G2.
func (d *Device) FixedBaseG2(base bls12381.G2Affine, scalars []fr.Element, opt FixedBaseOptions, s Stream) ([]bls12381.G2Affine, error) {
	g := g2Group(d.lib.fn.fixedBaseG2)
	return fixedBase(d, &g, base, scalars, opt, s)
}

// fixedBaseGroup is what the table and the batching loop need to know of a
// group: its affine type A (the table's and the result's), its Jacobian type
// J (the kernel's output) and gnark-crypto's operations on them.
type fixedBaseGroup[A, J any] struct {
	name, op   string
	fn         unsafe.Pointer
	batch      int
	isInfinity func(*A) bool
	inSubgroup func(*A) bool
	fromAffine func(*J, *A)
	addMixed   func(*J, *A)
	double     func(*J)
	toAffine   func(out []A, in []J)
}

func g1Group(fn unsafe.Pointer) fixedBaseGroup[bls12381.G1Affine, bls12381.G1Jac] {
	return fixedBaseGroup[bls12381.G1Affine, bls12381.G1Jac]{
		name: "g1", op: "cuzk_fixed_base_g1", fn: fn, batch: 1 << 22,
		isInfinity: (*bls12381.G1Affine).IsInfinity,
		inSubgroup: (*bls12381.G1Affine).IsInSubGroup,
		fromAffine: func(p *bls12381.G1Jac, a *bls12381.G1Affine) { p.FromAffine(a) },
		addMixed:   func(p *bls12381.G1Jac, a *bls12381.G1Affine) { p.AddMixed(a) },
		double:     func(p *bls12381.G1Jac) { p.DoubleAssign() },
		toAffine:   g1JacobianToAffine,
	}
}

func g2Group(fn unsafe.Pointer) fixedBaseGroup[bls12381.G2Affine, bls12381.G2Jac] {
	return fixedBaseGroup[bls12381.G2Affine, bls12381.G2Jac]{
		name: "g2", op: "cuzk_fixed_base_g2", fn: fn, batch: 1 << 21,
		isInfinity: (*bls12381.G2Affine).IsInfinity,
		inSubgroup: (*bls12381.G2Affine).IsInSubGroup,
		fromAffine: func(p *bls12381.G2Jac, a *bls12381.G2Affine) { p.FromAffine(a) },
		addMixed:   func(p *bls12381.G2Jac, a *bls12381.G2Affine) { p.AddMixed(a) },
		double:     func(p *bls12381.G2Jac) { p.DoubleAssign() },
		toAffine:   g2JacobianToAffine,
	}
}

// table returns base's c-bit window table: entry w·2^c + k is
// k·2^(c·w)·base (entry 0 of each window at infinity). The first entry of
// each window comes from the last window's by c doublings; the rest of a
// window, one mixed addition each, in parallel over the windows; then one
// batched conversion to affine form. A 12-bit G2 table (90 112 points) takes
// 0.2 s on 2 cores, where as many scalar multiplications take 12 s.
func (g *fixedBaseGroup[A, J]) table(base A, c int) []A {
	nw := fixedBaseWindows(c)
	steps := make([]A, nw) // 2^(c·w)·base
	steps[0] = base
	var p J
	one := make([]J, 1)
	g.fromAffine(&p, &base)
	for w := 1; w < nw; w++ {
		for range c {
			g.double(&p)
		}
		one[0] = p
		g.toAffine(steps[w:w+1], one)
	}
	jac := make([]J, nw<<c) // the zero value has Z = 0: infinity
	par.Range(nw, 1, 4, func(lo, hi int) {
		for w := lo; w < hi; w++ {
			row := jac[w<<c : (w+1)<<c]
			for k := 1; k < len(row); k++ {
				row[k] = row[k-1]
				g.addMixed(&row[k], &steps[w])
			}
		}
	})
	out := make([]A, len(jac))
	g.toAffine(out, jac)
	return out
}

func fixedBase[A, J any](d *Device, g *fixedBaseGroup[A, J], base A, scalars []fr.Element, opt FixedBaseOptions, s Stream) (_ []A, err error) {
	n := len(scalars)
	out := make([]A, n) // the zero value is the point at infinity
	if n == 0 || g.isInfinity(&base) {
		return out, nil
	}
	// A point of the curve outside the subgroup may have multiples at
	// infinity among the table's, which the kernel's additions do not expect.
	if !g.inSubgroup(&base) {
		return nil, fmt.Errorf("cuda: fixed-base %s: the base is not in the prime-order subgroup", g.name)
	}
	c := opt.Window
	if c == 0 {
		c = fixedBaseWindow(n)
	}
	if c < 1 || c > MaxFixedBaseWindow {
		return nil, fmt.Errorf("cuda: fixed-base %s: window of %d bits outside [1, %d]", g.name, c, MaxFixedBaseWindow)
	}
	batch := opt.Batch
	if batch <= 0 {
		batch = g.batch
	}
	batch = min(batch, n)
	defer func() {
		if err != nil {
			err = fmt.Errorf("fixed-base %s of %d scalars: %w", g.name, n, err)
		}
	}()

	table := g.table(base, c)
	var a A
	var j J
	tp, err := d.MallocAsync(int64(len(table))*int64(unsafe.Sizeof(a)), s)
	if err != nil {
		return nil, err
	}
	defer d.FreeAsync(tp, s)
	if err := CopyIn(d, tp, table, s); err != nil {
		return nil, err
	}
	sp, err := d.MallocAsync(int64(batch)*fr.Bytes, s)
	if err != nil {
		return nil, err
	}
	defer d.FreeAsync(sp, s)
	jp, err := d.MallocAsync(int64(batch)*int64(unsafe.Sizeof(j)), s)
	if err != nil {
		return nil, err
	}
	defer d.FreeAsync(jp, s)

	// Two host buffers: while the CPU converts one batch to affine form, the
	// device computes the next into the other. A buffer is refilled only
	// after its conversion is done.
	var host [2][]J
	var converting [2]sync.WaitGroup
	defer converting[0].Wait()
	defer converting[1].Wait()
	for b, lo := 0, 0; lo < n; b, lo = b+1, lo+batch {
		hi := min(lo+batch, n)
		converting[b%2].Wait()
		if host[b%2] == nil {
			host[b%2] = make([]J, batch)
		}
		buf := host[b%2][:hi-lo]
		if err := CopyIn(d, sp, scalars[lo:hi], s); err != nil {
			return nil, err
		}
		rc := C.cz_fixed_base(g.fn, d.dev(), C.uint64_t(tp), C.int(c), C.uint64_t(sp), C.uint64_t(hi-lo),
			C.uint64_t(jp), C.uint64_t(s))
		if err := d.lib.check(g.op, rc); err != nil {
			return nil, err
		}
		if err := CopyOut(d, buf, jp, s); err != nil {
			return nil, err
		}
		converting[b%2].Add(1)
		go func() {
			defer converting[b%2].Done()
			g.toAffine(out[lo:hi], buf)
		}()
	}
	converting[0].Wait()
	converting[1].Wait()
	return out, nil
}

// fixedBaseWindows is the number of c-bit windows of a scalar below r.
func fixedBaseWindows(c int) int { return (fr.Bits + c - 1) / c }

// fixedBaseWindow picks the widest window up to 12 bits whose table has at
// most a quarter as many points as there are scalars (1024 are allowed
// whatever the size): the table is built on the CPU, one addition a point.
// Each step fewer windows saves a mixed addition per scalar on the device;
// 12 bits keep the G2 table (17 MB) inside the H200's L2 cache.
func fixedBaseWindow(n int) int {
	budget := max(n/4, 1<<10)
	c := 4
	for c < 12 && fixedBaseWindows(c+1)<<(c+1) <= budget {
		c++
	}
	return c
}

// g1JacobianToAffine sets out[i] to in[i] in affine form ((0, 0) where Z = 0),
// in parallel chunks that each invert the product of their Z once
// (Montgomery's trick).
func g1JacobianToAffine(out []bls12381.G1Affine, in []bls12381.G1Jac) {
	par.Range(len(in), 1024, 4, func(lo, hi int) {
		acc := fp.One()
		for i := lo; i < hi; i++ {
			if in[i].Z.IsZero() {
				continue
			}
			out[i].X = acc // the product of the Z before i, until the pass below
			acc.Mul(&acc, &in[i].Z)
		}
		acc.Inverse(&acc)
		for i := hi - 1; i >= lo; i-- {
			if in[i].Z.IsZero() {
				out[i] = bls12381.G1Affine{}
				continue
			}
			var zInv, zz fp.Element
			zInv.Mul(&out[i].X, &acc)
			acc.Mul(&acc, &in[i].Z)
			zz.Square(&zInv)
			out[i].X.Mul(&in[i].X, &zz)
			out[i].Y.Mul(&in[i].Y, &zz).Mul(&out[i].Y, &zInv)
		}
	})
}

// g2JacobianToAffine is g1JacobianToAffine on G2 (gnark-crypto has no batch
// conversion for G2).
func g2JacobianToAffine(out []bls12381.G2Affine, in []bls12381.G2Jac) {
	par.Range(len(in), 512, 4, func(lo, hi int) {
		var inf bls12381.G2Affine
		acc := inf.X
		acc.SetOne()
		for i := lo; i < hi; i++ {
			if in[i].Z.IsZero() {
				continue
			}
			out[i].X = acc
			acc.Mul(&acc, &in[i].Z)
		}
		acc.Inverse(&acc)
		for i := hi - 1; i >= lo; i-- {
			if in[i].Z.IsZero() {
				out[i] = inf
				continue
			}
			zInv, zz := inf.X, inf.X
			zInv.Mul(&out[i].X, &acc)
			acc.Mul(&acc, &in[i].Z)
			zz.Square(&zInv)
			out[i].X.Mul(&in[i].X, &zz)
			out[i].Y.Mul(&in[i].Y, &zz).Mul(&out[i].Y, &zInv)
		}
	})
}
