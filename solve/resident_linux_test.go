package solve

import (
	"os"
	"testing"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"golang.org/x/sys/unix"
)

// residentPages is how many of the pages under v the kernel has in memory,
// of how many there are (mincore(2)).
func residentPages[T any](t *testing.T, v []T) (in, all int) {
	t.Helper()
	page := os.Getpagesize()
	skew := int(uintptr(unsafe.Pointer(&v[0])) % uintptr(page))
	size := skew + len(v)*int(unsafe.Sizeof(v[0]))
	mem := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(&v[0]), -skew)), size)
	vec := make([]byte, (size+page-1)/page)
	// x/sys has no wrapper for mincore.
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	for _, b := range vec {
		in += int(b & 1)
	}
	return in, len(vec)
}

// The results Reserve readies are in memory: the first solves write into
// pages the kernel has already given, instead of faulting in (and zeroing)
// each one. At 2^25 a sha result is 4 GiB, and five of the six syntheses a
// bench runs at once in its first design took 3 s longer for it.
func TestReservedResultsResident(t *testing.T) {
	const n = 1 << 21 // 64 MiB a vector: fresh pages from the kernel
	p := &Program{nbWires: n, nbConstraints: n}
	p.Reserve(1)
	if p.Reusable() != 1 {
		t.Fatalf("%d reusable after Reserve(1)", p.Reusable())
	}
	res := p.get()
	for _, v := range []struct {
		what string
		vec  fr.Vector
	}{{"W", res.W}, {"A", res.A}, {"B", res.B}, {"C", res.C}} {
		if in, all := residentPages(t, v.vec); in != all {
			t.Errorf("reserved %s: %d of its %d pages in memory", v.what, in, all)
		}
	}
	if in, all := residentPages(t, res.kind); in != all {
		t.Errorf("reserved kinds: %d of their %d pages in memory", in, all)
	}
}
