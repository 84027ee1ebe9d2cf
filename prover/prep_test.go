package prover

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/keygen"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/witness"
)

// lendingCPU is the CPU backend giving Prep its memory (filled with garbage,
// as a reused buffer is) and, with bg2, computing b_g2 in Compute, as the GPU
// backend does.
type lendingCPU struct {
	CPU
	bg2, dropB2 bool
	// shared lends one vector for the A and B wires, as the GPU backend
	// does for keys whose A and B sets leave out the same wires; wires
	// lends the wires' values too, the K wires their tail (WireMemory).
	shared, wires bool

	mu            sync.Mutex
	lent, settled int
}

type lentMemory struct {
	b    *lendingCPU
	v    [6][]fr.Element
	w    []fr.Element
	once sync.Once
}

func (m *lentMemory) Wires() []fr.Element { return m.w }

func (m *lentMemory) Vectors() (a, b, c, wa, wb, wk []fr.Element) {
	return m.v[0], m.v[1], m.v[2], m.v[3], m.v[4], m.v[5]
}

func (m *lentMemory) Release() {
	m.once.Do(func() {
		m.b.mu.Lock()
		m.b.settled++
		m.b.mu.Unlock()
	})
}

func (b *lendingCPU) PrepMemory(k *Keys) (PrepMemory, error) {
	pk := k.PK
	n := int(pk.Domain.Cardinality)
	m := &lentMemory{b: b}
	for i, size := range []int{n, n, n, len(pk.G1.A), len(pk.G1.B), len(pk.G1.K)} {
		m.v[i] = make([]fr.Element, size)
		for j := range m.v[i] {
			m.v[i][j].SetUint64(uint64(0xdead + j))
		}
	}
	if b.shared {
		m.v[4] = m.v[3]
	}
	if b.wires {
		m.w = make([]fr.Element, len(pk.InfinityA))
		m.v[5] = m.w[k.CS.GetNbPublicVariables():]
	}
	b.mu.Lock()
	b.lent++
	b.mu.Unlock()
	return m, nil
}

func (b *lendingCPU) ComputesBG2() bool { return b.bg2 }

