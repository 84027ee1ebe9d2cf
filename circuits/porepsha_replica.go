package circuits

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/internal/par"
)

// The replica of PoRepSHA out of the circuit: its labels, its tree, the
// private values of its nodes, all drawn from the job seed.

// porepSHAReplica is the tree a job's partitions open: one per job seed and
// shape (depth, parents, rounds).
type porepSHAReplica struct {
	id     [8]uint32
	levels [][][8]uint32 // levels[0] are the labels, the last is the root
}

// digestFr reads a truncated digest as a little-endian field element.
func digestFr(d [8]uint32) fr.Element {
	var le [32]byte
	for w := range d {
		binary.BigEndian.PutUint32(le[4*w:], d[w])
	}
	var be [32]byte
	for i := range le {
		be[31-i] = le[i]
	}
	var e fr.Element
	e.SetBytes(be[:]) // below 2^254 < r: no reduction
	return e
}

func truncateWords(d [8]uint32) [8]uint32 {
	d[7] &^= 0xc0
	return d
}

// porepSHARandom returns a generator of a node's private values, keyed by
// the seed, a label and the node: a job's values are fixed by its seed.
func porepSHARandom(seed []byte, label string, idx ...int) *rand.ChaCha8 {
	return rand.NewChaCha8(seedDigest(seed, label, idx...))
}

func randomDigest(r *rand.ChaCha8) [8]uint32 {
	var d [8]uint32
	for i := range d {
		d[i] = uint32(r.Uint64())
	}
	return truncateWords(d)
}

// porepSHAParents are the 2P parent labels of a node.
func porepSHAParents(seed []byte, parents, node int) [][8]uint32 {
	r := porepSHARandom(seed, "porep-sha/parents", node)
	out := make([][8]uint32, 2*parents)
	for i := range out {
		out[i] = randomDigest(r)
	}
	return out
}

// porepSHALabel is a node's label: the labeling step out of the circuit.
// With states set it appends the state after each compression but the last
// (a linked layout's links).
func porepSHALabel(id [8]uint32, node int, parents [][8]uint32, rounds int, states *[][8]uint32) [8]uint32 {
	var blk [16]uint32
	copy(blk[:8], id[:])
	blk[8] = porepSHALayer
	blk[10] = uint32(node)
	st := shaCompress(shaIV, &blk, rounds)
	for p := 0; p+1 < len(parents); p += 2 {
		if states != nil {
			*states = append(*states, st)
		}
		copy(blk[:8], parents[p][:])
		copy(blk[8:], parents[p+1][:])
		st = shaCompress(st, &blk, rounds)
	}
	return truncateWords(st)
}

func porepSHANode(left, right [8]uint32, rounds int) [8]uint32 {
	var blk [16]uint32
	copy(blk[:8], left[:])
	copy(blk[8:], right[:])
	return truncateWords(shaCompress(shaIV, &blk, rounds))
}

// buildPoRepSHAReplica labels and hashes a job's tree on every core: every
// partition's witness waits for it, so it is the head of a job. One core
// took 5.6 ms at 2^22 (depth 10), 15.8 ms at 2^24 and 128 ms at 2^27.
func buildPoRepSHAReplica(seed []byte, sh porepSHAShape) *porepSHAReplica {
	r := &porepSHAReplica{id: randomDigest(porepSHARandom(seed, "porep-sha/replica-id"))}
	leaves := make([][8]uint32, 1<<sh.depth)
	par.Range(len(leaves), replicaChunk, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			leaves[i] = porepSHALabel(r.id, i, porepSHAParents(seed, sh.parents, i), sh.rounds, nil)
		}
	})
	r.levels = append(r.levels, leaves)
	for len(r.levels[len(r.levels)-1]) > 1 {
		prev := r.levels[len(r.levels)-1]
		next := make([][8]uint32, len(prev)/2)
		par.Range(len(next), replicaChunk, 1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				next[i] = porepSHANode(prev[2*i], prev[2*i+1], sh.rounds)
			}
		})
		r.levels = append(r.levels, next)
	}
	return r
}

// replicaChunk is the fewest nodes a core hashes at a time in
// buildPoRepSHAReplica: 64 compressions, tens of microseconds.
const replicaChunk = 64

// porepSHAReplicaCache is how many jobs' trees are kept: a tree of depth 16
// is 4 MiB, and a daemon proves job after job.
const porepSHAReplicaCache = 8

// replicaCache keeps the trees of the most recent jobs; the partitions of a
// job that ask at once wait for one build.
type replicaCache struct {
	mu      sync.Mutex
	entries map[string]*replicaEntry
	order   []string // oldest first
}

type replicaEntry struct {
	once sync.Once
	r    *porepSHAReplica
}

func (c *replicaCache) get(key string, build func() *porepSHAReplica) *porepSHAReplica {
	c.mu.Lock()
	e, ok := c.entries[key]
	if !ok {
		if c.entries == nil {
			c.entries = map[string]*replicaEntry{}
		}
		e = &replicaEntry{}
		c.entries[key] = e
		c.order = append(c.order, key)
		if len(c.order) > porepSHAReplicaCache {
			delete(c.entries, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.mu.Unlock()
	e.once.Do(func() { e.r = build() })
	return e.r
}

// reset forgets every tree.
func (c *replicaCache) reset() {
	c.mu.Lock()
	c.entries, c.order = nil, nil
	c.mu.Unlock()
}

var porepSHAReplicas replicaCache

func porepSHAReplicaFor(seed []byte, sh porepSHAShape) *porepSHAReplica {
	key := fmt.Sprintf("%x/%d/%d/%d", seed, sh.depth, sh.parents, sh.rounds)
	return porepSHAReplicas.get(key, func() *porepSHAReplica { return buildPoRepSHAReplica(seed, sh) })
}
