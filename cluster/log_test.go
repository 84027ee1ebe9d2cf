package cluster

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	pcluster "github.com/asynkron/protoactor-go/cluster"
)

// protoactor's failed connects are dropped for the addresses where members
// left (asked for hellos now and then) and kept for any other address.
func TestFailedConnectsToProbedAddressesAreNotLogged(t *testing.T) {
	var buf bytes.Buffer
	var probed sync.Map
	probed.Store("10.0.0.9:7001", true)
	log := slog.New(quietHandler{slog.NewTextHandler(&buf, nil), &probed}).With("lib", "protoactor")
	const stream, connect = "EndpointWriter failed to create receive stream", "EndpointWriter failed to connect"
	for _, addr := range []string{"10.0.0.9:7001", "10.0.0.9:7002"} {
		log.Error(stream, slog.String("address", addr))
		log.Error(connect, slog.String("address", addr), slog.Int("retry", 0))
	}
	log.Error("EndpointWriter lost connection", slog.String("address", "10.0.0.9:7001"))
	log.Info("Started EndpointWriter. connecting", slog.String("address", "10.0.0.9:7002"))
	out := buf.String()
	// logged reports whether a line has msg and the address.
	logged := func(msg, addr string) bool {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, msg) && strings.Contains(l, "address="+addr) {
				return true
			}
		}
		return false
	}
	if logged(stream, "10.0.0.9:7001") || logged(connect, "10.0.0.9:7001") {
		t.Errorf("a failed connect to a probed address was logged:\n%s", out)
	}
	if !logged(stream, "10.0.0.9:7002") || !logged(connect, "10.0.0.9:7002") || !logged("lost connection", "10.0.0.9:7001") {
		t.Errorf("a failed connect elsewhere or another error was not logged:\n%s", out)
	}
	if strings.Contains(out, "Started EndpointWriter") {
		t.Errorf("an info line was logged:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n != 3 {
		t.Errorf("%d lines logged, want 3:\n%s", n, out)
	}
}

// The addresses probed are those where members left, until a member is
// listed there again.
func TestProbedAddressesFollowTheTopology(t *testing.T) {
	sys, pid, n := clusterActor(t)
	a, b := member("a", 7001), member("b", 7002)
	sys.Root.Send(pid, &pcluster.ClusterTopology{Members: []*pcluster.Member{a, b}})
	sys.Root.Send(pid, &pcluster.ClusterTopology{Members: []*pcluster.Member{b}, Left: []*pcluster.Member{a}})
	ask(t, sys, pid, statusMsg{})
	if _, ok := n.probed.Load(a.Address()); !ok {
		t.Fatalf("%s, where a member left, is not probed", a.Address())
	}
	if _, ok := n.probed.Load(b.Address()); ok {
		t.Fatalf("%s, listed, is probed", b.Address())
	}
	back := member("a2", 7001)
	sys.Root.Send(pid, &pcluster.ClusterTopology{Members: []*pcluster.Member{back, b}})
	ask(t, sys, pid, statusMsg{})
	if _, ok := n.probed.Load(a.Address()); ok {
		t.Fatalf("%s, where a new member is listed, is still probed", a.Address())
	}
}
