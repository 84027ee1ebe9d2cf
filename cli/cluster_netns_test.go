package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The network partition test cuts a member's cable: every daemon runs in a
// network namespace of its own, joined to the others by a veth pair on one
// bridge, and the cut is `ip link set <its veth> down` — no packet either
// way while the process runs on, its connections silent, not reset. All of
// it lives in a network namespace the test makes for itself (it runs again
// inside one), so nothing of the host's network is touched and nothing
// leaves the machine. It needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN), the
// kernel's veth and bridge, and iproute2's ip and util-linux's nsenter;
// without them the test is skipped, unless CUZK_REQUIRE_NETNS=1 (set by
// .ci/run) makes that a failure.

// netnsInner marks the test's run inside its own network namespace.
const netnsInner = "CUZK_NETNS_INNER"

// netnsUnavailable skips the test for want of what the cut needs.
func netnsUnavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CUZK_REQUIRE_NETNS") == "1" {
		t.Fatalf("CUZK_REQUIRE_NETNS=1, but the network partition cannot be made here: %s", msg)
	}
	t.Skipf("the network partition cannot be made here (%s); it needs root, veth and bridge, ip and nsenter. CUZK_REQUIRE_NETNS=1 makes this a failure", msg)
}

// inOwnNetns runs test name again, inside a new network namespace, and
// reports its outcome as this run's. It returns false inside that run.
func inOwnNetns(t *testing.T, name string, within time.Duration) bool {
	t.Helper()
	if os.Getenv(netnsInner) == "1" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), within+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+name+"$", "-test.v", "-test.count=1",
		"-test.timeout="+within.String())
	cmd.Env = append(os.Environ(), netnsInner+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		netnsUnavailable(t, "a process in a new network namespace: %v", err)
	}
	text := string(out)
	if err != nil {
		t.Fatalf("in its own network namespace: %v\n%s", err, text)
	}
	if strings.Contains(text, "--- SKIP: "+name) {
		t.Skipf("in its own network namespace:\n%s", text)
	}
	if !strings.Contains(text, "--- PASS: "+name) {
		t.Fatalf("in its own network namespace: no PASS\n%s", text)
	}
	// Its own log lines (t.Logf, indented), not the daemons'.
	var logs []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "---") {
			logs = append(logs, strings.TrimSpace(l))
		}
	}
	t.Logf("in its own network namespace:\n%s", strings.Join(logs, "\n"))
	return true
}

// testNet is a bridge in the test's network namespace and, per member, a
// network namespace held by a sleeping process, with a veth pair from the
// bridge to the member's eth0 at 10.77.0.(10+i)/24.
type testNet struct {
	t       *testing.T
	nsenter string
	holders []*exec.Cmd
}

const bridge = "cuzk0"

func (n *testNet) ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newTestNet makes the bridge and n members' namespaces, or skips the
// test (netnsUnavailable).
func newTestNet(t *testing.T, members int) *testNet {
	t.Helper()
	for _, bin := range []string{"ip", "sleep"} {
		if _, err := exec.LookPath(bin); err != nil {
			netnsUnavailable(t, "no %s", bin)
		}
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		netnsUnavailable(t, "no nsenter")
	}
	n := &testNet{t: t, nsenter: nsenter}
	t.Cleanup(func() {
		for _, h := range n.holders {
			h.Process.Kill()
			h.Wait()
		}
	})
	for _, args := range [][]string{{"link", "set", "lo", "up"}, {"link", "add", bridge, "type", "bridge"},
		{"addr", "add", "10.77.0.1/24", "dev", bridge}, {"link", "set", bridge, "up"}} {
		if err := n.ip(args...); err != nil {
			netnsUnavailable(t, "%v", err)
		}
	}
	for i := range members {
		if err := n.addMember(i); err != nil {
			netnsUnavailable(t, "member %d: %v", i, err)
		}
	}
	return n
}

