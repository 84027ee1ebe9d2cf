//go:build ignore

// montgen writes mont_eo_asm.cuh, the PTX carry chains of the even/odd
// Montgomery multiplication (mont_eo.cuh) for 8 and 12 limbs:
//
//	go run cuda/src/ff/montgen.go > cuda/src/ff/mont_eo_asm.cuh
//
// Each chain is one asm string, so nothing the compiler emits can come between
// an instruction that sets the carry flag and the one that reads it. The
// operands of every block are numbered in one fixed order (listed with each
// block), which both the device's asm statements and the host model
// (cuda/testdata/montmodel.cc, which interprets these strings) follow.
package main

import (
	"fmt"
	"math/big"
	"os"
	"strings"
)

type block struct {
	name, doc string
	ops       []string // operand names in %-number order: "ev3", "a1", "p0"...
	inout     []string // the accumulators the block updates in place ("+r")
	outs      []string // further outputs ("=r"), besides t, u and mask
	lines     []string
}

// operands is the block's asm operand list, binding each name to the array
// element of the same name in the calling function (outputs t, u, mask;
// accumulators ev, od; inputs a, b, m; the modulus as immediates P::mod(k)).
// nvcc takes no early-clobber ("=&r"), and needs none: PTX registers are
// virtual, so an output never shares one with an input; ptxas allocates the
// real ones knowing what each instruction of the block reads and writes.
func (b *block) operands() string {
	var outs, ins []string
	for _, o := range b.ops {
		v := arrayRef(o)
		switch {
		case o == "mask" || o[0] == 't' || o[0] == 'u' || contains(b.outs, o):
			outs = append(outs, fmt.Sprintf("\"=r\"(%s)", v))
		case contains(b.inout, strings.TrimRight(o, "0123456789")):
			outs = append(outs, fmt.Sprintf("\"+r\"(%s)", v))
		case o[0] == 'p':
			ins = append(ins, fmt.Sprintf("\"n\"(P::mod(%s))", o[1:]))
		default:
			ins = append(ins, fmt.Sprintf("\"r\"(%s)", v))
		}
	}
	return ": " + strings.Join(outs, ", ") + " : " + strings.Join(ins, ", ")
}

// pointers is the same binding for the host model: one pointer per operand, in
// order (the modulus from an array p).
func (b *block) pointers() string {
	r := make([]string, len(b.ops))
	for i, o := range b.ops {
		r[i] = "&" + arrayRef(o)
	}
	return strings.Join(r, ", ")
}

