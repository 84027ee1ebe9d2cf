package circuits

import (
	"fmt"

	"github.com/consensys/gnark/frontend"
)

// PoRepSHA is shaped like one partition of Filecoin's PoRep C2 where most of
// its constraints are: SHA-256 computed bit by bit. For each of K challenges
// it proves that the challenged node's label is the hash of the replica id,
// the node index and the node's parent labels, and that the label sits at
// the challenged index of a binary Merkle tree of depth D with the public root.
//
//   - The labeling step is a chain of SHA-256 compressions: one over the
//     replica id, the layer (1) and the node index laid out as in Filecoin's
//     SDR (32 bytes of id, then a 4-byte layer and an 8-byte node index, big
//     endian), then one per block of two parent labels (P blocks; Filecoin's
//     SDR hashes 37 parents, about 19 blocks).
//   - The Merkle path spends one compression per level, over left ‖ right,
//     both taken by a bit of the challenge index from the running node and
//     the private sibling. Filecoin's comm_d tree hashes the same 64 bytes
//     with SHA-256 proper, whose padding block doubles that cost without
//     changing the work's shape: one compression keeps the shape and halves
//     the price.
//   - Labels, nodes and the root are digests truncated to 254 bits and read
//     as little-endian field elements, as Filecoin's are; the replica id,
//     the parents and the siblings enter as field elements and are
//     decomposed into bits in the circuit.
//   - F fill rounds, bit-level SHA-256 rounds over the replica id with
//     private message words, take up what is left of the size target below
//     one more parent block for every challenge: they are work of the same
//     shape, not part of the statement.
//   - A linked layout (layout key links; Layout links every layout) gives
//     each challenge's chain as private links: the labeling state after
//     every compression but the last (eight words), then the label and
//     every path node below the root. Each link is checked equal to what
//     the compression before it computed, and the next compression reads
//     the link's bits, not that compression's. The statement is the same;
//     what changes is the witness's critical path: unlinked, a challenge's
//     compressions can only be solved one after another (at 2^20, two
//     chains of half the partition each), linked, every compression can be
//     solved at once. Filecoin's partition has the same property from its
//     width: about 18 challenges of 11 layers' labelings and several
//     paths each, hundreds of independent chains.
//
// Public inputs: the replica id, the root and the K challenge indices. The
// challenges of a partition are derived from the job seed and the partition
// index, so the partitions of a job are different proofs of one circuit.
// Nearly every wire is a bit (see docs/circuits.md for the measured share).
//
// Small targets cut the compressions to R rounds (layout key rounds; 64 is
// SHA-256's), so that tests keep the shape at a few thousand constraints.
type PoRepSHA struct{}

// Name implements Circuit.
func (PoRepSHA) Name() string { return "porep-sha" }

type porepSHACircuit struct {
	ReplicaID  frontend.Variable     `gnark:",public"`
	Root       frontend.Variable     `gnark:",public"`
	Challenges []frontend.Variable   `gnark:",public"`
	Parents    [][]frontend.Variable // per challenge, 2P parent labels
	Paths      [][]frontend.Variable // per challenge, D siblings from the leaf up
	Links      [][]frontend.Variable // per challenge of a linked layout, its chain's links (linkCount)
	Fill       []frontend.Variable   // message words of the fill rounds
	shape      porepSHAShape
}

// porepSHAShape is a layout of PoRepSHA, checked.
type porepSHAShape struct {
	challenges, depth, parents, rounds, fill int
	links                                    bool
}

// linkCount is the number of links a challenge has: eight words of the
// labeling state before each parent block, then the label and the path's
// nodes below the root, one before each level.
func (sh porepSHAShape) linkCount() int {
	if !sh.links {
		return 0
	}
	return 8*sh.parents + sh.depth
}

// porepSHALayer is the layer the labels are said to be on: SDR's first.
const porepSHALayer = 1

// porepSHAMaxDepth bounds the tree the prover builds for a job (2^depth
// labels, each 1+P compressions out of the circuit).
const porepSHAMaxDepth = 20

// truncated reports whether bit i of word w is one of the two bits a
// digest loses to fit the field: the top bits of its last byte.
func truncated(w, i int) bool { return w == 7 && (i == 6 || i == 7) }

