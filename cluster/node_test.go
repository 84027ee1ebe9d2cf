package cluster

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/circuits"
	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/emu"
	"github.com/cuzk/cuzk/internal/testenv"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	return testenv.FreeAddr(t)
}

// One member alone is a cluster: a job submitted to its service is leased
// to itself over protoactor's remote, proved on its device, recorded once
// with its placement, and every proof verifies. (Several members run as
// separate processes in cli/cluster_test.go: protoactor-go races with
// itself when several remotes share a process.)
func TestNodeAloneProvesItsJobs(t *testing.T) {
	circ, err := circuits.Lookup("mimc")
	if err != nil {
		t.Fatal(err)
	}
	const target = 1024
	k, err := prover.Setup(circ, target)
	if err != nil {
		t.Fatal(err)
	}
	keyRoot := t.TempDir()
	if err := k.Save(prover.KeyDir(keyRoot, "mimc", target)); err != nil {
		t.Fatal(err)
	}
	layout, _ := circ.Layout(target)
	k, err = prover.Load(prover.KeyDir(keyRoot, "mimc", target), "mimc", layout)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dev, err := emu.New(emu.Options{Capacity: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	health := freeAddr(t)
	reg := prometheus.NewRegistry()
	node, err := New(Options{Name: "t", Listen: freeAddr(t), Health: health, Peers: []string{health}, Keys: keyRoot,
		LeaseTTL: time.Second, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := runner.StartService(runner.ServiceOptions{Backend: prover.CPU{}, Devices: []gpu.Device{dev}, Store: st,
		Config: actors.Config{WorkersPerDevice: 1}, Seed: 1, Cluster: node, Observer: node})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	if err := node.Start(svc, st); err != nil {
		t.Fatal(err)
	}
	defer node.Close()

	const n = 6
	seed := []byte("alone")
	if err := svc.Submit(runner.Submission{JobRequest: runner.JobRequest{ID: "j", Keys: k, Partitions: n, Seed: seed}, Target: target}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err := svc.Wait(ctx, "j")
	if err != nil || js.State != runner.StateDone || js.Proved != n {
		t.Fatalf("job: %+v, %v; want done with %d proved", js, err, n)
	}
	proofs, err := st.Proofs("j")
	if err != nil || len(proofs) != n {
		t.Fatalf("%d proofs, %v", len(proofs), err)
	}
	for _, p := range proofs {
		if err := verifyProof(k, seed, p); err != nil {
			t.Fatalf("partition %d: %v", p.Index, err)
		}
	}
	pls, err := st.Placements("j")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		pl := pls[i]
		if !pl.Proved || pl.Member != node.Address() || pl.Device != 0 {
			t.Errorf("partition %d placed %+v, want proved on %s device 0", i, pl, node.Address())
		}
	}
	// The member ran each lease as a one-partition job of its own, which
	// it forgot once its proof was on the way to the owner: only the
	// owner's job is left in the store.
	jobs, err := st.Jobs()
	if err != nil || len(jobs) != 1 || jobs[0].ID != "j" {
		t.Errorf("jobs in the store after the job: %+v, %v; want j alone", jobs, err)
	}
	status, err := node.Status()
	if err != nil {
		t.Fatal(err)
	}
	if len(status.Members) != 1 || len(status.Live) != 0 {
		t.Errorf("status %+v: want itself as the one member and no live lease", status)
	}

	// A job cancelled on its owner revokes the leases still running: the
	// member stops their lease jobs and, once stopped, forgets them too.
	if err := svc.Submit(runner.Submission{JobRequest: runner.JobRequest{ID: "c", Keys: k, Partitions: 20, Seed: []byte("cancel")}, Target: target}); err != nil {
		t.Fatal(err)
	}
	for {
		js, err := svc.Status("c")
		if err != nil {
			t.Fatal(err)
		}
		if js.Proved > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no partition of job c proved")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := svc.Cancel("c"); err != nil {
		t.Fatal(err)
	}
	if js, err := svc.Wait(ctx, "c"); err != nil || js.State != runner.StateCancelled {
		t.Fatalf("job c: %+v, %v; want cancelled", js, err)
	}
	revoked := counter(t, reg, "cuzk_cluster_leases_run_total", "outcome", "revoked")
	if revoked == 0 {
		t.Fatal("no lease revoked by the cancel: nothing was running when it came")
	}
	for {
		jobs, err := st.Jobs()
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, j := range jobs {
			ids = append(ids, j.ID)
		}
		sort.Strings(ids)
		if len(ids) == 2 && ids[0] == "c" && ids[1] == "j" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("jobs in the store after %v leases were revoked: %v; want c and j alone", revoked, ids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// counter is the value of counter name{label=value} in reg, 0 if absent.
func counter(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// quietLogger is protoactor's logger in the tests: protoactorLogger with no
// address probed.
func quietLogger(system *actor.ActorSystem) *slog.Logger {
	return protoactorLogger(system, nil)
}

// clusterActor runs a cluster actor alone, in an actor system without a
// remote, for the tests of its decisions.
func clusterActor(t *testing.T) (*actor.ActorSystem, *actor.PID, *Node) {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(quietLogger))
	n := &Node{system: sys, opt: Options{Name: "test", LeaseTTL: time.Second}, excluded: make(chan struct{})}
	m, err := newNodeMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	s := newNodeState(n, nil, nil, m)
	pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return s }))
	t.Cleanup(func() { sys.Root.Stop(pid) })
	return sys, pid, n
}

func ask(t *testing.T, sys *actor.ActorSystem, pid *actor.PID, msg any) any {
	t.Helper()
	r, err := sys.Root.RequestFuture(pid, msg, 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func member(id string, port int) *pcluster.Member {
	return &pcluster.Member{Id: id, Host: "10.0.0.9", Port: int32(port)}
}

// A member refuses the hellos of a member id it saw leave (protoactor
// blocked it for good), and answers a new member at the same address,
// saying which other members it lists.
func TestHelloOfAMemberSeenLeavingIsRefused(t *testing.T) {
	sys, pid, _ := clusterActor(t)
	frozen, b := member("frozen", 7000), member("b", 7001)
	sys.Root.Send(pid, &pcluster.ClusterTopology{Members: []*pcluster.Member{frozen, b}})
	sys.Root.Send(pid, &pcluster.ClusterTopology{Members: []*pcluster.Member{b}, Left: []*pcluster.Member{frozen}})
	r, ok := ask(t, sys, pid, &cuzkv1.ClusterHello{From: frozen.Address(), MemberId: "frozen"}).(*cuzkv1.ClusterHelloRefused)
	if !ok || r.MemberId != "frozen" || r.Others != 1 {
		t.Fatalf("the hello of a member seen leaving: answered %v, want refused by a member that lists 1 other", r)
	}
	info, ok := ask(t, sys, pid, &cuzkv1.ClusterHello{From: frozen.Address(), MemberId: "restarted"}).(*cuzkv1.ClusterMemberInfo)
	if !ok {
		t.Fatal("the hello of a new member id at the same address is refused")
	}
	if !slices.Equal(info.Lists, []string{b.Address()}) {
		t.Fatalf("the answer lists %v, want the one other member listed, %s", info.Lists, b.Address())
	}
}

// Whether a member finds itself excluded, from the refusals and answers it
// gets (exclusion.go): each case lists what its provider shows, then what
// it is told.
func TestRefusedMemberFindsItselfExcluded(t *testing.T) {
	a, b, c := member("a", 7001), member("b", 7002), member("c", 7003)
	refusal := func(by *pcluster.Member, others int32) func(self string) any {
		return func(self string) any {
			return &cuzkv1.ClusterHelloRefused{Member: by.Address(), MemberId: self, Others: others}
		}
	}
	// lists is by's answer to a hello, listing the members given.
	lists := func(by *pcluster.Member, listed ...*pcluster.Member) func(self string) any {
		return func(string) any {
			info := &cuzkv1.ClusterMemberInfo{Member: by.Address(), MemberId: by.Id, Slots: 1}
			for _, m := range listed {
				info.Lists = append(info.Lists, m.Address())
			}
			return info
		}
	}
	// listsBoth is by's answer listing the members given and this member
	// (at selfAddr, set by each case).
	var selfAddr string
	listsBoth := func(by *pcluster.Member, listed ...*pcluster.Member) func(self string) any {
		return func(self string) any {
			info := lists(by, listed...)(self).(*cuzkv1.ClusterMemberInfo)
			info.Lists = append(info.Lists, selfAddr)
			return info
		}
	}
	// This member's address (the test system's, "nonhost") sorts above a's
	// and below z's.
	z := &pcluster.Member{Id: "z", Host: "zz.example", Port: 7009}
	for _, tc := range []struct {
		name     string
		listed   []*pcluster.Member // the others its provider lists
		left     []*pcluster.Member // the others it saw leave
		told     []func(self string) any
		excluded bool
	}{
		{name: "woken from a freeze: both others refuse", listed: []*pcluster.Member{a, b},
			told: []func(string) any{refusal(a, 1), refusal(b, 1)}, excluded: true},
		{name: "woken: one of two refuses", listed: []*pcluster.Member{a, b},
			told: []func(string) any{refusal(a, 1)}, excluded: true},
		{name: "one of three refuses", listed: []*pcluster.Member{a, b, c},
			told: []func(string) any{refusal(a, 2)}},
		{name: "refused by a lone member, itself cut off", listed: []*pcluster.Member{a, b},
			told: []func(string) any{refusal(b, 0)}},
		{name: "refusal of an earlier run's id", listed: []*pcluster.Member{a},
			told: []func(string) any{func(string) any {
				return &cuzkv1.ClusterHelloRefused{Member: a.Address(), MemberId: "earlier", Others: 1}
			}}},
		{name: "alone after a long cut, refused at an address where one left", left: []*pcluster.Member{a},
			told: []func(string) any{refusal(a, 1)}, excluded: true},
		{name: "alone, answered under an id it saw leave", left: []*pcluster.Member{a},
			told: []func(string) any{func(string) any { return &cuzkv1.ClusterMemberInfo{Member: a.Address(), MemberId: "a", Slots: 1} }}, excluded: true},
		{name: "alone, answered by a new member where one left", left: []*pcluster.Member{a},
			told: []func(string) any{func(string) any { return &cuzkv1.ClusterMemberInfo{Member: a.Address(), MemberId: "a2", Slots: 1} }}},
		{name: "refused where it left, which the other still lists and this member not", listed: []*pcluster.Member{b}, left: []*pcluster.Member{a},
			told: []func(string) any{lists(b, a), refusal(a, 1)}, excluded: true},
		{name: "a pair cut off from each other only, this member at the higher address", listed: []*pcluster.Member{b}, left: []*pcluster.Member{a},
			told: []func(string) any{listsBoth(b, a), refusal(a, 1)}},
		{name: "a pair cut off from each other only, this member at the lower address", listed: []*pcluster.Member{b}, left: []*pcluster.Member{z},
			told: []func(string) any{listsBoth(b, z), refusal(z, 1)}, excluded: true},
		{name: "a pair of four members, this member at the lower address", listed: []*pcluster.Member{b, c}, left: []*pcluster.Member{z},
			told: []func(string) any{listsBoth(b, z), listsBoth(c, z), refusal(z, 2)}, excluded: true},
		{name: "a pair of four members, this member at the higher address", listed: []*pcluster.Member{b, c}, left: []*pcluster.Member{a},
			told: []func(string) any{listsBoth(b, a), listsBoth(c, a), refusal(a, 2)}},
		{name: "one of three refuses, the others list both", listed: []*pcluster.Member{a, b, c},
			told: []func(string) any{listsBoth(b, a, c), listsBoth(c, a, b), refusal(a, 2)}, excluded: true},
		{name: "one of three refuses, the others no longer list it", listed: []*pcluster.Member{a, b, c},
			told: []func(string) any{listsBoth(b, c), listsBoth(c, b), refusal(a, 2)}},
		{name: "one of three refuses, the others list it but not this member", listed: []*pcluster.Member{a, b, c},
			told: []func(string) any{lists(b, a, c), lists(c, a, b), refusal(a, 2)}},
		{name: "refused where it left and by the other, whose last answer listed both", listed: []*pcluster.Member{b}, left: []*pcluster.Member{a},
			told: []func(string) any{listsBoth(b, a), refusal(b, 1), refusal(a, 1)}, excluded: true},
		{name: "refused where it left by a member the other no longer lists", listed: []*pcluster.Member{b}, left: []*pcluster.Member{a},
			told: []func(string) any{lists(b), refusal(a, 1)}},
		{name: "refused where it left, the other not heard from", listed: []*pcluster.Member{b}, left: []*pcluster.Member{a},
			told: []func(string) any{refusal(a, 1)}},
		{name: "answered under an id it saw leave, others listed", listed: []*pcluster.Member{b}, left: []*pcluster.Member{a},
			told: []func(string) any{func(string) any { return &cuzkv1.ClusterMemberInfo{Member: a.Address(), MemberId: "a", Slots: 1} }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys, pid, n := clusterActor(t)
			selfAddr = sys.Address()
			sys.Root.Send(pid, &pcluster.ClusterTopology{Members: append(append([]*pcluster.Member{}, tc.listed...), tc.left...)})
			sys.Root.Send(pid, &pcluster.ClusterTopology{Members: tc.listed, Left: tc.left})
			for _, m := range tc.told {
				sys.Root.Send(pid, m(sys.ID))
			}
			ask(t, sys, pid, statusMsg{})
			select {
			case <-n.Excluded():
				if !tc.excluded {
					t.Fatalf("excluded: %v", n.Err())
				}
			default:
				if tc.excluded {
					t.Fatal("not excluded")
				}
			}
		})
	}
}

// probeGone's schedule: a member that lists others asks an address where a
// member left for a hello at intervals doubling from a TTL to 64 TTLs (rule
// 4); alone, it asks once a TTL (rule 2).
func TestProbeGoneSchedule(t *testing.T) {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(quietLogger))
	n := &Node{system: sys, opt: Options{Name: "test", LeaseTTL: time.Second}}
	m, err := newNodeMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	s := newNodeState(n, nil, nil, m)
	t0 := time.Unix(1000, 0)
	gone, other := member("a", 7001).Address(), member("b", 7002).Address()
	s.members[other] = "b"
	s.wentAway(gone, t0)
	probes := func(from, to time.Duration) []time.Duration {
		var at []time.Duration
		for d := from; d <= to; d += 100 * time.Millisecond {
			s.probeGone(func(addr string) {
				if addr != gone {
					t.Fatalf("asked %s, not where a member left", addr)
				}
				at = append(at, d)
			}, t0.Add(d))
		}
		return at
	}
	got := probes(0, 300*time.Second)
	want := []time.Duration{1, 3, 7, 15, 31, 63, 127, 191, 255}
	for i := range want {
		want[i] *= time.Second
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listing another: asked at %v, want %v", got, want)
	}
	delete(s.members, other)
	got = probes(300*time.Second, 304*time.Second)
	if want := []time.Duration{300 * time.Second, 301 * time.Second, 302 * time.Second, 303 * time.Second, 304 * time.Second}; !slices.Equal(got, want) {
		t.Fatalf("alone: asked at %v, want once a TTL %v", got, want)
	}
}
