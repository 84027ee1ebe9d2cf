package circuits

import (
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/std/hash/sha2"
	"github.com/consensys/gnark/std/math/uints"
)

// SHA2 hashes private messages with gnark's std/hash/sha2 into their public
// digests: SHA-256 proper (padding, schedule, feed-forward) on bytes, each
// bitwise operation a lookup in a 2^16-entry table of gnark's std/math/uints
// and each addition a range check, so that the system carries gnark's BSB22
// commitment (one, to every lookup query and multiplicity).
//
// The layout is messages messages of blocks compressions each; a message is
// 64·blocks − 9 bytes, the most that SHA-256 pads into that many blocks, so
// every byte of every block but the padding's is a witness byte. Each digest
// is public as two field elements, its first and last 16 bytes big endian.
// Layout takes one block per message and as many messages as fit: the
// messages are independent, so a solver works on all of them at once, where
// one long message would be one chain of rounds from the first to the last.
type SHA2 struct{}

// Name implements Circuit.
func (SHA2) Name() string { return "sha2" }

type sha2Circuit struct {
	Messages [][]uints.U8
	Digests  [][2]frontend.Variable `gnark:",public"`
}

func (c *sha2Circuit) Define(api frontend.API) error {
	if len(c.Digests) != len(c.Messages) {
		return fmt.Errorf("sha2: %d messages, %d digests", len(c.Messages), len(c.Digests))
	}
	u, err := uints.NewBytes(api)
	if err != nil {
		return err
	}
	for j, msg := range c.Messages {
		h, err := sha2.New(api)
		if err != nil {
			return err
		}
		h.Write(msg)
		sum := h.Sum()
		if len(sum) != sha256.Size {
			return fmt.Errorf("sha2 gave %d bytes", len(sum))
		}
		for half := range c.Digests[j] {
			packed := frontend.Variable(0)
			for _, b := range sum[16*half : 16*half+16] {
				packed = api.Add(api.Mul(packed, 256), u.Value(b))
			}
			api.AssertIsEqual(packed, c.Digests[j][half])
		}
	}
	return nil
}

// sha2MessageLen is the length of the message of n blocks: SHA-256 appends
// at least 9 bytes (0x80 and the 8-byte length).
func sha2MessageLen(blocks int) int { return 64*blocks - 9 }

// gnark's names of the hints whose inputs sha2Units reads.
const (
	sha2CountHint     = "github.com/consensys/gnark/std/internal/logderivarg.countHint"
	sha2DecomposeHint = "github.com/consensys/gnark/std/rangecheck.DecomposeHint"
)

// sha2Units is what a sha2 system's count is made of. Each of gnark's
// log-derivative arguments (the XOR and AND tables, the range checks) adds
// one constraint per query and sums the queries' inverses one term at a
// time; gnark's compiler turns the sum into a new wire, at one constraint,
// each time it reaches 300 terms (CompressThreshold), so an argument of q
// queries costs ⌊(q−1)/299⌋ more. The rest of the count, and the queries,
// grow by a fixed amount per message (its first block, which starts from
// SHA-256's constant state, and its digest) and per later block: measured
// on one message of one and two blocks and two messages of one. The range
// checks' limbs stay 8 bits wide at every size: gnark picks the width that
// minimises its estimate of their cost, and per block (1,312 checks of 8
// bits, 4,640 of 2 to 7, 312 of 34 and 35) 8 bits is the cheapest, the
// table of 256 entries a fixed cost; sha2Cost refuses limbs of another width.
type sha2Units struct {
	fixed, message, block int      // constraints but the sums' compressions
	queries               [][3]int // per argument: queries of one message of one block, per message more, per later block more
}

// sha2LimbBits is the width of the range checks' limbs that sha2Units
// assumes.
const sha2LimbBits = 8

func (u sha2Units) count(messages, blocks int) int {
	later := messages * (blocks - 1)
	n := u.fixed + u.message*messages + u.block*later
	for _, q := range u.queries {
		n += sha2Compressions(q[0] + q[1]*(messages-1) + q[2]*later)
	}
	return n
}

func sha2Compressions(queries int) int { return max(0, queries-1) / mimcCompressEvery }

// sha2Arguments returns the queries of each log-derivative argument of the
// system, in the order gnark built them, and the range checks' limb width:
// read from the inputs of gnark's hints (countHint gets the table's length,
// the row width, the table and the queries; DecomposeHint the bits checked,
// the limb width and the value).
func sha2Arguments(r *cs.R1CS) (queries []int, base int, err error) {
	constant := func(e constraint.LinearExpression) (int, bool) {
		if len(e) != 1 || e[0].VID != ^uint32(0) {
			return 0, false
		}
		c := r.Coefficients[e[0].CID]
		return int(c.Uint64()), c.IsUint64()
	}
	var h constraint.HintMapping
	for _, pi := range r.Instructions {
		b, ok := r.Blueprints[pi.BlueprintID].(constraint.BlueprintHint)
		if !ok {
			continue
		}
		b.DecompressHint(&h, pi.Unpack(&r.System))
		switch r.MHintsDependencies[h.HintID] {
		case sha2CountHint:
			n, ok := constant(h.Inputs[0])
			if !ok || len(h.Inputs) < 2+n {
				return nil, 0, fmt.Errorf("sha2: a lookup argument's table length is not a constant")
			}
			queries = append(queries, len(h.Inputs)-2-n)
		case sha2DecomposeHint:
			w, ok := constant(h.Inputs[1])
			if !ok || (base != 0 && w != base) {
				return nil, 0, fmt.Errorf("sha2: range checks of limb widths %d and %d", base, w)
			}
			base = w
		}
	}
	return queries, base, nil
}

