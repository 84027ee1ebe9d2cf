package circuits

import (
	"math/bits"

	"github.com/consensys/gnark/frontend"
)

// word is a 32-bit word in a circuit, bits least significant first.
type word = [32]frontend.Variable

// digest is a SHA-256 state or output: eight words.
type digest = [8]word

// shaIV is SHA-256's initial state.
var shaIV = [8]uint32{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}

func rotr(x word, n int) word {
	var out word
	for i := range out {
		out[i] = x[(i+n)%32]
	}
	return out
}

// shr shifts in constant zeros, which cost nothing in the XORs they enter.
func shr(x word, n int) word {
	var out word
	for i := range out {
		if i+n < 32 {
			out[i] = x[i+n]
		} else {
			out[i] = 0
		}
	}
	return out
}

// constWord is a word of constant bits: gnark folds the operations it takes
// part in, as bellman's SHA-256 gadget does with its constant words.
func constWord(v uint32) word {
	var out word
	for i := range out {
		out[i] = (v >> i) & 1
	}
	return out
}

// shaGadget computes SHA-256 bit by bit, as bellman's gadget does: XOR, Ch
// and Maj on bits (one product each), 32-bit additions by packing the words
// and decomposing the sum into bits. Nearly every wire it makes is a bit.
type shaGadget struct{ api frontend.API }

// xor is x + y − 2xy.
func (g shaGadget) xor(x, y frontend.Variable) frontend.Variable {
	return g.api.Sub(g.api.Add(x, y), g.api.Mul(2, g.api.Mul(x, y)))
}

func (g shaGadget) xorWords(ws ...word) word {
	out := ws[0]
	for _, w := range ws[1:] {
		for i := range out {
			out[i] = g.xor(out[i], w[i])
		}
	}
	return out
}

func (g shaGadget) pack(w word) frontend.Variable { return g.api.FromBinary(w[:]...) }

// add returns the sum of the words and constant mod 2³², in bits.
func (g shaGadget) add(constant uint32, ws ...word) word {
	sum := frontend.Variable(constant)
	for _, w := range ws {
		sum = g.api.Add(sum, g.pack(w))
	}
	b := g.api.ToBinary(sum, 32+bits.Len(uint(len(ws))))
	var out word
	copy(out[:], b[:32])
	return out
}

// round is one SHA-256 round with round constant k; the message words are
// summed into T1 (one word in SHA-256 proper).
func (g shaGadget) round(s [8]word, k uint32, msg ...word) [8]word {
	api := g.api
	a, b, c, d, e, f, gg, h := s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
	s1 := g.xorWords(rotr(e, 6), rotr(e, 11), rotr(e, 25))
	var ch, maj word
	for i := range ch {
		// Ch(e, f, g) = ef + g − eg; Maj(a, b, c) = ab + c(a ⊕ b). Every
		// product is a bit.
		ch[i] = api.Sub(api.Add(api.Mul(e[i], f[i]), gg[i]), api.Mul(e[i], gg[i]))
		ab := api.Mul(a[i], b[i])
		maj[i] = api.Add(ab, api.Mul(c[i], api.Sub(api.Add(a[i], b[i]), api.Mul(2, ab))))
	}
	t1 := g.add(k, append([]word{h, s1, ch}, msg...)...)
	s0 := g.xorWords(rotr(a, 2), rotr(a, 13), rotr(a, 22))
	t2 := g.add(0, s0, maj)
	return [8]word{g.add(0, t1, t2), a, b, c, g.add(0, d, t1), e, f, gg}
}

// compress is SHA-256's compression function cut to rounds rounds (64 is
// SHA-256's): the message schedule, the rounds and the feed-forward. Below
// 16 rounds there is no schedule, and round r sums the block's words r,
// r+rounds, r+2·rounds, … so that every bit of the block still enters.
func (g shaGadget) compress(h [8]word, block [16]word, rounds int) [8]word {
	w := make([]word, max(16, rounds))
	copy(w, block[:])
	for t := 16; t < rounds; t++ {
		s0 := g.xorWords(rotr(w[t-15], 7), rotr(w[t-15], 18), shr(w[t-15], 3))
		s1 := g.xorWords(rotr(w[t-2], 17), rotr(w[t-2], 19), shr(w[t-2], 10))
		w[t] = g.add(0, s1, w[t-7], s0, w[t-16])
	}
	s := h
	for r := 0; r < rounds; r++ {
		msg := []word{w[r]}
		if rounds < 16 {
			msg = msg[:0]
			for j := r; j < 16; j += rounds {
				msg = append(msg, block[j])
			}
		}
		s = g.round(s, shaK[r%64], msg...)
	}
	for i := range s {
		s[i] = g.add(0, h[i], s[i])
	}
	return s
}

// shaRound is one round out of the circuit: the state after it.
func shaRound(s [8]uint32, k, w uint32) [8]uint32 {
	a, b, c, d, e, f, g, h := s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
	s1 := bits.RotateLeft32(e, -6) ^ bits.RotateLeft32(e, -11) ^ bits.RotateLeft32(e, -25)
	ch := (e & f) ^ (^e & g)
	t1 := h + s1 + ch + k + w
	s0 := bits.RotateLeft32(a, -2) ^ bits.RotateLeft32(a, -13) ^ bits.RotateLeft32(a, -22)
	maj := (a & b) ^ (a & c) ^ (b & c)
	t2 := s0 + maj
	return [8]uint32{t1 + t2, a, b, c, d + t1, e, f, g}
}

// shaCompress is compress out of the circuit.
func shaCompress(h [8]uint32, block *[16]uint32, rounds int) [8]uint32 {
	var w [64]uint32
	copy(w[:16], block[:])
	for t := 16; t < rounds; t++ {
		s0 := bits.RotateLeft32(w[t-15], -7) ^ bits.RotateLeft32(w[t-15], -18) ^ (w[t-15] >> 3)
		s1 := bits.RotateLeft32(w[t-2], -17) ^ bits.RotateLeft32(w[t-2], -19) ^ (w[t-2] >> 10)
		w[t] = s1 + w[t-7] + s0 + w[t-16]
	}
	s := h
	for r := 0; r < rounds; r++ {
		m := w[r]
		if rounds < 16 {
			m = 0
			for j := r; j < 16; j += rounds {
				m += block[j]
			}
		}
		s = shaRound(s, shaK[r%64], m)
	}
	for i := range s {
		s[i] += h[i]
	}
	return s
}
