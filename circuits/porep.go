package circuits

import (
	"fmt"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/frontend"
	stdmimc "github.com/consensys/gnark/std/hash/mimc"
)

// PoRep is shaped like one partition of Filecoin's PoRep C2: for each of K
// challenges it proves that a node of a replica, labelled from the replica id,
// the node index and the node's data, sits at the challenged index of a Merkle
// tree of depth D with the public root. MiMC over Fr is the hash throughout.
//
// The challenges of a partition are derived from the job seed and the
// partition index, so the N partitions of a job are N different proofs of one
// circuit with one proving key.
type PoRep struct{}

// Name implements Circuit.
func (PoRep) Name() string { return "porep" }

type porepCircuit struct {
	ReplicaID  frontend.Variable   `gnark:",public"`
	Root       frontend.Variable   `gnark:",public"`
	Challenges []frontend.Variable `gnark:",public"`
	Data       []frontend.Variable
	Paths      [][]frontend.Variable
	depth      int
}

func (c *porepCircuit) Define(api frontend.API) error {
	h, err := stdmimc.NewMiMC(api)
	if err != nil {
		return err
	}
	hash := func(in ...frontend.Variable) frontend.Variable {
		h.Reset()
		h.Write(in...)
		return h.Sum()
	}
	for k, idx := range c.Challenges {
		bits := api.ToBinary(idx, c.depth)
		cur := hash(c.ReplicaID, idx, c.Data[k]) // the labeling hash
		for d := 0; d < c.depth; d++ {
			sib := c.Paths[k][d]
			left := api.Select(bits[d], sib, cur)
			right := api.Select(bits[d], cur, sib)
			cur = hash(left, right)
		}
		api.AssertIsEqual(cur, c.Root)
	}
	return nil
}

// porepDepth is the tree depth for a target: deep trees for real sizes, a
// shallow one where a single challenge of depth 10 would overshoot.
func porepDepth(target int) int {
	if target >= 1<<16 {
		return 10
	}
	return 4
}

var porepCost sync.Map // depth → [2]int{per challenge, fixed}

// porepCosts is the constraints of one challenge at a depth, and of the
// rest (the public inputs' checks), from two compilations.
func porepCosts(depth int) ([2]int, error) {
	if v, ok := porepCost.Load(depth); ok {
		return v.([2]int), nil
	}
	a, err := countConstraints(PoRep{}, Layout{"depth": depth, "challenges": 1})
	if err != nil {
		return [2]int{}, err
	}
	b, err := countConstraints(PoRep{}, Layout{"depth": depth, "challenges": 2})
	if err != nil {
		return [2]int{}, err
	}
	c := [2]int{b - a, a - (b - a)}
	porepCost.Store(depth, c)
	return c, nil
}

// Layout implements Circuit: as many challenges as fit in the target beside
// the fixed part.
func (PoRep) Layout(target int) (Layout, error) {
	if err := checkTarget(target); err != nil {
		return nil, err
	}
	depth := porepDepth(target)
	cost, err := porepCosts(depth)
	if err != nil {
		return nil, err
	}
	return Layout{"depth": depth, "challenges": max(1, (target-cost[1])/cost[0])}, nil
}

// Constraints implements Circuit.
func (PoRep) Constraints(l Layout) (int, error) {
	depth, k, err := porepShape(l)
	if err != nil {
		return 0, err
	}
	cost, err := porepCosts(depth)
	if err != nil {
		return 0, err
	}
	return cost[1] + k*cost[0], nil
}

func porepShape(l Layout) (depth, challenges int, err error) {
	depth, challenges = l["depth"], l["challenges"]
	if depth < 1 || depth > 20 {
		return 0, 0, fmt.Errorf("porep layout %s: depth must be in 1..20", l)
	}
	if challenges < 1 {
		return 0, 0, fmt.Errorf("porep layout %s: challenges must be at least 1", l)
	}
	return depth, challenges, nil
}

// Shape implements Circuit.
func (PoRep) Shape(l Layout) (frontend.Circuit, error) {
	depth, k, err := porepShape(l)
	if err != nil {
		return nil, err
	}
	c := &porepCircuit{
		Challenges: make([]frontend.Variable, k),
		Data:       make([]frontend.Variable, k),
		Paths:      make([][]frontend.Variable, k),
		depth:      depth,
	}
	for i := range c.Paths {
		c.Paths[i] = make([]frontend.Variable, depth)
	}
	return c, nil
}

// replica is the tree a job's partitions open: one per job seed.
type replica struct {
	id     fr.Element
	data   []fr.Element
	levels [][]fr.Element // levels[0] are the labelled leaves, the last is the root
}

func buildReplica(seed []byte, depth int) *replica {
	n := 1 << depth
	r := &replica{id: derive(seed, "porep/replica-id"), data: make([]fr.Element, n)}
	leaves := make([]fr.Element, n)
	for i := range leaves {
		r.data[i] = derive(seed, "porep/data", i)
		var idx fr.Element
		idx.SetUint64(uint64(i))
		leaves[i] = mimcHash(r.id, idx, r.data[i])
	}
	r.levels = append(r.levels, leaves)
	for len(r.levels[len(r.levels)-1]) > 1 {
		prev := r.levels[len(r.levels)-1]
		next := make([]fr.Element, len(prev)/2)
		for i := range next {
			next[i] = mimcHash(prev[2*i], prev[2*i+1])
		}
		r.levels = append(r.levels, next)
	}
	return r
}

var replicas sync.Map // seed|depth → *replica; a job's partitions share one tree

func replicaFor(seed []byte, depth int) *replica {
	key := fmt.Sprintf("%x/%d", seed, depth)
	if r, ok := replicas.Load(key); ok {
		return r.(*replica)
	}
	r, _ := replicas.LoadOrStore(key, buildReplica(seed, depth))
	return r.(*replica)
}

// porepChallenge returns the k-th challenged node index of a partition. The
// (partition, k) pairs are numbered and sent through an affine bijection of
// [0, 2^depth) drawn from the seed, so that the challenges look random but no
// two partitions of a job share a challenge while partitions × challenges fit
// in the tree: the partitions of a job are different statements.
func porepChallenge(seed []byte, depth, challenges, partition, k int) int {
	mask := 1<<depth - 1
	a := int(low24(derive(seed, "porep/challenge-mul"))) | 1 // odd: invertible mod 2^depth
	b := int(low24(derive(seed, "porep/challenge-add")))
	return (a*(partition*challenges+k) + b) & mask
}

func low24(e fr.Element) uint32 {
	b := e.Bytes()
	return uint32(b[len(b)-1]) | uint32(b[len(b)-2])<<8 | uint32(b[len(b)-3])<<16
}

// Assign implements Circuit.
func (PoRep) Assign(l Layout, seed []byte, partition int) (frontend.Circuit, error) {
	depth, k, err := porepShape(l)
	if err != nil {
		return nil, err
	}
	r := replicaFor(seed, depth)
	c := &porepCircuit{
		ReplicaID:  r.id,
		Root:       r.levels[depth][0],
		Challenges: make([]frontend.Variable, k),
		Data:       make([]frontend.Variable, k),
		Paths:      make([][]frontend.Variable, k),
		depth:      depth,
	}
	for j := 0; j < k; j++ {
		idx := porepChallenge(seed, depth, k, partition, j)
		c.Challenges[j] = idx
		c.Data[j] = r.data[idx]
		c.Paths[j] = make([]frontend.Variable, depth)
		pos := idx
		for d := 0; d < depth; d++ {
			c.Paths[j][d] = r.levels[d][pos^1]
			pos >>= 1
		}
	}
	return c, nil
}
