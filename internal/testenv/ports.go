package testenv

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// FreePorts returns n distinct ports free on 127.0.0.1 now, for a server a
// test starts later. They come from below the kernel's ephemeral range, so
// that no socket another test binds to port 0 in the meantime (these
// packages' tests run in parallel) can take one: a port found by binding
// 127.0.0.1:0 and closing the listener was seen taken again before the
// server listened ("bind: address already in use"). Where the range is
// unknown, or starts too low to leave room below it, the ports come from
// binding port 0.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	lo := ephemeralLow()
	var out []int
	seen := map[int]bool{}
	for tries := 0; len(out) < n && lo > 11000 && tries < 1000; tries++ {
		p := 10000 + rand.IntN(lo-10000-1000)
		if seen[p] || !bindable(p) {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	for len(out) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// FreeAddr is one of FreePorts as a host:port on 127.0.0.1.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(FreePorts(t, 1)[0])
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0
// where it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return lo
}

func bindable(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
