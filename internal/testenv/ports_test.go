package testenv

import (
	"net"
	"strconv"
	"testing"
)

// The ports are distinct, free (each can be listened on) and, where the
// ephemeral range is known and leaves room, below it.
func TestFreePorts(t *testing.T) {
	ports := FreePorts(t, 8)
	if len(ports) != 8 {
		t.Fatalf("got %d ports, want 8", len(ports))
	}
	lo := ephemeralLow()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d twice in %v", p, ports)
		}
		seen[p] = true
		if lo > 11000 && p >= lo {
			t.Errorf("port %d in the ephemeral range (from %d)", p, lo)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d: %v", p, err)
			continue
		}
		l.Close()
	}
}