var sha2Cost = sync.OnceValues(func() (sha2Units, error) {
	shapes := []Layout{{"messages": 1, "blocks": 1}, {"messages": 2, "blocks": 1}, {"messages": 1, "blocks": 2}}
	var counts, comps [3]int
	var queries [3][]int
	for i, l := range shapes {
		ccs, err := Compile(SHA2{}, l)
		if err != nil {
			return sha2Units{}, err
		}
		counts[i] = ccs.GetNbConstraints()
		var base int
		if queries[i], base, err = sha2Arguments(ccs.(*cs.R1CS)); err != nil {
			return sha2Units{}, err
		}
		if len(queries[i]) != len(queries[0]) || base != sha2LimbBits {
			return sha2Units{}, fmt.Errorf("sha2 %s: arguments %v (limbs of %d bits), %s has %v; the count assumes limbs of %d bits", l, queries[i], base, shapes[0], queries[0], sha2LimbBits)
		}
		for _, q := range queries[i] {
			comps[i] += sha2Compressions(q)
		}
	}
	u := sha2Units{}
	for j := range queries[0] {
		u.queries = append(u.queries, [3]int{queries[0][j], queries[1][j] - queries[0][j], queries[2][j] - queries[0][j]})
	}
	rest := func(i int) int { return counts[i] - comps[i] }
	u.message = rest(1) - rest(0)
	u.block = rest(2) - rest(0)
	u.fixed = rest(0) - u.message
	return u, nil
})

func sha2Shape(l Layout) (messages, blocks int, err error) {
	messages, blocks = l["messages"], l["blocks"]
	if len(l) != 2 || messages < 1 || blocks < 1 {
		return 0, 0, fmt.Errorf("sha2 layout %s: want messages and blocks, each at least 1", l)
	}
	return messages, blocks, nil
}

// Layout implements Circuit: as many messages of one block as fit in the
// target, at least one.
func (SHA2) Layout(target int) (Layout, error) {
	if err := checkTarget(target); err != nil {
		return nil, err
	}
	u, err := sha2Cost()
	if err != nil {
		return nil, err
	}
	m := max(1, (target-u.fixed)/u.message)
	for m > 1 && u.count(m, 1) > target {
		m--
	}
	for u.count(m+1, 1) <= target {
		m++
	}
	return Layout{"messages": m, "blocks": 1}, nil
}

// Constraints implements Circuit.
func (SHA2) Constraints(l Layout) (int, error) {
	m, b, err := sha2Shape(l)
	if err != nil {
		return 0, err
	}
	u, err := sha2Cost()
	if err != nil {
		return 0, err
	}
	return u.count(m, b), nil
}

// Shape implements Circuit.
func (SHA2) Shape(l Layout) (frontend.Circuit, error) {
	m, b, err := sha2Shape(l)
	if err != nil {
		return nil, err
	}
	c := &sha2Circuit{Messages: make([][]uints.U8, m), Digests: make([][2]frontend.Variable, m)}
	for j := range c.Messages {
		c.Messages[j] = make([]uints.U8, sha2MessageLen(b))
	}
	return c, nil
}

// sha2Message is message j of partition p: SHA-256 of the seed, a label,
// the partition, the message and a counter, 32 bytes at a time.
func sha2Message(seed []byte, partition, j, n int) []byte {
	msg := make([]byte, 0, n+sha256.Size)
	for i := 0; len(msg) < n; i++ {
		d := seedDigest(seed, "sha2/message", partition, j, i)
		msg = append(msg, d[:]...)
	}
	return msg[:n]
}

// sha2Public is a digest as its two public field elements.
func sha2Public(d [sha256.Size]byte) [2]frontend.Variable {
	var hi, lo fr.Element
	hi.SetBytes(d[:16])
	lo.SetBytes(d[16:])
	return [2]frontend.Variable{hi, lo}
}

// Assign implements Circuit.
func (SHA2) Assign(l Layout, seed []byte, partition int) (frontend.Circuit, error) {
	m, b, err := sha2Shape(l)
	if err != nil {
		return nil, err
	}
	c := &sha2Circuit{Messages: make([][]uints.U8, m), Digests: make([][2]frontend.Variable, m)}
	for j := range c.Messages {
		msg := sha2Message(seed, partition, j, sha2MessageLen(b))
		c.Messages[j] = uints.NewU8Array(msg)
		c.Digests[j] = sha2Public(sha256.Sum256(msg))
	}
	return c, nil
}
