package circuits

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/frontend"
	stdmimc "github.com/consensys/gnark/std/hash/mimc"
)

// SHARounds is shaped like the SHA-256 work that dominates Filecoin's PoRep
// C2: a chain of SHA-256 compression rounds computed bit by bit, as bellman's
// SHA-256 gadget does, so that nearly every wire is a bit (0 or 1). Each
// round takes a private 32-bit message word; the eight state words go
// through Σ₀, Σ₁, Ch, Maj and the four 32-bit additions of the SHA-256 round
// (the additions by packing the words and decomposing the sum into bits).
// The initial state and the message words derive from the job seed and the
// partition; the final state, packed into eight field elements and hashed
// with MiMC, is the public digest.
//
// It is not SHA-256 (no message schedule, no feed-forward, no padding): it is
// its constraint shape, for benchmarks of provers on bit-heavy witnesses.
type SHARounds struct{}

// Name implements Circuit.
func (SHARounds) Name() string { return "sha" }

type shaCircuit struct {
	State  [8][32]frontend.Variable // initial state, bits, least significant first
	Words  [][32]frontend.Variable  // one message word per round
	Digest frontend.Variable        `gnark:",public"`
	rounds int
}

// shaK are SHA-256's round constants; round r uses shaK[r % 64].
var shaK = [64]uint32{
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

func (c *shaCircuit) Define(api frontend.API) error {
	g := shaGadget{api}
	var s [8]word
	for j := range s {
		for i := range s[j] {
			api.AssertIsBoolean(c.State[j][i])
		}
		s[j] = c.State[j]
	}
	for r := 0; r < c.rounds; r++ {
		for i := range c.Words[r] {
			api.AssertIsBoolean(c.Words[r][i])
		}
		s = g.round(s, shaK[r%64], c.Words[r])
	}
	m, err := stdmimc.NewMiMC(api)
	if err != nil {
		return err
	}
	for j := range s {
		m.Write(g.pack(s[j]))
	}
	api.AssertIsEqual(m.Sum(), c.Digest)
	return nil
}

// shaCost is the constraints of one round, and of the rest (the final MiMC
// hash and the initial state's bits), from two compilations.
var shaCost = sync.OnceValues(func() ([2]int, error) {
	a, err := countConstraints(SHARounds{}, Layout{"rounds": 1})
	if err != nil {
		return [2]int{}, err
	}
	b, err := countConstraints(SHARounds{}, Layout{"rounds": 2})
	return [2]int{b - a, a - (b - a)}, err
})

// Layout implements Circuit: as many rounds as fit in the target beside the
// fixed part, so that a power-of-two target keeps its domain.
func (SHARounds) Layout(target int) (Layout, error) {
	if err := checkTarget(target); err != nil {
		return nil, err
	}
	cost, err := shaCost()
	if err != nil {
		return nil, err
	}
	return Layout{"rounds": max(1, (target-cost[1])/cost[0])}, nil
}

// Constraints implements Circuit.
func (SHARounds) Constraints(l Layout) (int, error) {
	n, err := shaRounds(l)
	if err != nil {
		return 0, err
	}
	cost, err := shaCost()
	if err != nil {
		return 0, err
	}
	return cost[1] + n*cost[0], nil
}

func shaRounds(l Layout) (int, error) {
	n, ok := l["rounds"]
	if !ok || n < 1 {
		return 0, fmt.Errorf("sha layout %s: rounds must be at least 1", l)
	}
	return n, nil
}

// Shape implements Circuit.
func (SHARounds) Shape(l Layout) (frontend.Circuit, error) {
	n, err := shaRounds(l)
	if err != nil {
		return nil, err
	}
	return &shaCircuit{Words: make([][32]frontend.Variable, n), rounds: n}, nil
}

// shaWord derives a 32-bit word from the seed.
func shaWord(seed []byte, label string, idx ...int) uint32 {
	e := derive(seed, label, idx...)
	b := e.Bytes()
	return binary.BigEndian.Uint32(b[len(b)-4:])
}

func bitsOf(x uint32) [32]frontend.Variable {
	var out [32]frontend.Variable
	for i := range out {
		out[i] = (x >> i) & 1
	}
	return out
}

// Assign implements Circuit.
func (SHARounds) Assign(l Layout, seed []byte, partition int) (frontend.Circuit, error) {
	n, err := shaRounds(l)
	if err != nil {
		return nil, err
	}
	c := &shaCircuit{Words: make([][32]frontend.Variable, n), rounds: n}
	var s [8]uint32
	for j := range s {
		s[j] = shaWord(seed, "sha/state", partition, j)
		c.State[j] = bitsOf(s[j])
	}
	for r := 0; r < n; r++ {
		w := shaWord(seed, "sha/word", partition, r)
		c.Words[r] = bitsOf(w)
		s = shaRound(s, shaK[r%64], w)
	}
	packed := make([]fr.Element, 8)
	for j := range s {
		packed[j].SetUint64(uint64(s[j]))
	}
	c.Digest = mimcHash(packed...)
	return c, nil
}
