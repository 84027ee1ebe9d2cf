package gpuprove

import (
	"testing"
	"unsafe"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/keygen"
	"github.com/cuzk/cuzk/prover"
)

// porepSHAShape is porep-sha's key shape on a domain of 2^logN: its A, B
// and K point sets have 0.735 points a domain point (12,332,621 wires at
// 2^24: docs/runs/h200-2026-12-02), Z one; b_g2 on the device beside the
// G1 MSMs, the wire MSMs split.
func porepSHAShape(logN int) keyShape {
	n := 1 << logN
	w := int(float64(n) * 0.735)
	return keyShape{n: n, na: w, nb: w, nk: w, nz: n - 1, g2: true, g2Beside: true, split: true}
}

// The plans of the PoRep-scale runs under 16 GiB, with the estimated sizes:
// at 2^24 the points stay resident beside compact partitions (the H200
// planned it so with the library's sizes, whose kernel scratch is 3.45 GiB
// against the estimate's 6.48: 7.01 GiB of points, room for 5 partitions
// of 1 GiB; the estimate leaves room for 2); at
// 2^26 and 2^27 they are streamed from the Go heap (--key-tier host) and
// at least one compact partition fits beside the chunk buffers.
func TestPoRepSHAPlansUnder16GiB(t *testing.T) {
	host := planOptions{tier: TierHost, beside: 2, pinnedFree: 64 * gib, hostFree: unlimited}
	for _, c := range []struct {
		name      string
		logN      int
		o         planOptions
		tier      string
		minBeside int
	}{
		{"2^24", 24, planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: unlimited}, TierDevice, 2},
		{"2^26 host tier", 26, host, TierHost, 2},
		{"2^27 host tier", 27, host, TierHost, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := planFor(porepSHAShape(c.logN), 16*gib, c.o, estimatedSizes{})
			t.Logf("\n%s", p)
			if !p.Fits() || p.Tier != c.tier || p.Layout != LayoutCompact || p.Beside < c.minBeside {
				t.Fatalf("fits %v, tier %s, layout %s, room for %d; want a %s plan, compact, room for %d", p.Fits(), p.Tier, p.Layout, p.Beside, c.tier, c.minBeside)
			}
		})
	}
}

// Keys whose points were moved into pinned memory (prover.Keys.PinPoints)
// stream from there with a pinned budget that holds only Z's reordered
// copy; the same budget sends keys in the Go heap to the pageable tier.
func TestMovedPointsPlanPinned(t *testing.T) {
	s := porepSHAShape(26)
	o := planOptions{beside: 2, pinnedFree: 8 * gib, hostFree: unlimited}
	if p := planFor(s, 16*gib, o, estimatedSizes{}); p.Tier != TierHost {
		t.Fatalf("28 GiB of points in the Go heap with 8 GiB of pinned budget: tier %s, want %s", p.Tier, TierHost)
	}
	s.pinned = true
	if c := s.pinnedCopy(); c != int64(s.nz)*pointBytes {
		t.Fatalf("moved points copy %d bytes, want Z's %d", c, int64(s.nz)*pointBytes)
	}
	p := planFor(s, 16*gib, o, estimatedSizes{})
	if p.Tier != TierPinned || !p.Fits() {
		t.Fatalf("moved points: tier %s, fits %v; want %s", p.Tier, p.Fits(), TierPinned)
	}
	o.tier = TierPinned
	if p := planFor(s, 16*gib, o, estimatedSizes{}); p.Tier != TierPinned {
		t.Fatalf("moved points, pinned tier asked for: %s", p.Tier)
	}
	// Z moved too, in the device's order: nothing is copied, and the pinned
	// tier needs no pinned budget at all.
	s.zMoved = true
	o.pinnedFree = 0
	if c := s.pinnedCopy(); c != 0 {
		t.Fatalf("moved points and Z copy %d bytes, want 0", c)
	}
	if p := planFor(s, 16*gib, o, estimatedSizes{}); p.Tier != TierPinned || !p.Fits() {
		t.Fatalf("moved points and Z, no pinned budget: tier %s, fits %v; want %s", p.Tier, p.Fits(), TierPinned)
	}
}

// The PoRep-scale plans under 16 GiB with the kernel library's own sizes,
// on the card (skips without one; fails under CUZK_REQUIRE_GPU=1): the
// points moved into pinned memory with Z in the device's order, as bench
// prove and prove hold them. At 2^26 the H200 planned 2^22-point chunks
// (runs/h200-2026-12-02b); at 2^27 one compact partition must fit beside
// the chunk buffers, the kernels' scratch and the NTT tables. The plans are
// logged: the simulator's scenario for a 2^27 run takes its resident bytes
// from them before the run.
func TestPoRepSHAPlansOnDevice(t *testing.T) {
	sz := &librarySizes{cd: RealCUDA(t)}
	// What a 16 GiB limit's ballast left on the H200 (docs/cuda-facts.md):
	// up to 2.875 MiB short of the limit.
	free := 16*gib - 3<<20
	for _, c := range []struct {
		logN      int
		chunk     int // 0: any
		minBeside int
	}{{26, 1 << 22, 2}, {27, 1 << 21, 1}} {
		s := porepSHAShape(c.logN)
		s.pinned, s.zMoved = true, true
		p := planFor(s, free, planOptions{beside: 2, hostFree: unlimited}, sz) // the backend's default
		t.Logf("2^%d:\n%s", c.logN, p)
		if err := sz.failed(); err != nil {
			t.Fatalf("the library's sizing calls: %v", err)
		}
		if !p.Fits() || p.Tier != TierPinned || p.Beside < c.minBeside || (c.chunk > 0 && p.ChunkPoints != c.chunk) {
			t.Fatalf("2^%d: fits %v, tier %s, chunks of %d, room for %d; want pinned, room for %d, chunks of %d (0: any)",
				c.logN, p.Fits(), p.Tier, p.ChunkPoints, p.Beside, c.minBeside, c.chunk)
		}
	}
}

