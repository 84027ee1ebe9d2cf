package circuits

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
)

// At 64 rounds the compression is SHA-256's: with the padding block after
// it, it gives crypto/sha256's digest of a 64-byte message.
func TestPoRepSHACompressionIsSHA256s(t *testing.T) {
	var msg [64]byte
	copy(msg[:], "cuzk: two labels, left and right, hashed into their parent node.")
	var blk [16]uint32
	for i := range blk {
		blk[i] = binary.BigEndian.Uint32(msg[4*i:])
	}
	h := shaCompress(shaIV, &blk, 64)
	pad := [16]uint32{0x80000000, 15: 512}
	h = shaCompress(h, &pad, 64)
	var got [32]byte
	for i := range h {
		binary.BigEndian.PutUint32(got[4*i:], h[i])
	}
	if want := sha256.Sum256(msg[:]); got != want {
		t.Fatalf("compressions give %x, sha256 %x", got, want)
	}
}

// porepSHASolve compiles a layout and solves one partition with gnark's
// solver.
func porepSHASolve(t *testing.T, ccs constraint.ConstraintSystem, l Layout, seed string, partition int) (*cs.R1CSSolution, []byte, error) {
	t.Helper()
	a, err := PoRepSHA{}.Assign(l, []byte(seed), partition)
	if err != nil {
		t.Fatal(err)
	}
	w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	pub, err := w.Public()
	if err != nil {
		t.Fatal(err)
	}
	pb, err := pub.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	res, err := ccs.Solve(w)
	if err != nil {
		return nil, pb, err
	}
	return res.(*cs.R1CSSolution), pb, nil
}

// bitShare is the share of the wire values that are 0 or 1.
func bitShare(w fr.Vector) float64 {
	n := 0
	for i := range w {
		if w[i].IsZero() || w[i].IsOne() {
			n++
		}
	}
	return float64(n) / float64(len(w))
}

// At least 90 % of the full wire vector (public inputs, private inputs and
// internal wires) is 0 or 1, as in PoRep C2, at a size with a path of
// depth 2 and three parent blocks; and a wrong root does not satisfy it.
func TestPoRepSHAWiresAreBits(t *testing.T) {
	c := PoRepSHA{}
	l, err := c.Layout(1 << 14)
	if err != nil {
		t.Fatal(err)
	}
	ccs, err := Compile(c, l)
	if err != nil {
		t.Fatal(err)
	}
	sol, _, err := porepSHASolve(t, ccs, l, "bits", 0)
	if err != nil {
		t.Fatal(err)
	}
	share := bitShare(sol.W)
	if share < 0.90 {
		t.Errorf("%s: %.1f %% of %d wires are 0 or 1, want at least 90 %%", l, 100*share, len(sol.W))
	}
	t.Logf("%s: %d constraints, %d wires, %.2f %% of them 0 or 1", l, ccs.GetNbConstraints(), len(sol.W), 100*share)

	a, err := c.Assign(l, []byte("bits"), 0)
	if err != nil {
		t.Fatal(err)
	}
	var wrong fr.Element
	wrong.SetUint64(7)
	a.(*porepSHACircuit).Root = wrong
	w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ccs.Solve(w); err == nil {
		t.Fatal("a wrong root satisfies the circuit")
	}

	// A link is checked against the compression before it: a labeling
	// state's word one off, or the label replaced, is refused.
	parents := l["parents"]
	for _, i := range []int{0, 8*parents - 1, 8 * parents, 8*parents + l["depth"] - 1} {
		a, err := c.Assign(l, []byte("bits"), 0)
		if err != nil {
			t.Fatal(err)
		}
		link := a.(*porepSHACircuit).Links[0]
		switch v := link[i].(type) {
		case uint32:
			link[i] = v ^ 1
		case fr.Element:
			link[i] = wrong
		default:
			t.Fatalf("link %d is a %T", i, v)
		}
		w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ccs.Solve(w); err == nil {
			t.Errorf("link %d of %d changed satisfies the circuit", i, len(link))
		}
	}
}

