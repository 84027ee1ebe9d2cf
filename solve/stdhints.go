package solve

import (
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// stdHint is one of gnark's std hints that the solver computes on the
// field elements' canonical limbs instead of through big.Int. They are
// small (a byte's XOR, a word split in two) and called hundreds of
// thousands of times in a circuit of bytes such as sha2, where the
// conversions to and from big.Int cost more than the hints. Each gives the
// outputs gnark's gives; inputs outside what the limb code handles (a
// value that is not a small integer where gnark's asks for one) take
// gnark's function, so that its errors are gnark's too.
type stdHint uint8

const (
	stdNone stdHint = iota
	// stdBits: output i is bit i of the input (api.ToBinary).
	stdBits
	// stdXor, stdAnd, stdOr: the bitwise operation of the two inputs
	// (std/math/uints).
	stdXor
	stdAnd
	stdOr
	// stdPartition: inputs s and x; outputs x >> s and x mod 2^s
	// (std/math/bitslice).
	stdPartition
	// stdDecompose: inputs the variable's and a limb's size in bits, and
	// x; output i is limb i of x (std/rangecheck, with commitments).
	stdDecompose
	// stdToBytes: inputs n and a 64-bit x; output i is byte i of x
	// (std/math/uints).
	stdToBytes
)

// stdHints are the gnark hints computed natively, by name, with the number
// of inputs each takes and of outputs (0: any).
var stdHints = map[string]struct {
	kind            stdHint
	inputs, outputs int
}{
	nBitsHint: {stdBits, 1, 0},
	"github.com/consensys/gnark/std/math/uints.xorHint":          {stdXor, 2, 1},
	"github.com/consensys/gnark/std/math/uints.andHint":          {stdAnd, 2, 1},
	"github.com/consensys/gnark/std/math/uints.orHint":           {stdOr, 2, 1},
	"github.com/consensys/gnark/std/math/bitslice.partitionHint": {stdPartition, 2, 2},
	"github.com/consensys/gnark/std/rangecheck.DecomposeHint":    {stdDecompose, 3, 0},
	"github.com/consensys/gnark/std/math/uints.toBytes":          {stdToBytes, 2, 0},
}

// stdHintOf is the native form of the hint named name with in inputs and
// out outputs, stdNone if there is none.
func stdHintOf(name string, in, out int) stdHint {
	h, ok := stdHints[name]
	if !ok || h.inputs != in || (h.outputs != 0 && h.outputs != out) {
		return stdNone
	}
	return h.kind
}

// limbs is a canonical value, least significant limb first.
type limbs = [4]uint64

// runStd computes h natively into w, and reports false (having written
// nothing) where gnark's function must run instead.
func (p *Program) runStd(h *hint, v *values) bool {
	var in [3]limbs
	for i, ts := range h.inputs {
		var x fr.Element
		p.eval(0, ts, v, &x)
		in[i] = x.Bits()
	}
	out := v.w[h.out0 : h.out0+h.n]
	switch h.std {
	case stdBits:
		// From the table, not by a branch on each bit: they are as good
		// as random.
		for i := range out {
			var bit uint64
			if i < 256 {
				bit = in[0][i/64] >> (i % 64) & 1
			}
			out[i] = bitValue[bit]
		}
	case stdXor, stdAnd, stdOr:
		var r limbs
		for j := range r {
			switch h.std {
			case stdXor:
				r[j] = in[0][j] ^ in[1][j]
			case stdAnd:
				r[j] = in[0][j] & in[1][j]
			default:
				r[j] = in[0][j] | in[1][j]
			}
		}
		setLimbs(&out[0], r)
	case stdPartition:
		s, ok := small(in[0])
		if !ok {
			return false
		}
		setLimbs(&out[0], shiftRight(in[1], s))
		setLimbs(&out[1], lowBits(in[1], s))
	case stdDecompose:
		varSize, ok1 := small(in[0])
		limb, ok2 := small(in[1])
		if !ok1 || !ok2 || limb == 0 || limb > 64 || varSize > 1<<20 || uint64(len(out)) != (varSize+limb-1)/limb {
			return false
		}
		x := in[2]
		for i := range out {
			out[i].SetUint64(x[0] & (^uint64(0) >> (64 - limb)))
			x = shiftRight(x, limb)
		}
	case stdToBytes:
		n, ok := small(in[0])
		x, fits := small(in[1])
		if !ok || !fits || n != uint64(len(out)) {
			return false
		}
		for i := range out {
			out[i].SetUint64(x & 0xff)
			x >>= 8
		}
	default:
		return false
	}
	return true
}

// small is v as a uint64, and whether it fits.
func small(v limbs) (uint64, bool) {
	return v[0], v[1]|v[2]|v[3] == 0
}

// setLimbs sets e to the value v, reduced modulo r as gnark's solver
// reduces a hint's big.Int output.
func setLimbs(e *fr.Element, v limbs) {
	if v[1]|v[2]|v[3] == 0 {
		e.SetUint64(v[0])
		return
	}
	var b [fr.Bytes]byte
	for j := range v {
		for k := range 8 {
			b[fr.Bytes-1-8*j-k] = byte(v[j] >> (8 * k))
		}
	}
	e.SetBytes(b[:])
}

// shiftRight is v >> s.
func shiftRight(v limbs, s uint64) limbs {
	if s >= 256 {
		return limbs{}
	}
	var r limbs
	words, bits := int(s/64), s%64
	for j := 0; j+words < 4; j++ {
		r[j] = v[j+words] >> bits
		if bits > 0 && j+words+1 < 4 {
			r[j] |= v[j+words+1] << (64 - bits)
		}
	}
	return r
}

// lowBits is v mod 2^s.
func lowBits(v limbs, s uint64) limbs {
	for j := range v {
		switch lo := uint64(64 * j); {
		case s <= lo:
			v[j] = 0
		case s < lo+64:
			v[j] &= ^uint64(0) >> (64 - (s - lo))
		}
	}
	return v
}
