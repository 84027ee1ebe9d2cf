package circuits

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
)

// shaRound is SHA-256's round: with the message schedule and the
// feed-forward around it, 64 of them give crypto/sha256's digest.
func TestSHARoundIsSHA256s(t *testing.T) {
	msg := []byte("cuzk: one block of SHA-256, computed round by round")
	var block [64]byte
	copy(block[:], msg)
	block[len(msg)] = 0x80
	binary.BigEndian.PutUint64(block[56:], uint64(len(msg))*8)
	var w [64]uint32
	for i := 0; i < 16; i++ {
		w[i] = binary.BigEndian.Uint32(block[4*i:])
	}
	for i := 16; i < 64; i++ {
		s0 := bits.RotateLeft32(w[i-15], -7) ^ bits.RotateLeft32(w[i-15], -18) ^ (w[i-15] >> 3)
		s1 := bits.RotateLeft32(w[i-2], -17) ^ bits.RotateLeft32(w[i-2], -19) ^ (w[i-2] >> 10)
		w[i] = w[i-16] + s0 + w[i-7] + s1
	}
	iv := [8]uint32{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}
	s := iv
	for r := 0; r < 64; r++ {
		s = shaRound(s, shaK[r], w[r])
	}
	var got [32]byte
	for j := range s {
		binary.BigEndian.PutUint32(got[4*j:], s[j]+iv[j])
	}
	if want := sha256.Sum256(msg); got != want {
		t.Fatalf("rounds give %x, sha256 %x", got, want)
	}
}

// Nearly every wire a round adds is a bit, as in PoRep C2's SHA-256 (the
// final MiMC hash is a fixed cost), and a wrong digest does not satisfy it.
func TestSHAWiresAreBits(t *testing.T) {
	c := SHARounds{}
	count := func(rounds int) (nbits, nwires int, ccs *cs.R1CS, a *shaCircuit) {
		l := Layout{"rounds": rounds}
		cc, err := Compile(c, l)
		if err != nil {
			t.Fatal(err)
		}
		asg, err := c.Assign(l, []byte("bits"), 0)
		if err != nil {
			t.Fatal(err)
		}
		w, err := frontend.NewWitness(asg, ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		res, err := cc.Solve(w)
		if err != nil {
			t.Fatal(err)
		}
		wires := res.(*cs.R1CSSolution).W
		for i := range wires {
			if wires[i].IsZero() || wires[i].IsOne() {
				nbits++
			}
		}
		return nbits, len(wires), cc.(*cs.R1CS), asg.(*shaCircuit)
	}
	b1, w1, _, _ := count(10)
	b2, w2, ccs, a := count(20)
	if frac := float64(b2-b1) / float64(w2-w1); frac < 0.9 {
		t.Errorf("10 rounds add %d wires, %d of them bits (%.1f %%): want nearly all", w2-w1, b2-b1, 100*frac)
	} else {
		t.Logf("a round adds %d wires, %.1f %% of them bits", (w2-w1)/10, 100*frac)
	}
	var d fr.Element
	d.SetUint64(7)
	a.Digest = d
	wb, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ccs.Solve(wb); err == nil {
		t.Fatal("a wrong digest satisfies the circuit")
	}
}