// The partitions of one job are different proofs of one circuit: one
// compiled system, the same replica id and root, different challenges; and
// a partition's witness is the same every time it is made.
func TestPoRepSHAPartitionsAreDifferentProofs(t *testing.T) {
	c := PoRepSHA{}
	l, err := c.Layout(1 << 15)
	if err != nil {
		t.Fatal(err)
	}
	parts := 1 << l["depth"] / l["challenges"]
	ccs, err := Compile(c, l)
	if err != nil {
		t.Fatal(err)
	}
	var first *porepSHACircuit
	seen := map[string]int{}
	for p := range parts {
		if _, pub, err := porepSHASolve(t, ccs, l, "job", p); err != nil {
			t.Fatalf("partition %d: %v", p, err)
		} else if q, ok := seen[string(pub)]; ok {
			t.Fatalf("partitions %d and %d of %s have the same public inputs", q, p, l)
		} else {
			seen[string(pub)] = p
		}
		a, _ := c.Assign(l, []byte("job"), p)
		pc := a.(*porepSHACircuit)
		if first == nil {
			first = pc
		} else if pc.ReplicaID != first.ReplicaID || pc.Root != first.Root {
			t.Fatalf("partition %d opens another replica than partition 0", p)
		}
	}
	witnessOf := func(seed string, p int) []byte {
		a, err := c.Assign(l, []byte(seed), p)
		if err != nil {
			t.Fatal(err)
		}
		w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		b, err := w.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	once := witnessOf("job", 1)
	porepSHAReplicas.reset() // the tree is built again from the seed
	if !bytes.Equal(once, witnessOf("job", 1)) {
		t.Error("one partition's witness differs from one Assign to the next")
	}
	if bytes.Equal(witnessOf("job", 1), witnessOf("other job", 1)) {
		t.Error("two jobs have the same witness")
	}
	t.Logf("%s: %d partitions, all different", l, parts)
}

// The tree cache keeps the most recent jobs only, and the partitions of a
// job that ask at once share one build.
func TestReplicaCacheIsBounded(t *testing.T) {
	var c replicaCache
	builds := 0
	build := func() *porepSHAReplica { builds++; return &porepSHAReplica{} }
	for i := range 3 * porepSHAReplicaCache {
		c.get(fmt.Sprint(i), build)
	}
	if n := len(c.entries); n != porepSHAReplicaCache {
		t.Fatalf("%d trees kept, want %d", n, porepSHAReplicaCache)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[*porepSHAReplica]bool{}
	for range 8 {
		wg.Go(func() {
			r := c.get("job", build)
			mu.Lock()
			got[r] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(got) != 1 || builds != 3*porepSHAReplicaCache+1 {
		t.Fatalf("8 partitions asking at once got %d trees from %d builds", len(got), builds-3*porepSHAReplicaCache)
	}
	if _, ok := c.entries["0"]; ok {
		t.Fatal("the oldest tree is still kept")
	}
}

// The tree built on every core holds each node's label or hash, as one
// core computes them.
func TestPoRepSHAReplicaTree(t *testing.T) {
	sh := porepSHAShape{challenges: 1, depth: 9, parents: 2, rounds: 4}
	seed := []byte("tree")
	r := buildPoRepSHAReplica(seed, sh)
	if len(r.levels) != sh.depth+1 || len(r.levels[sh.depth]) != 1 {
		t.Fatalf("%d levels, the last of %d nodes", len(r.levels), len(r.levels[len(r.levels)-1]))
	}
	for i, l := range r.levels[0] {
		if want := porepSHALabel(r.id, i, porepSHAParents(seed, sh.parents, i), sh.rounds, nil); l != want {
			t.Fatalf("label %d: %x, want %x", i, l, want)
		}
	}
	for d := 1; d <= sh.depth; d++ {
		for i, n := range r.levels[d] {
			if want := porepSHANode(r.levels[d-1][2*i], r.levels[d-1][2*i+1], sh.rounds); n != want {
				t.Fatalf("level %d node %d: %x, want %x", d, i, n, want)
			}
		}
	}
}

// BenchmarkPoRepSHAReplica builds a job's tree (labels and nodes) at the
// layouts of 2^22 and 2^24, as the first partition of a job does.
//
//	go test -run - -bench PoRepSHAReplica ./circuits/
func BenchmarkPoRepSHAReplica(b *testing.B) {
	for _, lg := range []int{22, 24} {
		l, err := PoRepSHA{}.Layout(1 << lg)
		if err != nil {
			b.Fatal(err)
		}
		sh, err := porepSHAShapeOf(l)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("2^%d", lg), func(b *testing.B) {
			for b.Loop() {
				buildPoRepSHAReplica([]byte("bench"), sh)
			}
		})
	}
}
