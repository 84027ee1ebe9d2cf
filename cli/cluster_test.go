package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/cuzk/cuzk/circuits"
	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/gen/cuzk/v1/cuzkv1connect"
	"github.com/cuzk/cuzk/internal/testenv"
	"github.com/cuzk/cuzk/prover"
)

// clusterHarness runs cuzk daemons on loopback ports that form one cluster
// (static provider), each on one emulated device with the CPU backend,
// sharing one key directory. With net set, each daemon runs in its own
// network namespace instead, at its own address (see testNet).
type clusterHarness struct {
	t         *testing.T
	bin, dir  string
	keys      string
	k         *prover.Keys
	api       []int
	remote    []int
	health    []int
	procs     []*exec.Cmd
	logs      []*syncBuffer
	restarted []int  // how many times each was started
	etcd      string // etcd's client URL: members find each other there instead of by a static list
	extra     map[int][]string
	net       *testNet
	// rejoinExcluded: await starts again, as new members, the daemons that
	// exited as excluded (restartExcluded) instead of waiting for them.
	rejoinExcluded bool
}

// freePorts returns n ports free on 127.0.0.1 now (testenv.FreePorts).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	return testenv.FreePorts(t, n)
}

func newClusterHarness(t *testing.T, n int) *clusterHarness {
	t.Helper()
	dir := t.TempDir()
	h := &clusterHarness{t: t, dir: dir, bin: filepath.Join(dir, "cuzk"), keys: filepath.Join(dir, "keys"),
		procs: make([]*exec.Cmd, n), logs: make([]*syncBuffer, n), restarted: make([]int, n)}
	if out, err := exec.Command("go", "build", "-o", h.bin, "../cmd/cuzk").CombinedOutput(); err != nil {
		t.Fatalf("build cuzk: %v\n%s", err, out)
	}
	if out, err := exec.Command(h.bin, "setup", "--circuit", "mimc", "--constraints", "1K", "--keys", h.keys, "--keygen", "gnark").CombinedOutput(); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	layout, _ := circuits.MiMCChain{}.Layout(1024)
	k, err := prover.Load(prover.KeyDir(h.keys, "mimc", 1024), "mimc", layout)
	if err != nil {
		t.Fatal(err)
	}
	h.k = k
	ports := freePorts(t, 3*n)
	h.api, h.remote, h.health = ports[:n], ports[n:2*n], ports[2*n:]
	t.Cleanup(func() {
		for i := range h.procs {
			h.kill(i)
		}
		if t.Failed() {
			for i, l := range h.logs {
				if l != nil {
					t.Logf("daemon %d log:\n%s", i, tail(l.String(), 4000))
				}
			}
		}
		// CUZK_CLUSTER_LOGS=DIR keeps every daemon's whole log there.
		if dir := os.Getenv("CUZK_CLUSTER_LOGS"); dir != "" {
			for i, l := range h.logs {
				if l == nil {
					continue
				}
				f := filepath.Join(dir, fmt.Sprintf("%s-daemon%d.log", strings.ReplaceAll(t.Name(), "/", "_"), i))
				if err := os.WriteFile(f, []byte(l.String()), 0o644); err != nil {
					t.Errorf("keeping daemon %d's log: %v", i, err)
				}
			}
		}
	})
	return h
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// host is daemon i's address: loopback, or its namespace's with net set.
func (h *clusterHarness) host(i int) string {
	if h.net != nil {
		return h.net.host(i)
	}
	return "127.0.0.1"
}

func (h *clusterHarness) addr(i int) string { return fmt.Sprintf("%s:%d", h.host(i), h.remote[i]) }

// start starts daemon i and waits until it serves.
func (h *clusterHarness) start(i int) {
	h.t.Helper()
	var peers []string
	for j, p := range h.health {
		peers = append(peers, fmt.Sprintf("%s:%d", h.host(j), p))
	}
	cmd := exec.Command(h.bin, "daemon", "--store", filepath.Join(h.dir, fmt.Sprintf("store%d", i)), "--keys", h.keys,
		"--out", filepath.Join(h.dir, fmt.Sprintf("out%d", i)), "--listen", h.listen(i),
		"--backend", "cpu", "--workers", "1", "--drain-timeout", "2s", "--evict-idle", "0",
		"--cluster", "test", "--cluster-listen", h.addr(i), "--lease-ttl", "1s")
	cmd.Args = append(cmd.Args, h.extra[i]...)
	if h.etcd != "" {
		cmd.Args = append(cmd.Args, "--cluster-provider", "etcd", "--etcd", h.etcd)
	} else {
		cmd.Args = append(cmd.Args, "--cluster-health", peers[i], "--peers", strings.Join(peers, ","))
	}
	if h.net != nil {
		h.net.enter(cmd, i)
	}
	log := &syncBuffer{}
	cmd.Stderr, cmd.Stdout = log, log
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.procs[i], h.logs[i] = cmd, log
	h.restarted[i]++
	h.waitLog(i, "msg=serving", 30*time.Second)
}

// waitLog waits until daemon i's log (of its current run) holds s.
func (h *clusterHarness) waitLog(i int, s string, within time.Duration) {
	h.t.Helper()
	for deadline := time.Now().Add(within); !strings.Contains(h.logs[i].String(), s); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			h.t.Fatalf("daemon %d: no %q in its log within %s", i, s, within)
		}
	}
}