// arrayRef maps "ev3" to "ev[3]"; scalars (b, m, mask) stay as they are.
func arrayRef(o string) string {
	i := strings.IndexAny(o, "0123456789")
	if i < 0 {
		return o
	}
	return fmt.Sprintf("%s[%s]", o[:i], o[i:])
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (b *block) op(name string) string {
	for i, o := range b.ops {
		if o == name {
			return fmt.Sprintf("%%%d", i)
		}
	}
	panic("no operand " + name)
}

// ins appends one instruction; operands are names, or "0" for the immediate.
func (b *block) ins(opcode string, args ...string) {
	s := make([]string, len(args))
	for i, a := range args {
		if a == "0" {
			s[i] = "0"
		} else {
			s[i] = b.op(a)
		}
	}
	b.lines = append(b.lines, fmt.Sprintf("%s %s;", opcode, strings.Join(s, ", ")))
}

func names(prefix string, n int) []string {
	r := make([]string, n)
	for i := range r {
		r[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return r
}

func cat(lists ...[]string) []string {
	var r []string
	for _, l := range lists {
		r = append(r, l...)
	}
	return r
}

func at(prefix string, i, n int) string {
	if i >= n {
		return "0"
	}
	return fmt.Sprintf("%s%d", prefix, i)
}

// mulAdd is a chain acc += x * y over the pairs (acc[2k], acc[2k+1]) with the
// limbs x[first + 2k], carrying from pair to pair. in names the limbs added
// (acc itself, or acc shifted, for the in-place shift); carryIn starts the chain
// with the carry flag; carryOut leaves the last one set.
func (b *block) mulAdd(acc string, in func(i int) string, x string, first int, y string, n int, carryIn, carryOut bool) {
	for k := 0; 2*k < n; k++ {
		lo := "madc.lo.cc.u32"
		if k == 0 && !carryIn {
			lo = "mad.lo.cc.u32"
		}
		hi := "madc.hi.cc.u32"
		if 2*k+2 >= n && !carryOut {
			hi = "madc.hi.u32"
		}
		xs := x
		if x != "m" && x != "b" && x != "d" {
			xs = fmt.Sprintf("%s%d", x, first+2*k)
		}
		ys := y
		if y == "p" {
			ys = fmt.Sprintf("p%d", first+2*k)
		}
		b.ins(lo, fmt.Sprintf("%s%d", acc, 2*k), xs, ys, in(2*k))
		b.ins(hi, fmt.Sprintf("%s%d", acc, 2*k+1), xs, ys, in(2*k+1))
	}
}

func blocks(n int) []block {
	self := func(acc string) func(int) string {
		return func(i int) string { return fmt.Sprintf("%s%d", acc, i) }
	}
	// a * b_i after the first limb of b: see mont_eo.cuh for the value each
	// accumulator holds.
	ab := block{name: "AB", doc: "ev, od in/out; a, b in", inout: []string{"ev", "od"}, ops: cat(names("ev", n), names("od", n), names("a", n), []string{"b"})}
	ab.ins("add.cc.u32", "od0", "od0", "ev1")
	ab.mulAdd("ev", func(i int) string { return at("ev", i+2, n) }, "a", 1, "b", n, true, false)
	ab.mulAdd("od", self("od"), "a", 0, "b", n, false, true)
	ab.ins("addc.u32", fmt.Sprintf("ev%d", n-1), fmt.Sprintf("ev%d", n-1), "0")

	redc := block{name: "REDC", doc: "ev, od in/out; m in; p immediates", inout: []string{"ev", "od"}, ops: cat(names("ev", n), names("od", n), []string{"m"}, names("p", n))}
	redc.mulAdd("od", self("od"), "m", 1, "p", n, false, false)
	redc.mulAdd("ev", self("ev"), "m", 0, "p", n, false, true)
	redc.ins("addc.u32", fmt.Sprintf("od%d", n-1), fmt.Sprintf("od%d", n-1), "0")

	// REDCR: REDC for a modulus whose two low limbs are 1 and 2^32 - 1 (Fr)
	// and whose INV is therefore 2^32 - 1: m = -ev0, m * p0 = m, and
	// m * p1 = m * 2^32 - m has low limb -m = ev0 and high limb m - [m != 0]
	// (the borrow of -ev0). The same values go into the same chains as in
	// REDC, so the same carries come out; what changes is that neither
	// limb takes a multiply-add, and m is computed here.
	redcr := block{name: "REDCR", doc: "ev, od in/out; m, h out (m scratch for the caller); p immediates", inout: []string{"ev", "od"}, outs: []string{"m", "h"}, ops: cat(names("ev", n), names("od", n), []string{"m", "h"}, names("p", n))}
	redcr.ins("sub.cc.u32", "m", "0", "ev0")
	redcr.ins("subc.u32", "h", "m", "0")
	redcr.ins("add.cc.u32", "od0", "od0", "ev0")
	redcr.ins("addc.cc.u32", "od1", "od1", "h")
	for j := 3; j < n; j += 2 {
		redcr.ins("madc.lo.cc.u32", fmt.Sprintf("od%d", j-1), "m", fmt.Sprintf("p%d", j), fmt.Sprintf("od%d", j-1))
		hi := "madc.hi.cc.u32"
		if j+2 >= n {
			hi = "madc.hi.u32"
		}
		redcr.ins(hi, fmt.Sprintf("od%d", j), "m", fmt.Sprintf("p%d", j), fmt.Sprintf("od%d", j))
	}
	redcr.ins("add.cc.u32", "ev0", "ev0", "m")
	redcr.ins("addc.cc.u32", "ev1", "ev1", "0")
	for j := 2; j < n; j += 2 {
		redcr.ins("madc.lo.cc.u32", fmt.Sprintf("ev%d", j), "m", fmt.Sprintf("p%d", j), fmt.Sprintf("ev%d", j))
		redcr.ins("madc.hi.cc.u32", fmt.Sprintf("ev%d", j+1), "m", fmt.Sprintf("p%d", j), fmt.Sprintf("ev%d", j+1))
	}
	redcr.ins("addc.u32", fmt.Sprintf("od%d", n-1), fmt.Sprintf("od%d", n-1), "0")

	// MA: V += c * d in place, between an AB and its REDC (the fused sum of
	// two products, eo_mul2): the shape of REDC with c and d in registers.
	// Only for Fp: the sum needs 3p below 2^(32N), which Fr's r is not.
	ma := block{name: "MA", doc: "ev, od in/out; c, d in", inout: []string{"ev", "od"}, ops: cat(names("ev", n), names("od", n), names("c", n), []string{"d"})}
	ma.mulAdd("od", self("od"), "c", 1, "d", n, false, false)
	ma.mulAdd("ev", self("ev"), "c", 0, "d", n, false, true)
	ma.ins("addc.u32", fmt.Sprintf("od%d", n-1), fmt.Sprintf("od%d", n-1), "0")

	// SQ1 .. SQ(n-1): row i of the squaring (eo_sqr), the AB of step i with
	// the multiplicand (0, ..., 0, a_i, e, D_(i+2), ..., D_(n-1)) at
	// accumulator limbs 0..n-1 (D = 2a, e = a_(i+1) << 1) and the multiplier
	// b = a_i: the products below limb i are zero and are left out, so row i
	// takes n - i products instead of n.
	var sq []block
	if n == 12 {
		for i := 1; i < n; i++ {
			sq = append(sq, sqRow(n, i))
		}
	}

	fin := block{name: "FINAL", doc: "t, u, mask out; ev, od in; p immediates", ops: cat(names("t", n), names("u", n), []string{"mask"}, names("ev", n), names("od", n), names("p", n))}
	fin.ins("add.cc.u32", "t0", "od0", "ev1")
	for k := 1; k < n-1; k++ {
		fin.ins("addc.cc.u32", fmt.Sprintf("t%d", k), fmt.Sprintf("od%d", k), fmt.Sprintf("ev%d", k+1))
	}
	fin.ins("addc.u32", fmt.Sprintf("t%d", n-1), fmt.Sprintf("od%d", n-1), "0")
	fin.ins("sub.cc.u32", "u0", "t0", "p0")
	for k := 1; k < n; k++ {
		fin.ins("subc.cc.u32", fmt.Sprintf("u%d", k), fmt.Sprintf("t%d", k), fmt.Sprintf("p%d", k))
	}
	fin.ins("subc.u32", "mask", "0", "0")
	if n == 8 {
		return []block{ab, redc, redcr, fin}
	}
	return append(append([]block{ab, redc, ma}, append(sq, fin)...), lazyBlocks(n)...)
}

// fpModulus is BLS12-381's p, whose square the lazy Fp2 product adds as an
// offset (a literal in the chain: 24 more operands would make the block's
// operand list longer than it needs to be).
var fpModulus, _ = new(big.Int).SetString("1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab", 16)

// lazyBlocks are the chains of the Fp2 product with lazy reduction
// (eo_fp2_mul in mont_eo.cuh): products kept as 2n-limb integers (rows of
// AB, the low limbs read off as they leave the accumulators, the high ones by
// HI), sums and differences of them (ADD, KD, ADDW, SUBW), and the
// Montgomery reduction of a 2n-limb value (REDC, then RP for each further
// limb, then RFIN).
func lazyBlocks(n int) []block {
	w := 2 * n
	// HI: the high half of a product, V / 2^32 = od + (ev >> 32) after its
	// last row (FINAL's sum without the subtraction).
	hi := block{name: "HI", doc: "h out; ev, od in", outs: names("h", n), ops: cat(names("h", n), names("ev", n), names("od", n))}
	hi.ins("add.cc.u32", "h0", "od0", "ev1")
	for k := 1; k < n-1; k++ {
		hi.ins("addc.cc.u32", fmt.Sprintf("h%d", k), fmt.Sprintf("od%d", k), fmt.Sprintf("ev%d", k+1))
	}
	hi.ins("addc.u32", fmt.Sprintf("h%d", n-1), fmt.Sprintf("od%d", n-1), "0")

	// add is a chain r = x + y over k limbs that carries nothing out.
	add := func(b *block, r, x, y string, k int) {
		for j := 0; j < k; j++ {
			op := "addc.cc.u32"
			if j == 0 {
				op = "add.cc.u32"
			} else if j == k-1 {
				op = "addc.u32"
			}
			b.ins(op, fmt.Sprintf("%s%d", r, j), fmt.Sprintf("%s%d", x, j), fmt.Sprintf("%s%d", y, j))
		}
	}
	sub := func(b *block, r, x, y string, k int) {
		for j := 0; j < k; j++ {
			op := "subc.cc.u32"
			if j == 0 {
				op = "sub.cc.u32"
			} else if j == k-1 {
				op = "subc.u32"
			}
			b.ins(op, fmt.Sprintf("%s%d", r, j), fmt.Sprintf("%s%d", x, j), fmt.Sprintf("%s%d", y, j))
		}
	}
	// ADD: s = x + y over n limbs, for operands below 2^(32n - 1) (Karatsuba's
	// a0 + a1 < 2p, not reduced).
	addn := block{name: "ADD", doc: "s out; x, y in", outs: names("s", n), ops: cat(names("s", n), names("x", n), names("y", n))}
	add(&addn, "s", "x", "y", n)
	// KD: d = x + p^2 - y over 2n limbs, for x, y < p^2: below 2 p^2, no
	// carry out of the addition, no borrow out of the subtraction.
	kd := block{name: "KD", doc: "d out; x, y in; p^2 literal", outs: names("d", w), ops: cat(names("d", w), names("x", w), names("y", w))}
	p2 := new(big.Int).Mul(fpModulus, fpModulus)
	for j := 0; j < w; j++ {
		op := "addc.cc.u32"
		if j == 0 {
			op = "add.cc.u32"
		} else if j == w-1 {
			op = "addc.u32"
		}
		limb := new(big.Int).And(new(big.Int).Rsh(p2, uint(32*j)), big.NewInt(0xffffffff)).Uint64()
		kd.lines = append(kd.lines, fmt.Sprintf("%s %s, %s, 0x%08x;", op, kd.op(fmt.Sprintf("d%d", j)), kd.op(fmt.Sprintf("x%d", j)), limb))
	}
	sub(&kd, "d", "d", "y", w)
	// ADDW: s = x + y over 2n limbs; SUBW: d = x - y, for x >= y.
	addw := block{name: "ADDW", doc: "s out; x, y in", outs: names("s", w), ops: cat(names("s", w), names("x", w), names("y", w))}
	add(&addw, "s", "x", "y", w)
	subw := block{name: "SUBW", doc: "d out; x, y in", outs: names("d", w), ops: cat(names("d", w), names("x", w), names("y", w))}
	sub(&subw, "d", "x", "y", w)

	// RP: one further step of the reduction, V = V / 2^32 + m p with V / 2^32
	// = od + (ev >> 32) (ev0 = 0 after the previous step): AB with the
	// modulus (immediates) for a and m for b. The caller takes m = (od0 +
	// ev1) INV, the limb this step clears.
	rp := block{name: "RP", doc: "ev, od in/out; m in; p immediates", inout: []string{"ev", "od"}, ops: cat(names("ev", n), names("od", n), []string{"m"}, names("p", n))}
	rp.ins("add.cc.u32", "od0", "od0", "ev1")
	rp.mulAdd("ev", func(i int) string { return at("ev", i+2, n) }, "m", 1, "p", n, true, false)
	rp.mulAdd("od", self12("od"), "m", 0, "p", n, false, true)
	rp.ins("addc.u32", fmt.Sprintf("ev%d", n-1), fmt.Sprintf("ev%d", n-1), "0")

	// RFIN: t = od + (ev >> 32) + h, u = t - p, mask = (t < p): the reduced
	// low half plus the high half, below 2p.
	rfin := block{name: "RFIN", doc: "t, u, mask out; ev, od, h in; p immediates", ops: cat(names("t", n), names("u", n), []string{"mask"}, names("ev", n), names("od", n), names("h", n), names("p", n))}
	rfin.ins("add.cc.u32", "t0", "od0", "ev1")
	for k := 1; k < n-1; k++ {
		rfin.ins("addc.cc.u32", fmt.Sprintf("t%d", k), fmt.Sprintf("od%d", k), fmt.Sprintf("ev%d", k+1))
	}
	rfin.ins("addc.u32", fmt.Sprintf("t%d", n-1), fmt.Sprintf("od%d", n-1), "0")
	add(&rfin, "t", "t", "h", n)
	rfin.ins("sub.cc.u32", "u0", "t0", "p0")
	for k := 1; k < n; k++ {
		rfin.ins("subc.cc.u32", fmt.Sprintf("u%d", k), fmt.Sprintf("t%d", k), fmt.Sprintf("p%d", k))
	}
	rfin.ins("subc.u32", "mask", "0", "0")
	return []block{hi, addn, kd, addw, subw, rp, rfin}
}

func self12(acc string) func(int) string {
	return func(i int) string { return fmt.Sprintf("%s%d", acc, i) }
}

// sqRow is row i of the squaring: as AB, the odd chain (the new odd
// accumulator: ev shifted down two limbs plus the odd-limb products) and then
// the even chain (od, plus ev1 at limb 0, plus the even-limb products), with
// the products whose multiplicand limb is zero left out: the odd chain adds
// the shifted limbs alone there, the even chain starts at the first product.
func sqRow(n, i int) block {
	b := block{name: fmt.Sprintf("SQ%d", i), doc: fmt.Sprintf("row %d of the squaring: ev, od in/out; D, b, e in", i), inout: []string{"ev", "od"}, ops: cat(names("ev", n), names("od", n), names("D", n), []string{"b", "e"})}
	mc := func(j int) string { // the multiplicand at accumulator limb j >= i
		switch {
		case j == i:
			return "b"
		case j == i+1:
			return "e"
		}
		return fmt.Sprintf("D%d", j)
	}
	b.ins("add.cc.u32", "od0", "od0", "ev1")
	for k := 0; 2*k < n; k++ {
		j := 2*k + 1
		lo, hi := fmt.Sprintf("ev%d", 2*k), fmt.Sprintf("ev%d", 2*k+1)
		last := 2*k+2 >= n
		if j < i {
			b.ins("addc.cc.u32", lo, at("ev", 2*k+2, n), "0")
			b.ins("addc.cc.u32", hi, at("ev", 2*k+3, n), "0")
			continue
		}
		b.ins("madc.lo.cc.u32", lo, mc(j), "b", at("ev", 2*k+2, n))
		op := "madc.hi.cc.u32"
		if last {
			op = "madc.hi.u32"
		}
		b.ins(op, hi, mc(j), "b", at("ev", 2*k+3, n))
	}
	started := false
	for k := 0; 2*k < n; k++ {
		j := 2 * k
		if j < i {
			continue
		}
		op := "madc.lo.cc.u32"
		if !started {
			op = "mad.lo.cc.u32"
			started = true
		}
		b.ins(op, fmt.Sprintf("od%d", 2*k), mc(j), "b", fmt.Sprintf("od%d", 2*k))
		b.ins("madc.hi.cc.u32", fmt.Sprintf("od%d", 2*k+1), mc(j), "b", fmt.Sprintf("od%d", 2*k+1))
	}
	if started { // the even chain's carry, into the top of the odd accumulator
		b.ins("addc.u32", fmt.Sprintf("ev%d", n-1), fmt.Sprintf("ev%d", n-1), "0")
	}
	return b
}

func main() {
	w := os.Stdout
	fmt.Fprintln(w, "// Generated by cuda/src/ff/montgen.go; do not edit.")
	fmt.Fprintln(w, "// The carry chains of mont_eo.cuh, one string per chain, operands %-numbered")
	fmt.Fprintln(w, "// in the order listed with each (ev0 = the first limb of the even accumulator).")
	fmt.Fprintln(w, "#pragma once")
	for _, n := range []int{8, 12} {
		for _, b := range blocks(n) {
			fmt.Fprintf(w, "\n// %s: %s\n//   %s\n", b.name, b.doc, strings.Join(b.ops, " "))
			fmt.Fprintf(w, "#define CUZK_EO%d_%s \\\n", n, b.name)
			for i, l := range b.lines {
				end := " \\"
				if i == len(b.lines)-1 {
					end = ""
				}
				fmt.Fprintf(w, "    \"%s\\n\\t\"%s\n", l, end)
			}
			fmt.Fprintf(w, "#define CUZK_EO%d_%s_OPERANDS %s\n", n, b.name, b.operands())
			fmt.Fprintf(w, "#define CUZK_EO%d_%s_POINTERS %s\n", n, b.name, b.pointers())
		}
		if n == 12 {
			fmt.Fprintf(w, "\n// The rows of the squaring, for a switch: X(i) for SQi.\n#define CUZK_EO12_SQ_ROWS(X)")
			for i := 1; i < n; i++ {
				fmt.Fprintf(w, " X(%d)", i)
			}
			fmt.Fprintln(w)
		}
	}
}