// digestBit is the position, in the little-endian integer a digest is read
// as, of bit i of word w (words are big endian in SHA-256's byte order).
func digestBit(w, i int) int {
	byteIdx := 4*w + 3 - i/8
	return 8*byteIdx + i%8
}

// digestOf decomposes a field element below 2^254 into a truncated digest.
func (g shaGadget) digestOf(x frontend.Variable) digest {
	b := g.api.ToBinary(x, 254)
	var d digest
	for w := range d {
		for i := range d[w] {
			if truncated(w, i) {
				d[w][i] = 0
			} else {
				d[w][i] = b[digestBit(w, i)]
			}
		}
	}
	return d
}

// truncate drops the two bits of a digest that do not fit the field.
func truncate(d digest) digest {
	d[7][6], d[7][7] = 0, 0
	return d
}

// packDigest is the field element a truncated digest is read as.
func (g shaGadget) packDigest(d digest) frontend.Variable {
	bitsLE := make([]frontend.Variable, 254)
	for w := range d {
		for i := range d[w] {
			if !truncated(w, i) {
				bitsLE[digestBit(w, i)] = d[w][i]
			}
		}
	}
	return g.api.FromBinary(bitsLE...)
}

func constDigest(v [8]uint32) digest {
	var d digest
	for i := range d {
		d[i] = constWord(v[i])
	}
	return d
}

func (c *porepSHACircuit) Define(api frontend.API) error {
	g := shaGadget{api}
	sh := c.shape
	iv := constDigest(shaIV)
	id := g.digestOf(c.ReplicaID)
	for k, idx := range c.Challenges {
		// All 32 bits of the index enter the label; its low D bits pick
		// the path, so the cost of a challenge is linear in D.
		ib := api.ToBinary(idx, 32)
		var first [16]word
		copy(first[:8], id[:])
		first[8] = constWord(porepSHALayer)
		first[9] = constWord(0)
		copy(first[10][:], ib)
		for j := 11; j < 16; j++ {
			first[j] = constWord(0)
		}
		links := c.Links[k]
		st := g.compress(iv, first, sh.rounds)
		for p := 0; p < sh.parents; p++ {
			if sh.links {
				st = g.linkState(st, links[8*p:8*p+8])
			}
			var blk [16]word
			a, b := g.digestOf(c.Parents[k][2*p]), g.digestOf(c.Parents[k][2*p+1])
			copy(blk[:8], a[:])
			copy(blk[8:], b[:])
			st = g.compress(st, blk, sh.rounds)
		}
		cur := truncate(st)
		for d := 0; d < sh.depth; d++ {
			if sh.links {
				cur = g.linkDigest(cur, links[8*sh.parents+d])
			}
			sib := g.digestOf(c.Paths[k][d])
			var blk [16]word
			for w := range 8 {
				for i := range 32 {
					if truncated(w, i) {
						blk[w][i], blk[8+w][i] = 0, 0
						continue
					}
					// Bit d set: the running node is the right child.
					left := api.Select(ib[d], sib[w][i], cur[w][i])
					blk[w][i] = left
					blk[8+w][i] = api.Sub(api.Add(cur[w][i], sib[w][i]), left)
				}
			}
			cur = truncate(g.compress(iv, blk, sh.rounds))
		}
		api.AssertIsEqual(g.packDigest(cur), c.Root)
	}
	// The fill rounds start from the replica id, whose words are all
	// variables, so that every fill round costs the same.
	s := id
	for f, w := range c.Fill {
		var mw word
		copy(mw[:], api.ToBinary(w, 32))
		s = g.round(s, shaK[f%64], mw)
	}
	return nil
}

// linkState checks that a private link's eight words are the state st and
// returns the link's bits in its place.
func (g shaGadget) linkState(st digest, link []frontend.Variable) digest {
	var out digest
	for w := range st {
		g.api.AssertIsEqual(g.pack(st[w]), link[w])
		copy(out[w][:], g.api.ToBinary(link[w], 32))
	}
	return out
}

// linkDigest checks that a private link is the truncated digest d and
// returns the link's bits in its place.
func (g shaGadget) linkDigest(d digest, link frontend.Variable) digest {
	g.api.AssertIsEqual(g.packDigest(d), link)
	return g.digestOf(link)
}

