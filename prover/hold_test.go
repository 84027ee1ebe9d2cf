package prover

import (
	"context"
	"errors"
	"testing"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/keygen"
)

// Keys made in memory whose points were moved (to Go memory standing in for
// pinned memory) and whose system's instructions were released still prove
// partitions gnark verifies; what needs the instructions says so.
func TestPinnedReleasedKeysProve(t *testing.T) {
	k := porepInMemory(t)
	constraints, a0, g2last := k.Constraints(), k.PK.G1.A[0], k.PK.G2.B[len(k.PK.G2.B)-1]
	var held [][]byte // the stand-in's memory, alive as pinned memory would be
	alloc := heapAlloc(&held)
	if err := k.PinPoints(alloc); err != nil {
		t.Fatal(err)
	}
	want := int64(len(k.PK.G1.A)+len(k.PK.G1.B)+len(k.PK.G1.K))*96 + int64(len(k.PK.G2.B))*192
	if moved := heldBytes(held); !k.PointsPinned() || len(held) != 4 || moved != want {
		t.Fatalf("pinned %v: %d sets, %d bytes moved; want 4 sets, %d bytes", k.PointsPinned(), len(held), heldBytes(held), want)
	}
	if unsafe.Pointer(&k.PK.G1.A[0]) != unsafe.Pointer(&held[0][0]) || !k.PK.G1.A[0].Equal(&a0) || !k.PK.G2.B[len(k.PK.G2.B)-1].Equal(&g2last) {
		t.Fatal("A's points are not in the moved memory, or not the same points")
	}
	if err := k.PinPoints(alloc); err != nil || len(held) != 4 {
		t.Fatalf("a second PinPoints: %v, %d sets", err, len(held))
	}
	if err := k.ReleaseSystem(); err != nil {
		t.Fatal(err)
	}
	if !k.SystemReleased() || k.CS.Instructions != nil || k.CS.CallData != nil || k.Constraints() != constraints {
		t.Fatalf("released %v, %d instructions, %d constraints (want %d)", k.SystemReleased(), len(k.CS.Instructions), k.Constraints(), constraints)
	}
	for p := range 2 {
		proveVerifies(t, k, "held", p)
	}
	if err := k.Save(t.TempDir()); !errors.Is(err, ErrSystemReleased) {
		t.Errorf("Save of released keys: %v, want ErrSystemReleased", err)
	}
	k.Solver = SolverGnark
	w, err := Witness(k, []byte("held"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Prove(context.Background(), k, CPU{}, w, nil); !errors.Is(err, ErrSystemReleased) {
		t.Errorf("gnark's solver on released keys: %v, want ErrSystemReleased", err)
	}
	k2 := porepInMemory(t)
	k2.Solver = SolverGnark
	if err := k2.ReleaseSystem(); err == nil || k2.SystemReleased() {
		t.Errorf("keys solved by gnark released their system (%v)", err)
	}
}

// Keys released before they are pinned have Z moved too, in the device's
// order, and once only: the CPU backend reorders H to match, so its proofs
// still verify; keys pinned before their release keep Z where gnark put it
// (TestPinnedReleasedKeysProve).
func TestReleasedKeysPinZInDeviceOrder(t *testing.T) {
	k := porepInMemory(t)
	z := append([]curve.G1Affine(nil), k.PK.G1.Z...)
	n := int(k.PK.Domain.Cardinality)
	if err := k.ReleaseSystem(); err != nil {
		t.Fatal(err)
	}
	var held [][]byte
	alloc := heapAlloc(&held)
	if err := k.PinPoints(alloc); err != nil {
		t.Fatal(err)
	}
	if !k.ZInDeviceOrder() || len(held) != 5 || len(k.PK.G1.Z) != len(z) || unsafe.Pointer(&k.PK.G1.Z[0]) != unsafe.Pointer(&held[4][0]) {
		t.Fatalf("Z in the device's order %v, %d sets moved, %d Z points (want 5 sets, %d points, Z in the last)", k.ZInDeviceOrder(), len(held), len(k.PK.G1.Z), len(z))
	}
	seen := make([]bool, len(z))
	for j := range z {
		i := ZDeviceIndex(j, n)
		if i < 0 || i >= len(z) || seen[i] || !k.PK.G1.Z[i].Equal(&z[j]) {
			t.Fatalf("gnark's Z[%d] is not alone at its device index %d", j, i)
		}
		seen[i] = true
	}
	if err := k.PinPoints(alloc); err != nil || len(held) != 5 {
		t.Fatalf("a second PinPoints: %v, %d sets", err, len(held))
	}
	for p := range 2 {
		proveVerifies(t, k, "device-order", p)
	}
	if ZDeviceIndex(1, 8) != 4 || ZDeviceIndex(3, 8) != 6 || ZDeviceIndex(6, 8) != 3 || ZDeviceIndex(0, 2) != 0 {
		t.Fatal("ZDeviceIndex does not reverse the index's bits")
	}
}

// porepInMemory is keys for porep at testSize made in memory.
func porepInMemory(t *testing.T) *Keys { return porepInMemoryWith(t, InMemoryOptions{}) }

func porepInMemoryWith(t *testing.T, opt InMemoryOptions) *Keys {
	t.Helper()
	c, err := circuits.Lookup("porep")
	if err != nil {
		t.Fatal(err)
	}
	opt.Dump.Chunk = 500
	k, err := SetupInMemory(c, testSize, keygen.CPUMultiplier{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// heapAlloc stands in for pinned memory with Go memory kept alive in held.
func heapAlloc(held *[][]byte) HostAlloc {
	return func(bytes int64) (unsafe.Pointer, error) {
		b := make([]byte, bytes)
		*held = append(*held, b)
		return unsafe.Pointer(&b[0]), nil
	}
}

func heldBytes(held [][]byte) (n int64) {
	for _, b := range held {
		n += int64(len(b))
	}
	return n
}

// Keys made for a GPU run give up during the setup what such a run does
// not need: the system's instructions once evaluated and laid out
// (ReleaseSystem), and the domain's FFT tables (NoDomainTables). Keys
// loaded whole drop their tables after (DropDomainTables). The CPU backend
// proves with either, computing the twiddles as it goes.
func TestKeysForTheDevice(t *testing.T) {
	k := porepInMemoryWith(t, InMemoryOptions{Dump: keygen.DumpOptions{NoDomainTables: true}, ReleaseSystem: true})
	if !k.SystemReleased() || k.CS.Instructions != nil {
		t.Fatalf("released %v, %d instructions after the setup", k.SystemReleased(), len(k.CS.Instructions))
	}
	if _, err := k.PK.Domain.Twiddles(); err == nil {
		t.Fatal("the domain has FFT tables")
	}
	proveVerifies(t, k, "device", 0)

	k2 := porepInMemory(t)
	if k2.SystemReleased() {
		t.Fatal("keys released without being asked to")
	}
	before := k2.PK.Domain
	if _, err := before.Twiddles(); err != nil {
		t.Fatalf("gnark's domain has no tables: %v", err)
	}
	k2.DropDomainTables()
	d := k2.PK.Domain
	if _, err := d.Twiddles(); err == nil || d.Cardinality != before.Cardinality || d.Generator != before.Generator ||
		d.FrMultiplicativeGen != before.FrMultiplicativeGen || d.CardinalityInv != before.CardinalityInv {
		t.Fatal("DropDomainTables changed the domain, or kept its tables")
	}
	k2.DropDomainTables()
	proveVerifies(t, k2, "dropped", 1)
}
