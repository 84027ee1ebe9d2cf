package cli

import (
	"runtime"
	"strings"
	"testing"
)

// A bench row's host figures see a collection and memory touched for the
// first time between two reads.
func TestHostUseCountsCollectionsAndFaults(t *testing.T) {
	before := readHostUse()
	runtime.GC()
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	u := readHostUse().since(before)
	runtime.KeepAlive(buf)
	// 16,384 pages of 4 KiB, or 32 huge pages where the kernel gives them.
	if u.gcCycles < 1 || u.minorFaults < 32 || u.cpu <= 0 {
		t.Fatalf("after a GC and 64 MiB touched: %+v", u)
	}
	if s := u.String(); !strings.HasPrefix(s, "Go GC ") || !strings.Contains(s, "minor page faults") {
		t.Fatalf("%q", s)
	}
}