func porepSHAShapeOf(l Layout) (porepSHAShape, error) {
	sh := porepSHAShape{challenges: l["challenges"], depth: l["depth"], parents: l["parents"], rounds: l["rounds"], fill: l["fill"], links: l["links"] == 1}
	switch {
	case l["links"] != 0 && l["links"] != 1:
		return sh, fmt.Errorf("porep-sha layout %s: links must be 0 or 1", l)
	case sh.challenges < 1:
		return sh, fmt.Errorf("porep-sha layout %s: challenges must be at least 1", l)
	case sh.depth < 1 || sh.depth > porepSHAMaxDepth:
		return sh, fmt.Errorf("porep-sha layout %s: depth must be in 1..%d", l, porepSHAMaxDepth)
	case sh.parents < 1:
		return sh, fmt.Errorf("porep-sha layout %s: parents (blocks of two parent labels) must be at least 1", l)
	case sh.rounds < 1 || sh.rounds > 64:
		return sh, fmt.Errorf("porep-sha layout %s: rounds must be in 1..64", l)
	case sh.rounds == 1 && sh.parents > 1:
		// Its count would not be linear in parents (see porepSHAUnits).
		return sh, fmt.Errorf("porep-sha layout %s: one round per compression takes one parent block", l)
	case sh.fill < 0:
		return sh, fmt.Errorf("porep-sha layout %s: fill must not be negative", l)
	}
	return sh, nil
}

func (sh porepSHAShape) layout() Layout {
	l := Layout{"challenges": sh.challenges, "depth": sh.depth, "parents": sh.parents, "rounds": sh.rounds, "fill": sh.fill}
	if sh.links {
		l["links"] = 1
	}
	return l
}

// Shape implements Circuit.
func (PoRepSHA) Shape(l Layout) (frontend.Circuit, error) {
	sh, err := porepSHAShapeOf(l)
	if err != nil {
		return nil, err
	}
	return porepSHAEmpty(sh), nil
}

func porepSHAEmpty(sh porepSHAShape) *porepSHACircuit {
	c := &porepSHACircuit{
		Challenges: make([]frontend.Variable, sh.challenges),
		Parents:    make([][]frontend.Variable, sh.challenges),
		Paths:      make([][]frontend.Variable, sh.challenges),
		Links:      make([][]frontend.Variable, sh.challenges),
		Fill:       make([]frontend.Variable, sh.fill),
		shape:      sh,
	}
	for k := range c.Parents {
		c.Parents[k] = make([]frontend.Variable, 2*sh.parents)
		c.Paths[k] = make([]frontend.Variable, sh.depth)
		c.Links[k] = make([]frontend.Variable, sh.linkCount())
	}
	return c
}

// Assign implements Circuit.
func (PoRepSHA) Assign(l Layout, seed []byte, partition int) (frontend.Circuit, error) {
	sh, err := porepSHAShapeOf(l)
	if err != nil {
		return nil, err
	}
	if partition < 0 {
		return nil, fmt.Errorf("porep-sha: partition %d is negative", partition)
	}
	r := porepSHAReplicaFor(seed, sh)
	c := porepSHAEmpty(sh)
	c.ReplicaID = digestFr(r.id)
	c.Root = digestFr(r.levels[sh.depth][0])
	for k := range sh.challenges {
		idx := porepChallenge(seed, sh.depth, sh.challenges, partition, k)
		c.Challenges[k] = idx
		parents := porepSHAParents(seed, sh.parents, idx)
		for i, p := range parents {
			c.Parents[k][i] = digestFr(p)
		}
		pos := idx
		for d := range sh.depth {
			c.Paths[k][d] = digestFr(r.levels[d][pos^1])
			pos >>= 1
		}
		if sh.links {
			var states [][8]uint32
			porepSHALabel(r.id, idx, parents, sh.rounds, &states)
			links := c.Links[k]
			for p, st := range states {
				for w, v := range st {
					links[8*p+w] = v
				}
			}
			for d := range sh.depth {
				links[8*sh.parents+d] = digestFr(r.levels[d][idx>>d])
			}
		}
	}
	rw := porepSHARandom(seed, "porep-sha/fill", partition)
	for f := range c.Fill {
		c.Fill[f] = uint32(rw.Uint64())
	}
	return c, nil
}
