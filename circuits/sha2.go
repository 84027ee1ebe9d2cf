package circuits

import (
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/std/hash/sha2"
	"github.com/consensys/gnark/std/math/uints"
)

// SHA2 hashes one private message with gnark's std/hash/sha2 into its public
// digest: SHA-256 proper (padding, schedule, feed-forward) on bytes, each
// bitwise operation a lookup in a 2^16-entry table of gnark's std/math/uints
// and each addition a range check, so that the system carries gnark's BSB22
// commitment (one, to every lookup query and multiplicity).
//
// The layout is the number of compressions, blocks; the message is
// 64·blocks − 9 bytes, the most that SHA-256 pads into that many blocks, so
// every byte of every block but the padding's is a witness byte.
type SHA2 struct{}

// Name implements Circuit.
func (SHA2) Name() string { return "sha2" }

type sha2Circuit struct {
	Message []uints.U8
	Digest  [sha256.Size]uints.U8 `gnark:",public"`
}

func (c *sha2Circuit) Define(api frontend.API) error {
	h, err := sha2.New(api)
	if err != nil {
		return err
	}
	u, err := uints.NewBytes(api)
	if err != nil {
		return err
	}
	h.Write(c.Message)
	sum := h.Sum()
	if len(sum) != len(c.Digest) {
		return fmt.Errorf("sha2 gave %d bytes", len(sum))
	}
	for i := range sum {
		u.AssertIsEqual(sum[i], c.Digest[i])
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
// queries costs ⌊(q−1)/299⌋ more. Queries grow by a fixed number per block,
// the rest of the count too: measured on one and two blocks. The range
// checks' limbs stay 8 bits wide at every size: gnark picks the width that
// minimises its estimate of their cost, and per block (1,312 checks of 8 bits,
// 4,640 of 2 to 7, 312 of 34 and 35) 8 bits is the cheapest, the table of
// 256 entries a fixed cost; sha2Cost refuses limbs of another width.
type sha2Units struct {
	fixed, block int      // constraints but the sums' compressions
	queries      [][2]int // per argument: queries at one block, per block more
}

// sha2LimbBits is the width of the range checks' limbs that sha2Units
// assumes.
const sha2LimbBits = 8

func (u sha2Units) count(blocks int) int {
	n := u.fixed + u.block*blocks
	for _, q := range u.queries {
		n += sha2Compressions(q[0] + q[1]*(blocks-1))
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
	var counts [2]int
	var queries [2][]int
	var base [2]int
	for i := range counts {
		ccs, err := Compile(SHA2{}, Layout{"blocks": i + 1})
		if err != nil {
			return sha2Units{}, err
		}
		counts[i] = ccs.GetNbConstraints()
		if queries[i], base[i], err = sha2Arguments(ccs.(*cs.R1CS)); err != nil {
			return sha2Units{}, err
		}
	}
	if len(queries[0]) != len(queries[1]) || base[0] != sha2LimbBits || base[1] != sha2LimbBits {
		return sha2Units{}, fmt.Errorf("sha2: one block has arguments %v (limbs of %d bits), two %v (%d bits); the count assumes limbs of %d", queries[0], base[0], queries[1], base[1], sha2LimbBits)
	}
	u := sha2Units{}
	var comp [2]int
	for j := range queries[0] {
		u.queries = append(u.queries, [2]int{queries[0][j], queries[1][j] - queries[0][j]})
		comp[0] += sha2Compressions(queries[0][j])
		comp[1] += sha2Compressions(queries[1][j])
	}
	u.block = (counts[1] - comp[1]) - (counts[0] - comp[0])
	u.fixed = counts[0] - comp[0] - u.block
	return u, nil
})

func sha2Blocks(l Layout) (int, error) {
	n, ok := l["blocks"]
	if !ok || n < 1 || len(l) != 1 {
		return 0, fmt.Errorf("sha2 layout %s: want blocks, at least 1", l)
	}
	return n, nil
}

// Layout implements Circuit: as many blocks as fit in the target, at least one.
func (SHA2) Layout(target int) (Layout, error) {
	if err := checkTarget(target); err != nil {
		return nil, err
	}
	u, err := sha2Cost()
	if err != nil {
		return nil, err
	}
	n := max(1, (target-u.fixed)/u.block)
	for n > 1 && u.count(n) > target {
		n--
	}
	for u.count(n+1) <= target {
		n++
	}
	return Layout{"blocks": n}, nil
}

// Constraints implements Circuit.
func (SHA2) Constraints(l Layout) (int, error) {
	n, err := sha2Blocks(l)
	if err != nil {
		return 0, err
	}
	u, err := sha2Cost()
	if err != nil {
		return 0, err
	}
	return u.count(n), nil
}

// Shape implements Circuit.
func (SHA2) Shape(l Layout) (frontend.Circuit, error) {
	n, err := sha2Blocks(l)
	if err != nil {
		return nil, err
	}
	return &sha2Circuit{Message: make([]uints.U8, sha2MessageLen(n))}, nil
}

// sha2Message is partition p's message: SHA-256 of the seed, a label, the
// partition and a counter, 32 bytes at a time.
func sha2Message(seed []byte, partition, n int) []byte {
	msg := make([]byte, 0, n+sha256.Size)
	for i := 0; len(msg) < n; i++ {
		d := seedDigest(seed, "sha2/message", partition, i)
		msg = append(msg, d[:]...)
	}
	return msg[:n]
}

// Assign implements Circuit.
func (SHA2) Assign(l Layout, seed []byte, partition int) (frontend.Circuit, error) {
	n, err := sha2Blocks(l)
	if err != nil {
		return nil, err
	}
	msg := sha2Message(seed, partition, sha2MessageLen(n))
	d := sha256.Sum256(msg)
	c := &sha2Circuit{Message: uints.NewU8Array(msg)}
	copy(c.Digest[:], uints.NewU8Array(d[:]))
	return c, nil
}