func (n *testNet) addMember(i int) error {
	hold := exec.Command("sleep", "3600")
	hold.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	if err := hold.Start(); err != nil {
		return fmt.Errorf("a process in a new network namespace: %w", err)
	}
	n.holders = append(n.holders, hold)
	pid := strconv.Itoa(hold.Process.Pid)
	if err := n.ip("link", "add", n.veth(i), "type", "veth", "peer", "name", "eth0", "netns", pid); err != nil {
		return err
	}
	if err := n.ip("link", "set", n.veth(i), "master", bridge, "up"); err != nil {
		return err
	}
	for _, args := range [][]string{{"addr", "add", n.host(i) + "/24", "dev", "eth0"}, {"link", "set", "eth0", "up"}, {"link", "set", "lo", "up"}} {
		if err := n.memberIP(i, args...); err != nil {
			return err
		}
	}
	return nil
}

// memberIP runs ip in member i's namespace.
func (n *testNet) memberIP(i int, args ...string) error {
	cmd := exec.Command(n.nsenter, append([]string{"-t", strconv.Itoa(n.holders[i].Process.Pid), "-n", "ip"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("in member %d's namespace, ip %s: %v: %s", i, strings.Join(args, " "), err, out)
	}
	return nil
}

func (n *testNet) veth(i int) string { return fmt.Sprintf("cuzkm%d", i) }

func (n *testNet) host(i int) string { return fmt.Sprintf("10.77.0.%d", 10+i) }

// enter makes cmd run in member i's namespace (nsenter execs it: the
// process is the command's own).
func (n *testNet) enter(cmd *exec.Cmd, i int) {
	cmd.Args = append([]string{"nsenter", "-t", strconv.Itoa(n.holders[i].Process.Pid), "-n", "--"}, cmd.Args...)
	cmd.Path, cmd.Err = n.nsenter, nil
}

// split drops every packet between members i and j (a blackhole route in
// i's namespace: i's packets to j go nowhere, and so do its answers to j),
// each still reaching the others; join undoes it.
func (n *testNet) split(i, j int) {
	n.t.Helper()
	if err := n.memberIP(i, "route", "add", "blackhole", n.host(j)+"/32"); err != nil {
		n.t.Fatal(err)
	}
}

func (n *testNet) join(i, j int) {
	n.t.Helper()
	if err := n.memberIP(i, "route", "del", "blackhole", n.host(j)+"/32"); err != nil {
		n.t.Fatal(err)
	}
}

// cut pulls member i's cable; heal plugs it back.
func (n *testNet) cut(i int) {
	n.t.Helper()
	if err := n.ip("link", "set", n.veth(i), "down"); err != nil {
		n.t.Fatal(err)
	}
}

func (n *testNet) heal(i int) {
	n.t.Helper()
	if err := n.ip("link", "set", n.veth(i), "up"); err != nil {
		n.t.Fatal(err)
	}
}

// A member cut off from the others by its network (not a stopped process:
// it runs on, and its connections go silent both ways) costs only the
// partitions it held: their leases expire, the owner leases them to the
// others, and the job finishes with every partition proved once and
// verifying. Plugged back, the member proves partitions of the next job.
func TestClusterNetworkPartition(t *testing.T) {
	h, ctx := netnsCluster(t, 3)
	if h == nil {
		return
	}
	// Cut member 2 once it has proved a partition and the job is not done.
	id, seed, n := h.submitUntilProvedBy(ctx, "cut", 24, 2, "cut off")
	h.net.cut(2)
	cutAt := time.Now()
	// The owner ends member 2's leases when their heartbeats stop for a
	// TTL (1 s), before the provider would see it leave (its health checks
	// time out after 2 s): the cable is plugged back then, and member 2
	// carries on as the same member.
	for !h.ended(0, 2) {
		if time.Since(cutAt) > 30*time.Second {
			t.Fatal("the owner ended no lease of member 2 within 30 s of its cut")
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.net.heal(2)
	cut := time.Since(cutAt).Round(10 * time.Millisecond)
	// The cut is shorter than the providers' detection time, but not by a
	// sure margin: a health check sent as the cable was pulled waits for
	// TCP's retransmissions, and its 2 s timeout can come first, on either
	// side of the cable. A member whose provider saw another leave has
	// blocked that id for good, and refuses it: the member refused by one
	// of its two others exits as excluded, to rejoin as a new member
	// (started again here). That may be member 2, seen leaving by the
	// others, or the one member 2's provider saw leave, the owner included:
	// restarted, the owner takes its job up from its store.
	h.rejoinExcluded = true
	got := h.await(ctx, 0, id)
	per := h.check(got, seed, n)
	if per[h.addr(2)] == 0 {
		t.Fatalf("member 2 proved nothing: %v", per)
	}
	t.Logf("%d partitions over 3 members, member 2 cut off mid-job for %s (until the owner ended its leases): proved per member %v, %d attempts",
		n, cut, per, got.Job.Attempts)
	// Either way it is decided once the checks of the cut are over.
	time.Sleep(time.Until(cutAt.Add(6 * time.Second)))
	for _, i := range h.restartExcluded(ctx) {
		t.Logf("member %d was refused by a member whose provider saw it leave: excluded, restarted", i)
	}
	// Back, member 2 takes leases again: the next job is proved over all
	// three, every partition once. (A proof it finished while cut off was
	// sent once it was back, and dropped or taken, never recorded twice:
	// the check above counts one proof per partition.)
	seed = []byte("healed")
	got = h.await(ctx, 0, h.submit(ctx, 0, "healed", seed, n))
	per = h.check(got, seed, n)
	if per[h.addr(2)] == 0 {
		t.Fatalf("member 2 proved nothing after it was plugged back: %v", per)
	}
	t.Logf("member 2 plugged back: proved per member %v", per)
}

// netnsCluster runs the calling test again in a network namespace of its
// own (inOwnNetns) and there starts members daemons, each in a namespace of
// its own (testNet), with a context for the test's waits. In the first run
// it returns nil: the inner run's outcome is the test's.
func netnsCluster(t *testing.T, members int) (*clusterHarness, context.Context) {
	t.Helper()
	if testing.Short() {
		t.Skipf("builds cuzk and runs %d daemons", members)
	}
	const within = 3 * time.Minute
	if inOwnNetns(t, t.Name(), within) {
		return nil, nil
	}
	tn := newTestNet(t, members)
	h := newClusterHarness(t, members)
	h.net = tn
	h.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), within-10*time.Second)
	t.Cleanup(cancel)
	return h, ctx
}

// ended reports whether owner o's log says it ended a lease of member m:
// expired, or ended as it saw the member leave.
func (h *clusterHarness) ended(o, m int) bool {
	for _, l := range strings.Split(h.logs[o].String(), "\n") {
		if (strings.Contains(l, "lease expired") || strings.Contains(l, "member left; its leases end")) && strings.Contains(l, "member="+h.addr(m)) {
			return true
		}
	}
	return false
}

// A member cut off for longer than the providers' detection time (its own
// provider sees both others leave, and theirs see it leave, blocking its
// id for good) is no longer one of them: plugged back, it finds out (it
// still asks the addresses where members left for a hello, and they refuse
// the id they saw leave), exits as excluded, and, started again, joins as a
// new member and proves partitions. (On a loaded host it may find out while
// still cut off, every member it lists silent for three TTLs; it exits so
// too.)
func TestClusterLongNetworkCut(t *testing.T) {
	h, ctx := netnsCluster(t, 3)
	if h == nil {
		return
	}
	exited := make(chan error, 1)
	go func() { exited <- h.procs[2].Wait() }()
	cut, already := h.cutPast(2)
	healedAt := time.Now()
	if already {
		t.Logf("member 2 found itself excluded while still cut off (no member it lists answered for three TTLs), after %s", cut)
	}
	select {
	case err := <-exited:
		if err == nil || !h.excluded(2) {
			t.Fatalf("member 2 exited with %v and without saying it was excluded", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("member 2, plugged back, did not find itself excluded within 30 s")
	}
	if !already {
		t.Logf("member 2 cut off for %s (until it and the others saw each other leave), excluded %s after it was plugged back",
			cut, time.Since(healedAt).Round(10*time.Millisecond))
	}
	h.procs[2] = nil
	h.rejoin(ctx, 2)
	const n = 24
	seed := []byte("rejoined")
	got := h.await(ctx, 0, h.submit(ctx, 0, "rejoined", seed, n))
	per := h.check(got, seed, n)
	if per[h.addr(2)] == 0 {
		t.Fatalf("member 2 proved nothing after it rejoined: %v", per)
	}
	t.Logf("member 2 rejoined: proved per member %v", per)
}

// The owner cut off mid-job past the providers' detection time (it and the
// others see each other leave) carries on alone, proving partitions of its
// job itself; plugged back (or still cut off, on a loaded host, see
// cutPast), it finds itself excluded and exits; started again (as a
// supervisor would), it takes its job up from its store and finishes it,
// every partition proved once and verifying, and the next job is proved
// over all three members.
func TestClusterOwnerLongNetworkCut(t *testing.T) {
	h, ctx := netnsCluster(t, 3)
	if h == nil {
		return
	}
	id, seed, n := h.submitUntilProvedBy(ctx, "owner cut", 48, 2, "cut off")
	cut, already := h.cutPast(0)
	h.rejoinExcluded = true
	got := h.await(ctx, 0, id)
	per := h.check(got, seed, n)
	// The job may have ended before the owner found out (it proves alone
	// while cut off): it must find out all the same.
	for deadline := time.Now().Add(30 * time.Second); h.restarted[0] == 1 && !h.excluded(0); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the owner, plugged back, did not find itself excluded within 30 s")
		}
	}
	h.restartExcluded(ctx)
	when := "once plugged back"
	if already {
		when = "while still cut off (no member it listed answered for three TTLs)"
	}
	t.Logf("owner cut off for %s mid-job, excluded %s and started again: %d partitions proved per member %v, %d attempts",
		cut, when, n, per, got.Job.Attempts)
	t.Logf("the owner back as a new member: proved per member %v", h.provedByAll(ctx, "owner back", 24))
}

// Two members cut off from each other only (a route between two hosts
// lost, both still reaching the others): each sees the other leave, the
// others see nothing. Neither would list the other again, and neither is
// alone: the owner would never lease to member 2 again, a GPU idle for
// good. So a member asks the addresses where members left for a hello now
// and then (exclusion.go, rule 4); the other refuses it. Of the pair, the
// member at the lower address exits on that refusal and the other does not
// count it (rule 5): started again as a new member, it is listed by every
// member. The job finishes, every partition proved once; the other members
// and the pair's member at the higher address carry on; the next job is
// proved over all of them.
func TestClusterPairCut(t *testing.T) { pairCut(t, 3) }

// The same with four members, where one refusal of three others is not
// half (rule 1 alone would leave the pair apart for good).
func TestClusterPairCutOfFour(t *testing.T) { pairCut(t, 4) }

// pairCut cuts the owner (member 0) and member 2 of a cluster of members
// off from each other mid-job, and checks what TestClusterPairCut says.
func pairCut(t *testing.T, members int) {
	h, ctx := netnsCluster(t, members)
	if h == nil {
		return
	}
	id, seed, n := h.submitUntilProvedBy(ctx, "pair cut", 48, 2, "cut off from the owner")
	h.net.split(2, 0)
	cutAt := time.Now()
	for !h.sawLeave(0, 2) || !h.sawLeave(2, 0) {
		if time.Since(cutAt) > 60*time.Second {
			t.Fatal("members 0 and 2 did not see each other leave within 60 s of their split")
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.net.join(2, 0)
	cut := time.Since(cutAt).Round(10 * time.Millisecond)
	bystanders := []int{}
	for i := range members {
		if i != 0 && i != 2 {
			bystanders = append(bystanders, i)
			if h.sawLeave(i, 0) || h.sawLeave(i, 2) {
				t.Fatalf("member %d saw a member leave, though it reached both: the split was not between 0 and 2 only", i)
			}
		}
	}
	h.rejoinExcluded = true
	got := h.await(ctx, 0, id)
	per := h.check(got, seed, n)
	t.Logf("members 0 and 2 of %d cut off from each other for %s (until each saw the other leave): %d partitions proved per member %v, %d attempts",
		members, cut, n, per, got.Job.Attempts)
	pairOut := func() bool { return h.restarted[0] > 1 || h.restarted[2] > 1 || h.excluded(0) || h.excluded(2) }
	for deadline := time.Now().Add(30 * time.Second); !pairOut(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("neither of the pair found itself excluded within 30 s of their join: member 2 stays idle to the owner")
		}
	}
	// Both are refused before either exits: give the refusal of the one at
	// the higher address a couple of TTLs to take it out, were it counted.
	time.Sleep(2 * time.Second)
	h.restartExcluded(ctx)
	lower, higher := 0, 2
	if h.addr(2) < h.addr(0) {
		lower, higher = 2, 0
	}
	for _, i := range bystanders {
		if h.restarted[i] != 1 {
			t.Fatalf("member %d, which reached both, was started %d times", i, h.restarted[i])
		}
	}
	if h.restarted[higher] != 1 || h.restarted[lower] != 2 {
		t.Fatalf("started: member %d (the pair's lower address) %d time(s), member %d %d; want 2 and 1",
			lower, h.restarted[lower], higher, h.restarted[higher])
	}
	t.Logf("excluded and started again: member %d (the pair's lower address, %s) once, member %d (%s) never", lower, h.addr(lower), higher, h.addr(higher))
	t.Logf("the next job: proved per member %v", h.provedByAll(ctx, "pair joined", 24))
}

// provedByAll submits a job of n partitions to member 0 (key its
// idempotency key and seed), checks it (check), fails the test unless
// every member proved one of its partitions or more, and returns how many
// each proved.
func (h *clusterHarness) provedByAll(ctx context.Context, key string, n int) map[string]int {
	h.t.Helper()
	seed := []byte(key)
	per := h.check(h.await(ctx, 0, h.submit(ctx, 0, key, seed, n)), seed, n)
	for i := range h.procs {
		if per[h.addr(i)] == 0 {
			h.t.Fatalf("member %d proved nothing of job %q: %v", i, key, per)
		}
	}
	return per
}

// cutPast pulls member m's cable until its provider has seen every other
// member leave and theirs it, or until m finds itself excluded while still
// cut off (every member it lists silent for three TTLs, which a loaded host
// can reach first), plugs it back, and returns how long it was cut off and
// whether m found out while cut off.
func (h *clusterHarness) cutPast(m int) (time.Duration, bool) {
	h.t.Helper()
	h.net.cut(m)
	cutAt := time.Now()
	for !h.sawAllLeave(m) && !h.excluded(m) {
		if time.Since(cutAt) > 60*time.Second {
			h.t.Fatalf("member %d and the others did not see each other leave within 60 s of the cut", m)
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.net.heal(m)
	return time.Since(cutAt).Round(10 * time.Millisecond), h.excluded(m)
}

// sawAllLeave reports whether member m saw every other member leave and
// every other member saw m leave.
func (h *clusterHarness) sawAllLeave(m int) bool {
	for i := range h.procs {
		if i != m && (!h.sawLeave(m, i) || !h.sawLeave(i, m)) {
			return false
		}
	}
	return true
}

// sawLeave reports whether member i's log says it saw member m leave.
func (h *clusterHarness) sawLeave(i, m int) bool {
	for _, l := range strings.Split(h.logs[i].String(), "\n") {
		if strings.Contains(l, `msg="cluster: member left`) && strings.Contains(l, "member="+h.addr(m)) {
			return true
		}
	}
	return false
}
