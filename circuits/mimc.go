package circuits

import (
	"fmt"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/mimc"
	"github.com/consensys/gnark/frontend"
	stdmimc "github.com/consensys/gnark/std/hash/mimc"
)

// MiMCChain proves knowledge of a preimage x such that MiMC applied Length
// times to x gives the public Digest. Its size grows linearly with Length.
type MiMCChain struct{}

// Name implements Circuit.
func (MiMCChain) Name() string { return "mimc" }

type mimcChainCircuit struct {
	Preimage frontend.Variable
	Digest   frontend.Variable `gnark:",public"`
	length   int
}

func (c *mimcChainCircuit) Define(api frontend.API) error {
	h, err := stdmimc.NewMiMC(api)
	if err != nil {
		return err
	}
	x := c.Preimage
	for i := 0; i < c.length; i++ {
		h.Reset()
		h.Write(x)
		x = h.Sum()
	}
	api.AssertIsEqual(x, c.Digest)
	return nil
}

// mimcCost is the constraints of one link and of the rest (the final
// equality), from two compilations.
var mimcCost = sync.OnceValues(func() ([2]int, error) {
	a, err := countConstraints(MiMCChain{}, Layout{"length": 1})
	if err != nil {
		return [2]int{}, err
	}
	b, err := countConstraints(MiMCChain{}, Layout{"length": 2})
	return [2]int{b - a, a - (b - a)}, err
})

// The chain's running value is a linear expression that gains a term per
// link (MiMC's Miyaguchi–Preneel sum adds its input back), and gnark's
// compiler turns an expression that reaches 300 terms (frontend's default
// CompressThreshold) into a new wire: every 299 links two constraints more
// (TestMiMCCompressions checks both numbers against compilations).
const (
	mimcCompressEvery = 299
	mimcCompressCost  = 2
)

func mimcCount(cost [2]int, length int) int {
	return cost[1] + length*cost[0] + mimcCompressCost*(length/mimcCompressEvery)
}

// Layout implements Circuit: as many links as fit in the target.
func (m MiMCChain) Layout(target int) (Layout, error) {
	if err := checkTarget(target); err != nil {
		return nil, err
	}
	cost, err := mimcCost()
	if err != nil {
		return nil, err
	}
	n := max(1, (target-cost[1])/cost[0])
	for n > 1 && mimcCount(cost, n) > target {
		n--
	}
	return Layout{"length": n}, nil
}

// Constraints implements Circuit.
func (MiMCChain) Constraints(l Layout) (int, error) {
	n, err := mimcLength(l)
	if err != nil {
		return 0, err
	}
	cost, err := mimcCost()
	if err != nil {
		return 0, err
	}
	return mimcCount(cost, n), nil
}

func mimcLength(l Layout) (int, error) {
	n, ok := l["length"]
	if !ok || n < 1 {
		return 0, fmt.Errorf("mimc layout %s: length must be at least 1", l)
	}
	return n, nil
}

// Shape implements Circuit.
func (MiMCChain) Shape(l Layout) (frontend.Circuit, error) {
	n, err := mimcLength(l)
	if err != nil {
		return nil, err
	}
	return &mimcChainCircuit{length: n}, nil
}

// Assign implements Circuit.
func (MiMCChain) Assign(l Layout, seed []byte, partition int) (frontend.Circuit, error) {
	n, err := mimcLength(l)
	if err != nil {
		return nil, err
	}
	x := derive(seed, "mimc/preimage", partition)
	d := x
	for i := 0; i < n; i++ {
		d = mimcHash(d)
	}
	return &mimcChainCircuit{Preimage: x, Digest: d, length: n}, nil
}

// mimcHash is the out-of-circuit counterpart of writing the elements to
// gnark's MiMC gadget and summing.
func mimcHash(in ...fr.Element) fr.Element {
	h := mimc.NewMiMC()
	for i := range in {
		b := in[i].Bytes()
		h.Write(b[:])
	}
	var out fr.Element
	out.SetBytes(h.Sum(nil))
	return out
}