// Keys whose A and B sets leave out the same wires (porep-sha's) hold one
// vector for both: the B wires at the A wires' offset, the buffer one wire
// vector smaller, on the host and on the device; other keys keep three.
func TestSharedWiresLayout(t *testing.T) {
	n, w := 1<<20, 770_000
	three, two := newLayout(n, w, w, w, false), newLayout(n, w, w, w, true)
	vec := (int64(w)*scalarBytes + 255) &^ 255
	if two.wb != two.wa || two.wk == two.wa || three.wb == three.wa || three.total-two.total != vec {
		t.Fatalf("shared: wa %d wb %d wk %d total %d; apart: wa %d wb %d total %d", two.wa, two.wb, two.wk, two.total, three.wa, three.wb, three.total)
	}
	if l := newLayout(n, w, w-1, w, true); l.wb == l.wa {
		t.Fatal("vectors of different lengths laid out as one")
	}
	// No A wires: the B wires share the empty vector's offset, and are not
	// one vector with it.
	if !two.oneWireVector() || three.oneWireVector() || newLayout(n, 0, w, w, false).oneWireVector() {
		t.Fatal("oneWireVector does not follow the layout")
	}
	s := porepSHAShape(27)
	apart := s.partition(LayoutWhole)
	s.sharedWires = true
	if got := apart - s.partition(LayoutWhole); got != (int64(s.nb)*scalarBytes+255)&^255 {
		t.Fatalf("the shared whole layout saves %d bytes", got)
	}
}

// Keys whose K points are every private wire's (no commitments) have their
// partitions' wires in pinned memory: all of them, the K wires their tail,
// the solver writing them there; the device's layout is unchanged.
func TestHostLayoutHoldsTheWires(t *testing.T) {
	k := porepSHAKeys(t, 1<<13)
	h, d := hostLayout(k), keyLayout(k)
	wires, pub := len(k.PK.InfinityA), k.CS.GetNbPublicVariables()
	if h.nw != wires || h.wk != h.w+int64(pub)*scalarBytes || h.nk != d.nk || h.wb != h.wa || d.wb != d.wa ||
		h.total != h.w+(int64(wires)*scalarBytes+255)&^255 || d.nw != 0 || h.total >= d.total+int64(pub)*scalarBytes+256 {
		t.Fatalf("host layout %+v, device layout %+v (%d wires, %d public)", h, d, wires, pub)
	}
	buf := make([]byte, h.total)
	m := &pinnedPrep{h: cuda.BorrowHost(unsafe.Pointer(&buf[0]), h.total), l: h}
	_, _, _, wa, wb, wk := m.Vectors()
	w := m.Wires()
	if len(w) != wires || &wk[0] != &w[pub] || &wa[0] != &wb[0] {
		t.Fatal("the pinned vectors do not alias as the layout says")
	}
	k2 := porepSHAKeys(t, 1<<11)
	if l := hostLayout(k2); l.nw != len(k2.PK.InfinityA) || (l.wb == l.wa) != k2.SharedWires() {
		t.Fatalf("2^11's host layout %+v, shared %v", l, k2.SharedWires())
	}
}

// What Stage copies of a partition (the actors' OpCopyIn): the whole
// layout's every vector; a compact partition's a and b, or a alone with the
// copies ahead, Compute copying the rest; never more than the footprint.
func TestStagedBytes(t *testing.T) {
	k := porepSHAKeys(t, 1<<11)
	whole, compact := keyLayout(k).total, compactLayout(k).total
	n := int64(k.PK.Domain.Cardinality) * scalarBytes
	for _, tc := range []struct {
		footprint int64
		ahead     bool
		want      int64
	}{{whole, false, whole}, {whole, true, whole}, {compact, false, 2 * n}, {compact, true, n}} {
		if got := stagedBytes(k, tc.footprint, tc.ahead); got != tc.want || got > tc.footprint {
			t.Fatalf("footprint %d (whole %d), copies ahead %v: stage copies %d bytes; want %d", tc.footprint, whole, tc.ahead, got, tc.want)
		}
	}
	// Without a plan (no device), the footprint is the whole layout's.
	b := &Backend{ahead: true}
	if got := b.StagedBytes(k); got != whole {
		t.Fatalf("a backend without devices stages %d bytes; want the whole layout's %d", got, whole)
	}
}

// porepSHAKeys are porep-sha's keys of about target constraints, made on the
// CPU.
func porepSHAKeys(t *testing.T, target int) *prover.Keys {
	t.Helper()
	c, err := circuits.Lookup("porep-sha")
	if err != nil {
		t.Fatal(err)
	}
	k, err := prover.SetupWith(c, target, keygen.CPUMultiplier{})
	if err != nil {
		t.Fatal(err)
	}
	return k
}