// startAll starts every daemon, then waits until each sees all members.
func (h *clusterHarness) startAll() {
	for i := range h.remote {
		h.start(i)
	}
	for i := range h.remote {
		h.waitMembers(i)
	}
}

// waitMembers waits until daemon i has seen every member up (in any run of
// theirs: a member started again is rejoin's).
func (h *clusterHarness) waitMembers(i int) {
	h.t.Helper()
	for j := range h.procs {
		h.waitLog(i, "msg=\"cluster: member up\" member="+h.addr(j), 30*time.Second)
	}
}

// rejoin starts the members given again, once exited, and waits until each
// sees every member up and every member running on sees it up again (its
// log of the earlier run already says so once).
func (h *clusterHarness) rejoin(ctx context.Context, again ...int) {
	h.t.Helper()
	up := func(i int) string { return `msg="cluster: member up" member=` + h.addr(i) }
	type seen struct{ by, of int }
	before := map[seen]int{}
	for _, i := range again {
		for j, p := range h.procs {
			if p != nil {
				before[seen{j, i}] = strings.Count(h.logs[j].String(), up(i))
			}
		}
	}
	for _, i := range again {
		h.start(i)
	}
	for _, i := range again {
		h.waitMembers(i)
	}
	for k, n := range before {
		for strings.Count(h.logs[k.by].String(), up(k.of)) == n {
			if err := ctx.Err(); err != nil {
				h.t.Fatalf("member %d did not see member %d up again: %v", k.by, k.of, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// kill SIGKILLs daemon i, if it runs.
func (h *clusterHarness) kill(i int) {
	if p := h.procs[i]; p != nil {
		p.Process.Signal(syscall.SIGCONT)
		p.Process.Kill()
		p.Wait()
		h.procs[i] = nil
	}
}

// listen is daemon i's API address: a loopback port, or with net set a
// unix socket, which the test reaches whatever network namespace the
// daemon is in.
func (h *clusterHarness) listen(i int) string {
	if h.net != nil {
		return "unix:" + h.socket(i)
	}
	return fmt.Sprintf("127.0.0.1:%d", h.api[i])
}

func (h *clusterHarness) socket(i int) string {
	return filepath.Join(h.dir, fmt.Sprintf("api%d.sock", i))
}

func (h *clusterHarness) client(i int) cuzkv1connect.ProvingEngineClient {
	if h.net != nil {
		path := h.socket(i)
		c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}}}
		return cuzkv1connect.NewProvingEngineClient(c, fmt.Sprintf("http://member%d", i))
	}
	return cuzkv1connect.NewProvingEngineClient(http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d", h.api[i]))
}

// submit submits a job of n partitions to daemon i and returns its id.
func (h *clusterHarness) submit(ctx context.Context, i int, key string, seed []byte, n int) string {
	h.t.Helper()
	resp, err := h.client(i).SubmitProof(ctx, connect.NewRequest(&cuzkv1.SubmitProofRequest{IdempotencyKey: key,
		Circuit: &cuzkv1.SubmitProofRequest_Example{Example: &cuzkv1.ExampleCircuit{
			Keys: &cuzkv1.KeySetRef{Circuit: "mimc", Constraints: 1024}, Seed: seed}},
		Partitions: uint32(n)}))
	if err != nil {
		h.t.Fatalf("submit to daemon %d: %v", i, err)
	}
	return resp.Msg.JobId
}

// await waits on daemon i for job id, retrying while the daemon restarts.
func (h *clusterHarness) await(ctx context.Context, i int, id string) *cuzkv1.AwaitProofResponse {
	h.t.Helper()
	for {
		resp, err := h.client(i).AwaitProof(ctx, connect.NewRequest(&cuzkv1.AwaitProofRequest{JobId: id, Timeout: durationpb.New(5 * time.Second)}))
		if err == nil && !resp.Msg.TimedOut {
			return resp.Msg
		}
		if ctx.Err() != nil {
			h.t.Fatalf("job %s on daemon %d: not done: %v", id, i, ctx.Err())
		}
		if err != nil {
			if h.rejoinExcluded {
				h.restartExcluded(ctx)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// excluded reports whether daemon i's log (of its current run) says it
// found itself excluded.
func (h *clusterHarness) excluded(i int) bool {
	return strings.Contains(h.logs[i].String(), "cluster: excluded")
}

// restartExcluded starts again, as new members, the daemons whose log says
// they found themselves excluded (they exit then, with an error), waits
// until they and the others see each other up (rejoin), and returns which
// it started.
func (h *clusterHarness) restartExcluded(ctx context.Context) []int {
	h.t.Helper()
	var again []int
	for i, p := range h.procs {
		if p == nil || !h.excluded(i) {
			continue
		}
		if err := p.Wait(); err == nil {
			h.t.Fatalf("member %d, excluded, exited with status 0", i)
		}
		h.procs[i] = nil
		again = append(again, i)
	}
	h.rejoin(ctx, again...)
	return again
}

// job returns job id's status on daemon i.
func (h *clusterHarness) job(ctx context.Context, i int, id string) (*cuzkv1.JobStatus, error) {
	resp, err := h.client(i).GetJob(ctx, connect.NewRequest(&cuzkv1.GetJobRequest{JobId: id}))
	if err != nil {
		return nil, err
	}
	return resp.Msg, nil
}

// waitProvedBy waits until member m has proved a partition of job id while
// the job is still running, so that m holds leases when the caller strikes
// (what names the strike in the failure).
func (h *clusterHarness) waitProvedBy(ctx context.Context, id string, m int, what string) {
	h.t.Helper()
	for {
		js, err := h.job(ctx, 0, id)
		if err != nil {
			h.t.Fatal(err)
		}
		if js.State == cuzkv1.JobState_JOB_STATE_DONE {
			h.t.Fatalf("the job ended before member %d could be %s in its middle", m, what)
		}
		for _, p := range js.Partitions {
			if p.State == "proved" && p.Member == h.addr(m) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// submitUntilProvedBy submits to member 0 a job keyed key (its seed too) of
// CUZK_CLUSTER_PARTITIONS partitions, n unless set, and returns once member m
// has proved one of them (waitProvedBy; what is what is done to m next): m
// holds leases then, with partitions waiting for its slots.
func (h *clusterHarness) submitUntilProvedBy(ctx context.Context, key string, n, m int, what string) (id string, seed []byte, count int) {
	h.t.Helper()
	count = testenv.Count(h.t, "CUZK_CLUSTER_PARTITIONS", n)
	seed = []byte(key)
	id = h.submit(ctx, 0, key, seed, count)
	h.waitProvedBy(ctx, id, m, what)
	return id, seed, count
}

// check asserts that the job is done with one proof per partition, each
// verifying against the public inputs its partition's witness gives, and
// returns how many partitions each member proved.
func (h *clusterHarness) check(got *cuzkv1.AwaitProofResponse, seed []byte, n int) map[string]int {
	h.t.Helper()
	if got.Job.State != cuzkv1.JobState_JOB_STATE_DONE || int(got.Job.Proved) != n || len(got.Proofs) != n {
		h.t.Fatalf("job %s: state %s, %d proved, %d proofs, want done with %d: %s", got.Job.JobId, got.Job.State, got.Job.Proved, len(got.Proofs), n, got.Job.Error)
	}
	for _, p := range got.Proofs {
		w, err := prover.Witness(h.k, seed, int(p.Index))
		if err != nil {
			h.t.Fatal(err)
		}
		pub, _ := w.Public()
		want, _ := pub.MarshalBinary()
		if string(want) != string(p.PublicInputs) {
			h.t.Fatalf("partition %d: the public inputs are not its witness's", p.Index)
		}
		if err := verifyBytes(h.k.VK, p.Proof, p.PublicInputs); err != nil {
			h.t.Fatalf("partition %d: %v", p.Index, err)
		}
	}
	per := map[string]int{}
	for _, p := range got.Job.Partitions {
		if p.Member == "" {
			h.t.Fatalf("partition %d: no member recorded", p.Index)
		}
		per[p.Member]++
	}
	return per
}

// A job submitted to one member of three is proved over all three; a
// non-owner SIGKILLed in the middle costs only the partitions it ran.
func TestClusterSpreadsAndSurvivesAMemberKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cuzk and runs three daemons")
	}
	h := newClusterHarness(t, 3)
	tracePath := filepath.Join(h.dir, "owner-trace.json")
	h.extra = map[int][]string{0: {"--trace", tracePath}}
	h.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seed := []byte("spread")
	id := h.submit(ctx, 0, "spread", seed, 30)
	// GetStatus on the owner shows the job's partitions leased to members.
	for {
		resp, err := h.client(0).GetStatus(ctx, connect.NewRequest(&cuzkv1.GetStatusRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		cs := resp.Msg.Cluster
		if cs == nil || cs.Name != "test" || cs.Member != h.addr(0) {
			t.Fatalf("GetStatus cluster %v: want cluster test seen from %s", cs, h.addr(0))
		}
		leasedTo := 0
		for _, m := range cs.Members {
			if m.Leases > 0 && len(m.Jobs) == 1 && m.Jobs[0] == id {
				leasedTo++
			}
		}
		if leasedTo >= 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Kill member 2 once it has proved a partition and the job is not
	// done: it was given work, and loses what it runs.
	h.waitProvedBy(ctx, id, 2, "killed")
	h.kill(2)
	got := h.await(ctx, 0, id)
	per := h.check(got, seed, 30)
	for i := range 3 {
		if per[h.addr(i)] == 0 {
			t.Errorf("member %d proved no partition: %v", i, per)
		}
	}
	t.Logf("30 partitions over 3 members, member 2 killed mid-job: proved per member %v, %d attempts", per, got.Job.Attempts)
	// Each member's metrics count what it ran; the owner's what it
	// leased and recorded.
	for i := range 2 {
		resp, err := h.client(i).GetMetrics(ctx, connect.NewRequest(&cuzkv1.GetMetricsRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		text := resp.Msg.Text
		if !strings.Contains(text, `cuzk_cluster_leases_run_total{outcome="proved"}`) {
			t.Errorf("daemon %d: no leases run in its metrics:\n%s", i, text)
		}
		if i == 0 && !strings.Contains(text, `cuzk_cluster_results_total{outcome="recorded"} 30`) {
			t.Errorf("owner: not 30 results recorded in its metrics:\n%s", text)
		}
	}
	// The owner's trace has the partitions on every member's device.
	h.procs[0].Process.Signal(os.Interrupt)
	if err := h.procs[0].Wait(); err != nil {
		t.Fatalf("owner stopped with %v", err)
	}
	h.procs[0] = nil
	checkClusterTrace(t, tracePath, []string{h.addr(0), h.addr(1), h.addr(2)})
	// The owner's store says where each partition ran.
	out, err := exec.Command(h.bin, "job", "show", id, "--store", filepath.Join(h.dir, "store0")).CombinedOutput()
	if err != nil {
		t.Fatalf("job show: %v\n%s", err, out)
	}
	for i := range 3 {
		if want := h.addr(i) + " device 0 worker 0"; !strings.Contains(string(out), want) {
			t.Errorf("job show does not name %q:\n%s", want, out)
		}
	}
}

// Members and owners SIGKILLed (and restarted) at random points of jobs,
// and a member cut off (its process stopped: every connection to it
// silent) until its leases expire: every job finishes with every partition
// proved once and verifying.
func TestClusterKillsAtRandomPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cuzk and runs three daemons")
	}
	rounds := testenv.Count(t, "CUZK_CLUSTER_ROUNDS", 10)
	h := newClusterHarness(t, 3)
	h.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	const n = 12
	for round := range rounds {
		seed := fmt.Appendf(nil, "round-%d", round)
		id := h.submit(ctx, 0, fmt.Sprintf("round-%d", round), seed, n)
		time.Sleep(time.Duration(r.IntN(800)) * time.Millisecond)
		victim := r.IntN(3)
		how := "SIGKILL"
		if round == rounds-1 {
			victim, how = 1+r.IntN(2), "cut off"
		}
		switch {
		case how == "cut off":
			p := h.procs[victim].Process
			if err := p.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			got := h.await(ctx, 0, id)
			per := h.check(got, seed, n)
			t.Logf("round %d: member %d cut off: proved per member %v, %d attempts", round, victim, per, got.Job.Attempts)
			// Cut off long enough for the others to see it leave, it
			// finds itself excluded once back, and exits; started
			// again, it joins as a new member and takes leases.
			time.Sleep(5 * time.Second)
			p.Signal(syscall.SIGCONT)
			exited := make(chan error, 1)
			go func() { exited <- h.procs[victim].Wait() }()
			select {
			case err := <-exited:
				if err == nil || !h.excluded(victim) {
					t.Fatalf("member %d exited with %v and without saying it was excluded", victim, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("member %d did not find itself excluded", victim)
			}
			h.procs[victim] = nil
			h.rejoin(ctx, victim)
			seed := fmt.Appendf(nil, "healed-%d", round)
			got = h.await(ctx, 0, h.submit(ctx, 0, fmt.Sprintf("healed-%d", round), seed, 30))
			per = h.check(got, seed, 30)
			if per[h.addr(victim)] == 0 {
				t.Fatalf("member %d proved nothing after it came back: %v", victim, per)
			}
			t.Logf("after: member %d back: proved per member %v", victim, per)
			continue
		default:
			h.kill(victim)
			h.start(victim)
		}
		got := h.await(ctx, 0, id)
		per := h.check(got, seed, n)
		t.Logf("round %d: %s of member %d (owner: %v): proved per member %v, %d attempts", round, how, victim, victim == 0, per, got.Job.Attempts)
	}
}

// A job of witness files (a circuit made outside cuzk) submitted to one
// member of three is leased over the members too: each lease carries its
// partition's witness, each member loads the key set by its name under its
// own --keys (one directory here, as on one host), and every proof verifies.
func TestClusterSpreadsAWitnessFileJob(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cuzk and runs three daemons")
	}
	h := newClusterHarness(t, 3)
	h.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 12
	seed := []byte("outside")
	var ws [][]byte
	for i := range n {
		w, err := prover.Witness(h.k, seed, i)
		if err != nil {
			t.Fatal(err)
		}
		b, err := w.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, b)
	}
	resp, err := h.client(0).SubmitProof(ctx, connect.NewRequest(&cuzkv1.SubmitProofRequest{IdempotencyKey: "outside",
		Circuit: &cuzkv1.SubmitProofRequest_Outside{Outside: &cuzkv1.OutsideCircuit{
			KeySet: filepath.Base(prover.KeyDir(h.keys, "mimc", 1024)), Witnesses: ws}}}))
	if err != nil {
		t.Fatal(err)
	}
	got := h.await(ctx, 0, resp.Msg.JobId)
	per := h.check(got, seed, n)
	if len(per) < 2 {
		t.Fatalf("a job of %d witness files proved on %d member(s), want two or more: %v", n, len(per), per)
	}
	t.Logf("%d witness files over 3 members: proved per member %v, %d attempts", n, per, got.Job.Attempts)
}

// startEtcd runs Debian's etcd on loopback ports for the test and returns
// its client URL. Without the binary the test is skipped, unless
// CUZK_REQUIRE_ETCD=1 (CI installs etcd-server).
func startEtcd(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("CUZK_REQUIRE_ETCD") == "1" {
			t.Fatal("CUZK_REQUIRE_ETCD=1 but no etcd binary (apt-get install etcd-server)")
		}
		t.Skip("no etcd binary (apt-get install etcd-server); CUZK_REQUIRE_ETCD=1 makes this a failure")
	}
	ports := freePorts(t, 2)
	client, peer := fmt.Sprintf("http://127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cmd := exec.Command(bin, "--name", "test", "--data-dir", filepath.Join(t.TempDir(), "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "test="+peer)
	log := &syncBuffer{}
	cmd.Stderr, cmd.Stdout = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(log.String(), "ready to serve client requests"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("etcd not ready:\n%s", log)
		}
	}
	return client
}

// Members that find each other through etcd prove a job together, and one
// SIGKILLed mid-job costs only its partitions.
func TestClusterOverEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cuzk and runs etcd and three daemons")
	}
	etcd := startEtcd(t)
	h := newClusterHarness(t, 3)
	h.etcd = etcd
	h.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seed := []byte("etcd")
	id := h.submit(ctx, 0, "etcd", seed, 12)
	time.Sleep(300 * time.Millisecond)
	h.kill(1)
	got := h.await(ctx, 0, id)
	per := h.check(got, seed, 12)
	t.Logf("12 partitions over 3 members found through etcd, member 1 killed: proved per member %v, %d attempts", per, got.Job.Attempts)

	// A job cancelled on its owner mid-way: its proved partitions stay,
	// the others are cancelled, and nothing more is leased.
	id = h.submit(ctx, 0, "cancel", []byte("cancel"), 30)
	for {
		js, err := h.job(ctx, 0, id)
		if err != nil {
			t.Fatal(err)
		}
		if js.Proved > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := h.client(0).CancelProof(ctx, connect.NewRequest(&cuzkv1.CancelProofRequest{JobId: id})); err != nil {
		t.Fatal(err)
	}
	got = h.await(ctx, 0, id)
	if got.Job.State != cuzkv1.JobState_JOB_STATE_CANCELLED || got.Job.Proved == 0 || got.Job.Proved == 30 {
		t.Fatalf("cancelled job: state %s with %d proved, want cancelled with some proved", got.Job.State, got.Job.Proved)
	}
	proved := got.Job.Proved
	time.Sleep(1500 * time.Millisecond)
	if js, err := h.job(ctx, 0, id); err != nil || js.Proved != proved {
		t.Fatalf("after the cancel: %v proved (was %d), %v", js.GetProved(), proved, err)
	}
}

// checkClusterTrace asserts that the trace at path is JSON with a process of
// stage spans for device 0 of every member.
func checkClusterTrace(t *testing.T, path string, members []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Pid  int            `json:"pid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("trace: %v", err)
	}
	names := map[int]string{}
	computes := map[int]int{}
	for _, e := range doc.TraceEvents {
		if e.Name == "process_name" {
			names[e.Pid], _ = e.Args["name"].(string)
		}
		if e.Ph == "X" && e.Name == "compute" {
			computes[e.Pid]++
		}
	}
	for _, m := range members {
		found := false
		for pid, name := range names {
			if name == "member "+m+" device 0" && computes[pid] > 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("trace: no compute spans of member %s device 0; processes %v", m, names)
		}
	}
}
