// Package circuits holds the example circuits cuzk proves, each sized by a
// constraint count: a MiMC hash chain (mimc), SHA-256 rounds bit by bit (sha),
// SHA-256 with gnark's std/hash/sha2, lookups and a commitment (sha2), and two
// PoRep-shaped circuits whose partitions are different proofs of one
// circuit, as in Filecoin's PoRep C2: one hashing with MiMC (porep), one with
// SHA-256 bit by bit, so that nearly every wire is 0 or 1 (porep-sha). A
// target of 2^k constraints gets a system whose domain is 2^k (see Layout and
// docs/circuits.md).
package circuits

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/bits"
	"sort"
	"strings"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
)

// Layout fixes the shape of a circuit: the sizes that a target constraint count
// was turned into. It is recorded next to the keys, so that keys made for one
// layout are never used with another.
type Layout map[string]int

// String prints the layout with sorted keys, e.g. "challenges=3,depth=10".
func (l Layout) String() string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, l[k])
	}
	return strings.Join(parts, ",")
}

// Equal reports whether two layouts are the same.
func (l Layout) Equal(o Layout) bool { return l.String() == o.String() }

// Circuit is one example circuit.
type Circuit interface {
	// Name is the name the CLI knows it by.
	Name() string
	// Layout picks sizes so that the compiled circuit has as many
	// constraints as fit in target, never more (but for targets below the
	// circuit's smallest instance): a target of 2^k gets a domain of 2^k.
	Layout(target int) (Layout, error)
	// Constraints is the constraint count layout l compiles to, computed
	// from the costs of the circuit's parts measured on small instances,
	// without compiling l.
	Constraints(l Layout) (int, error)
	// Shape returns an empty circuit of that layout, for compilation.
	Shape(l Layout) (frontend.Circuit, error)
	// Assign returns the assignment of one partition of a job: its public
	// inputs and witness are derived from the job seed and the partition index.
	Assign(l Layout, seed []byte, partition int) (frontend.Circuit, error)
}

var registry = map[string]Circuit{
	"mimc":      MiMCChain{},
	"porep":     PoRep{},
	"porep-sha": PoRepSHA{},
	"sha":       SHARounds{},
	"sha2":      SHA2{},
}

// Names lists the known circuits.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the circuit called name.
func Lookup(name string) (Circuit, error) {
	c, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown circuit %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return c, nil
}

// Smallest is the constraint count of c's smallest instance, the one that
// every target up to it gets: a few thousand constraints but for sha2 (one
// message, 157,756: gnark's std/hash/sha2 brings two tables of 2^16 entries).
func Smallest(c Circuit) (int, error) {
	l, err := c.Layout(MinConstraints)
	if err != nil {
		return 0, err
	}
	return c.Constraints(l)
}

// Compile compiles the circuit of layout l to an R1CS over BLS12-381's scalar field.
// porep-sha of three challenges or more is stamped from compilations of one
// and two (stamp.go): the same system, in a fraction of the time.
func Compile(c Circuit, l Layout) (constraint.ConstraintSystem, error) {
	if _, ok := c.(PoRepSHA); ok {
		sh, err := porepSHAShapeOf(l)
		if err != nil {
			return nil, err
		}
		return compilePoRepSHA(sh)
	}
	shape, err := c.Shape(l)
	if err != nil {
		return nil, err
	}
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, shape)
	if err != nil {
		return nil, fmt.Errorf("compile %s (%s): %w", c.Name(), l, err)
	}
	return ccs, nil
}

// Domain is the size of the evaluation domain of a system of n constraints:
// the smallest power of two at or above n, as gnark's Groth16 setup (and
// keygen) take it. The public inputs add no constraints in gnark's R1CS, so
// they do not enter.
func Domain(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}

// MinConstraints is the smallest target any circuit accepts.
const MinConstraints = 1 << 10

// MaxConstraints bounds targets to what the FFT domain of BLS12-381's Fr
// supports (2^32) with room for padding.
const MaxConstraints = 1 << 31

func checkTarget(target int) error {
	if target < MinConstraints {
		return fmt.Errorf("constraints must be at least %d, got %d", MinConstraints, target)
	}
	if target > MaxConstraints {
		return fmt.Errorf("constraints must be at most %d, got %d", MaxConstraints, target)
	}
	return nil
}

// seedDigest is SHA-256 over the job seed, a domain label and indices (each
// 8 bytes, big-endian): what every input of a job is drawn from.
func seedDigest(seed []byte, label string, idx ...int) [32]byte {
	h := sha256.New()
	h.Write(seed)
	h.Write([]byte(label))
	var b [8]byte
	for _, i := range idx {
		binary.BigEndian.PutUint64(b[:], uint64(i))
		h.Write(b[:])
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// derive returns a field element drawn from the job seed, a domain label and
// indices, so that every partition gets its own inputs.
func derive(seed []byte, label string, idx ...int) fr.Element {
	d := seedDigest(seed, label, idx...)
	var e fr.Element
	e.SetBytes(d[:]) // reduced mod r
	return e
}

// countConstraints compiles the layout and returns its constraint count; the
// Layout methods use it on a small instance to learn the cost of one unit.
func countConstraints(c Circuit, l Layout) (int, error) {
	ccs, err := Compile(c, l)
	if err != nil {
		return 0, err
	}
	return ccs.GetNbConstraints(), nil
}