func (b *lendingCPU) Compute(ctx context.Context, k *Keys, s Staged) (*Computed, error) {
	p := s.(cpuStaged).p
	var g2err error
	out := &Computed{}
	if b.bg2 && !b.dropB2 {
		bs, err := BG2(ctx, k, p)
		out.B2, g2err = &bs, err
	}
	c, err := b.CPU.Compute(ctx, k, s)
	if err != nil || g2err != nil {
		return nil, cmpErr(err, g2err)
	}
	c.B2 = out.B2
	return c, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Prep into lent memory gives the vectors Prep gives, whatever the memory
// held before.
func TestPrepIntoLentMemory(t *testing.T) {
	k := testKeys(t, "porep")
	w, _ := Witness(k, []byte("lent"), 0)
	sol, want := plainPrepared(t, k, w)
	b := &lendingCPU{}
	got, err := PrepFor(b, k, sol)
	if err != nil {
		t.Fatal(err)
	}
	samePrepared(t, got, want)
	got.Release()
	got.Release()
	if b.lent != 1 || b.settled != 1 {
		t.Fatalf("lent %d, returned %d: want 1 and 1", b.lent, b.settled)
	}
}

// A backend that computes b_g2 leaves nothing to BG2: Prove takes Compute's
// G2 sum, the proof verifies, and the lent memory comes back.
func TestProveWithBG2InCompute(t *testing.T) {
	k := testKeys(t, "mimc")
	w, _ := Witness(k, []byte("bg2"), 0)
	b := &lendingCPU{bg2: true}
	if !ComputesBG2(b) || ComputesBG2(CPU{}) {
		t.Fatal("ComputesBG2 does not follow the backend")
	}
	_, tm, err := Prove(context.Background(), k, b, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tm["b_g2"] != 0 {
		t.Fatalf("b_g2 took %s with the backend computing it", tm["b_g2"])
	}
	if b.lent != 1 || b.settled != 1 {
		t.Fatalf("lent %d, returned %d", b.lent, b.settled)
	}
	// A backend that says it computes b_g2 and does not is an error, not a
	// proof with a missing term.
	_, _, err = Prove(context.Background(), k, &lendingCPU{bg2: true, dropB2: true}, w, nil)
	if err == nil || !strings.Contains(err.Error(), "b_g2") {
		t.Fatalf("b_g2 left out: got %v", err)
	}
}

// With a backend that gives Prep its memory, cuzk's solver writes A, B and C
// straight into it (dirty as a reused buffer is): Prep pads them in place,
// gives the vectors a separate solve and Prep give, and the proof verifies.
// A solution never prepared returns the memory with its Release;
// CUZK_SOLVE_INTO=off solves into the solver's own vectors.
func TestSynthesizeIntoLentMemory(t *testing.T) {
	for _, name := range []string{"porep", "sha", "sha2"} {
		t.Run(name, func(t *testing.T) {
			k := testKeys(t, name)
			w, _ := Witness(k, []byte("into"), 1)
			_, want := plainPrepared(t, k, w)
			b := &lendingCPU{}
			into, err := SynthesizeFor(b, k, w)
			if err != nil {
				t.Fatal(err)
			}
			if into.mem == nil || b.lent != 1 {
				t.Fatalf("no memory taken from the backend for the solve (%d lent)", b.lent)
			}
			a, _, _, _, _, _ := into.mem.Vectors()
			if &into.A[0] != &a[0] {
				t.Fatal("the solver's A is not in the backend's memory")
			}
			got, err := PrepFor(b, k, into)
			if err != nil {
				t.Fatal(err)
			}
			if b.lent != 1 || &got.A[0] != &a[0] || into.mem != nil {
				t.Fatalf("prep took new memory (%d lent) or left the solution its own", b.lent)
			}
			into.Release()
			samePrepared(t, got, want)
			if b.settled != 0 {
				t.Fatal("the solution's release returned the memory its Prepared holds")
			}
			got.Release()
			if b.settled != 1 {
				t.Fatalf("%d returned, want 1", b.settled)
			}
			proveVerifiesOn(t, k, b, w, "solved into lent memory")
			// Synthesized, never prepared: the release returns the memory.
			left, err := SynthesizeFor(b, k, w)
			if err != nil {
				t.Fatal(err)
			}
			left.Release()
			if b.lent != b.settled {
				t.Fatalf("lent %d, returned %d", b.lent, b.settled)
			}
			t.Setenv("CUZK_SOLVE_INTO", "off")
			apart, err := SynthesizeFor(b, k, w)
			if err != nil {
				t.Fatal(err)
			}
			if apart.mem != nil || b.lent != b.settled {
				t.Fatal("CUZK_SOLVE_INTO=off took the backend's memory for the solve")
			}
			apart.Release()
		})
	}
}

// samePrepared fails t unless got's six vectors equal want's.
func samePrepared(t *testing.T, got, want *Prepared) {
	t.Helper()
	for i, pair := range [][2][]fr.Element{{got.A, want.A}, {got.B, want.B}, {got.C, want.C},
		{got.WiresA, want.WiresA}, {got.WiresB, want.WiresB}, {got.WiresK, want.WiresK}} {
		if len(pair[0]) != len(pair[1]) {
			t.Fatalf("vector %d: %d elements, want %d", i, len(pair[0]), len(pair[1]))
		}
		for j := range pair[0] {
			if !pair[0][j].Equal(&pair[1][j]) {
				t.Fatalf("vector %d differs at %d", i, j)
			}
		}
	}
}

// plainPrepared is w synthesized and prepared in memory of their own, as a
// reference.
func plainPrepared(t *testing.T, k *Keys, w witness.Witness) (*Solution, *Prepared) {
	t.Helper()
	sol, err := Synthesize(k, w)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Prep(k, sol)
	if err != nil {
		t.Fatal(err)
	}
	return sol, p
}

// porep-sha's A and B key sets leave out the same wires from 2^13 on (at
// 2^12 they differ by one): Prep fills one vector for both, in Go memory or
// in a backend's memory that holds them as one, and the proof verifies; a
// backend that holds them as one for keys whose sets differ (porep) is
// refused. Its host footprint counts the vector once.
func TestPrepSharedWires(t *testing.T) {
	c, err := circuits.Lookup("porep-sha")
	if err != nil {
		t.Fatal(err)
	}
	k, err := SetupWith(c, 1<<13, keygen.CPUMultiplier{})
	if err != nil {
		t.Fatal(err)
	}
	if !k.SharedWires() || testKeys(t, "porep").SharedWires() || testKeys(t, "mimc").SharedWires() {
		t.Fatal("SharedWires: want porep-sha's sets shared at 2^13, porep's and mimc's not")
	}
	w, _ := Witness(k, []byte("shared"), 0)
	sol, want := plainPrepared(t, k, w)
	if &want.WiresA[0] != &want.WiresB[0] {
		t.Error("Prep in Go memory made two vectors of the same wires")
	}
	b := &lendingCPU{shared: true}
	got, err := PrepFor(b, k, sol)
	if err != nil {
		t.Fatal(err)
	}
	samePrepared(t, got, want)
	got.Release()
	proveVerifiesOn(t, k, b, w, "the A and B wires shared")
	proveVerifies(t, k, "shared", 1)

	// The wires solved into the backend's memory as well: the solution's
	// wires are that memory, the K wires in place, the same vectors.
	bw := &lendingCPU{shared: true, wires: true}
	into, err := SynthesizeFor(bw, k, w)
	if err != nil {
		t.Fatal(err)
	}
	m := into.mem.(*lentMemory)
	if &into.Wires[0] != &m.w[0] {
		t.Fatal("the solver's wires are not in the backend's memory")
	}
	got, err = PrepFor(bw, k, into)
	if err != nil {
		t.Fatal(err)
	}
	into.Release()
	samePrepared(t, got, want)
	if &got.WiresK[0] != &m.w[k.CS.GetNbPublicVariables()] {
		t.Fatal("the K wires are not the tail of the lent wires")
	}
	got.Release()
	proveVerifiesOn(t, k, bw, w, "the wires lent")
	if bw.lent != bw.settled {
		t.Fatalf("lent %d, returned %d", bw.lent, bw.settled)
	}
	n, wires := int64(k.PK.Domain.Cardinality), int64(len(k.PK.InfinityA))
	if got, want := HostFootprint(k), HostBytes(n, wires)-32*(wires-int64(k.PK.NbInfinityA)); got != want {
		t.Errorf("HostFootprint %d, want %d", got, want)
	}

	kp := testKeys(t, "porep")
	wp, _ := Witness(kp, []byte("shared"), 0)
	solp, err := Synthesize(kp, wp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PrepFor(&lendingCPU{shared: true}, kp, solp); err == nil || !strings.Contains(err.Error(), "as one") {
		t.Fatalf("porep prepared into one vector for A and B wires: %v", err)
	}
}
