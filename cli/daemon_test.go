package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
)

// syncBuffer is a buffer that the daemon writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// daemonProc is a cuzk daemon running in the test's process.
type daemonProc struct {
	url    string
	token  string // sent by call where set
	log    *syncBuffer
	stop   context.CancelFunc
	exited chan error
}

var servingRE = regexp.MustCompile(`msg=serving addr=(http://\S+)`)

// startDaemon runs cuzk daemon with args on 127.0.0.1:0 and returns once it
// serves.
func startDaemon(t *testing.T, args ...string) *daemonProc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemonProc{log: &syncBuffer{}, stop: cancel, exited: make(chan error, 1)}
	app := App()
	app.Writer, app.ErrWriter = io.Discard, d.log
	app.ExitErrHandler = func(*cli.Context, error) {}
	go func() {
		d.exited <- app.RunContext(ctx, append([]string{"cuzk", "daemon", "--listen", "127.0.0.1:0", "--backend", "cpu", "--workers", "2"}, args...))
	}()
	deadline := time.After(time.Minute)
	for {
		if m := servingRE.FindStringSubmatch(d.log.String()); m != nil {
			d.url = m[1]
			break
		}
		select {
		case err := <-d.exited:
			t.Fatalf("daemon exited before serving: %v\n%s", err, d.log)
		case <-deadline:
			cancel()
			t.Fatalf("daemon not serving after a minute:\n%s", d.log)
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Cleanup(func() { d.shutdown(t) })
	return d
}

// shutdown stops the daemon as SIGINT would and waits for it to exit.
func (d *daemonProc) shutdown(t *testing.T) {
	t.Helper()
	d.stop()
	select {
	case err, ok := <-d.exited:
		if !ok {
			return // stopped before
		}
		if err != nil {
			t.Errorf("daemon: %v\n%s", err, d.log)
		}
		close(d.exited)
	case <-time.After(time.Minute):
		t.Fatalf("daemon did not stop:\n%s", d.log)
	}
}

// call sends a request and decodes the JSON answer into out (if not nil);
// it returns the status code and the body.
func (d *daemonProc) call(t *testing.T, method, path, body string, out any) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, d.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if d.token != "" {
		req.Header.Set("Authorization", "Bearer "+d.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") && path != "/metrics" {
		t.Errorf("%s %s: Content-Type %q, want JSON", method, path, ct)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
	return resp.StatusCode, string(b)
}

// prove submits a job (POST /v1/jobs with body), waits for it to end done
// and returns its id.
func (d *daemonProc) prove(t *testing.T, body string) string {
	t.Helper()
	var sub struct {
		ID string `json:"job_id"`
	}
	if code, out := d.call(t, "POST", "/v1/jobs", body, &sub); code != http.StatusAccepted {
		t.Fatalf("submit: %d %s\n%s", code, out, d.log)
	}
	var js runner.JobStatus
	if code, out := d.call(t, "GET", "/v1/jobs/"+sub.ID+"/wait", "", &js); code != http.StatusOK || js.State != runner.StateDone {
		t.Fatalf("wait: %d %s", code, out)
	}
	return sub.ID
}

// A daemon forgets a job on DELETE /v1/jobs/{id}, and with --forget-ended
// every job that ended that long ago, by itself; the proof files under --out
// stay.
func TestDaemonForgetsEndedJobs(t *testing.T) {
	keys, out := t.TempDir(), t.TempDir()
	if _, stderr, err := run(t, "setup", "--circuit", "mimc", "--constraints", "2K", "--keys", keys); err != nil {
		t.Fatalf("setup: %v\n%s", err, stderr)
	}
	d := startDaemon(t, "--store", filepath.Join(t.TempDir(), "store"), "--keys", keys, "--out", out, "--forget-ended", "3s")
	prove := func(seed string) string {
		t.Helper()
		return d.prove(t, `{"circuit": "mimc", "constraints": "2K", "partitions": 1, "seed": "`+seed+`"}`)
	}
	asked := prove("01")
	var js runner.JobStatus
	if code, body := d.call(t, "DELETE", "/v1/jobs/"+asked, "", &js); code != http.StatusOK || js.ID != asked || js.State != runner.StateDone {
		t.Fatalf("delete an ended job: %d %s", code, body)
	}
	for _, method := range []string{"GET", "DELETE"} {
		if code, body := d.call(t, method, "/v1/jobs/"+asked, "", nil); code != http.StatusNotFound {
			t.Errorf("%s a forgotten job: %d %s, want 404", method, code, body)
		}
	}
	left := prove("02")
	if code, body := d.call(t, "GET", "/v1/jobs/"+left, "", nil); code != http.StatusOK {
		t.Fatalf("a job just ended: %d %s, want it kept for --forget-ended", code, body)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		code, _ := d.call(t, "GET", "/v1/jobs/"+left, "", nil)
		if code == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job is still there a minute after it ended (--forget-ended 3s): %d\n%s", code, d.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(d.log.String(), "forgot ended jobs") {
		t.Errorf("no log line for the forgotten job:\n%s", d.log)
	}
	for _, id := range []string{asked, left} {
		if _, err := os.Stat(filepath.Join(out, id, runner.ProofFile(0))); err != nil {
			t.Errorf("the proof file of forgotten job %s: %v", id, err)
		}
	}
}

// TestDaemon submits a job over HTTP (making its keys) and waits for it;
// checks that bad requests get 4xx JSON errors; then starts a daemon on a
// store that holds an unfinished job, which it must finish at start without
// proving again the partitions already proved.
func TestDaemon(t *testing.T) {
	keys, out := t.TempDir(), t.TempDir()
	// Jobs never run a setup: the keys are made first.
	if _, stderr, err := run(t, "setup", "--circuit", "mimc", "--constraints", "2K", "--keys", keys); err != nil {
		t.Fatalf("setup: %v\n%s", err, stderr)
	}
	storeA := filepath.Join(t.TempDir(), "store")
	d := startDaemon(t, "--store", storeA, "--keys", keys, "--out", out)

	var sub struct {
		ID string `json:"job_id"`
	}
	code, body := d.call(t, "POST", "/v1/jobs",
		`{"circuit": "mimc", "constraints": "2K", "partitions": 2, "seed": "5eed", "priority": "high"}`, &sub)
	if code != http.StatusAccepted || sub.ID == "" {
		t.Fatalf("submit: %d %s\n%s", code, body, d.log)
	}
	var js runner.JobStatus
	if code, body := d.call(t, "GET", "/v1/jobs/"+sub.ID+"/wait", "", &js); code != http.StatusOK {
		t.Fatalf("wait: %d %s", code, body)
	}
	if js.State != runner.StateDone || js.Proved != 2 || len(js.Partitions) != 2 || js.Priority != "HIGH" {
		t.Fatalf("after wait: %+v", js)
	}
	for _, p := range js.Partitions {
		if p.State != "proved" || p.Attempts != 1 || p.StagesMS["compute"] <= 0 {
			t.Errorf("partition %d: %+v", p.Index, p)
		}
	}
	var list []runner.JobStatus
	if code, _ := d.call(t, "GET", "/v1/jobs", "", &list); code != http.StatusOK || len(list) != 1 || list[0].ID != sub.ID || list[0].State != runner.StateDone {
		t.Errorf("list: %d %+v", code, list)
	}
	if code, body := d.call(t, "GET", "/metrics", "", nil); code != http.StatusOK || !strings.Contains(body, `cuzk_partitions_total{result="done"} 2`) {
		t.Errorf("metrics: %d\n%s", code, body)
	}

	for _, c := range []struct {
		method, path, body string
		code               int
	}{
		{"POST", "/v1/jobs", `not json`, 400},
		{"POST", "/v1/jobs", `{"circuit": "mimc", "constraints": 2048, "partitions": 1} {}`, 400},
		{"POST", "/v1/jobs", `{"constraints": "2K", "partitions": 1}`, 400},
		{"POST", "/v1/jobs", `{"circuit": "nope", "constraints": "2K", "partitions": 1}`, 400},
		{"POST", "/v1/jobs", `{"circuit": "mimc", "partitions": 1}`, 400},
		{"POST", "/v1/jobs", `{"circuit": "mimc", "constraints": "0", "partitions": 1}`, 400},
		{"POST", "/v1/jobs", `{"circuit": "mimc", "constraints": -5, "partitions": 1}`, 400},
		{"POST", "/v1/jobs", `{"circuit": "mimc", "constraints": "2K", "partitions": 0}`, 400},
		{"POST", "/v1/jobs", `{"circuit": "mimc", "constraints": "2K", "partitions": 1, "seed": "xyz"}`, 400},
		{"POST", "/v1/jobs", `{"circuit": "mimc", "constraints": "2K", "partitions": 1, "priority": "URGENT"}`, 400},
		{"POST", "/v1/jobs", `{"circuit": "mimc", "constraints": "2K", "partitions": 1, "colour": "blue"}`, 400},
		{"POST", "/v1/jobs", `{"circuit": "mimc", "constraints": "2K", "partitions": 1, "seed": "` + strings.Repeat("ab", maxRequestBytes) + `"}`, 413},
		{"POST", "/v1/jobs", `{"circuit": "mimc", "constraints": "1K", "partitions": 1}`, 422}, // no keys at 1K, no setup asked
		{"POST", "/v1/jobs", `{"circuit": "mimc", "constraints": "1K", "partitions": 1, "setup_if_missing": true}`, 400},
		{"POST", "/v1/jobs", `{"circuit": "mimc", "constraints": "2K", "partitions": 100001}`, 400},
		{"GET", "/v1/jobs/no-such-job", ``, 404},
		{"GET", "/v1/jobs/no-such-job/wait", ``, 404},
		{"POST", "/v1/jobs/no-such-job/retry", ``, 404},
		{"DELETE", "/v1/jobs/no-such-job", ``, 404},
		{"POST", "/v1/jobs/" + sub.ID + "/retry", ``, 409},  // nothing failed
		{"POST", "/v1/jobs/" + sub.ID + "/cancel", ``, 409}, // ended
		{"POST", "/v1/jobs/no-such-job/cancel", ``, 404},
		{"GET", "/v1/jobs/bad%20id", ``, 400},
		{"DELETE", "/v1/jobs", ``, 405},
		{"PUT", "/v1/jobs/" + sub.ID, ``, 405},
		{"GET", "/v2/jobs", ``, 404},
	} {
		code, body := d.call(t, c.method, c.path, c.body, nil)
		var e struct {
			Error string `json:"error"`
		}
		if code != c.code || json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
			t.Errorf("%s %s %.60s: %d %s, want %d with a JSON error", c.method, c.path, c.body, code, body, c.code)
		}
	}
	d.shutdown(t)

	// The store now holds the proofs of the daemon's job; a second store
	// gets an unfinished job of the same keys and seed, with partition 0
	// proved (the same proof), 1 synthesized by a process that is gone, and
	// 2 never started.
	a, err := store.Open(storeA, nil)
	if err != nil {
		t.Fatal(err)
	}
	doneJob, _ := a.Job(sub.ID)
	proofs, _ := a.Proofs(sub.ID)
	a.Close()
	if len(proofs) != 2 {
		t.Fatalf("the store holds %d proofs of %s, want 2", len(proofs), sub.ID)
	}
	storeB := filepath.Join(t.TempDir(), "store")
	b, err := store.Open(storeB, nil)
	if err != nil {
		t.Fatal(err)
	}
	left := doneJob
	left.ID, left.NumPartitions, left.Created = "left", 3, time.Time{}
	left.Params = map[string]string{runner.ParamTarget: doneJob.Params[runner.ParamTarget],
		runner.ParamKeys: doneJob.Params[runner.ParamKeys], runner.ParamOut: filepath.Join(t.TempDir(), "left")}
	if err := b.CreateJob(left); err != nil {
		t.Fatal(err)
	}
	mustAttempt(t, b, "left", 0)
	if err := b.MarkProved("left", 0, proofs[0].Proof, proofs[0].Public, nil); err != nil {
		t.Fatal(err)
	}
	mustAttempt(t, b, "left", 1)
	if err := b.MarkSynthesized("left", 1); err != nil {
		t.Fatal(err)
	}
	b.Close()

	d2 := startDaemon(t, "--store", storeB, "--keys", keys, "--out", out)
	if !strings.Contains(d2.log.String(), "msg=\"resumed job\" job=left left=2 partitions=3") {
		t.Errorf("the daemon did not say what it resumed:\n%s", d2.log)
	}
	if code, body := d2.call(t, "GET", "/v1/jobs/left/wait", "", &js); code != http.StatusOK || js.State != runner.StateDone {
		t.Fatalf("wait for the resumed job: %d %s", code, body)
	}
	for i, want := range []int{1, 2, 1} {
		if got := js.Partitions[i].Attempts; got != want || js.Partitions[i].State != "proved" {
			t.Errorf("partition %d: %s after %d attempts, want proved after %d", i, js.Partitions[i].State, got, want)
		}
	}
	d2.shutdown(t)

	// Every proof of the resumed job, exported from the store, verifies.
	exported := t.TempDir()
	if _, stderr, err := run(t, "job", "proofs", "left", "--store", storeB, "--out", exported); err != nil {
		t.Fatalf("export: %v\n%s", err, stderr)
	}
	args := []string{"verify", "--keys", doneJob.Params[runner.ParamKeys]}
	for i := range 3 {
		args = append(args, filepath.Join(exported, runner.ProofFile(i)))
	}
	if stdout, _, err := run(t, args...); err != nil || strings.Count(stdout, ": ok") != 3 {
		t.Fatalf("verify the resumed job's proofs: %v\n%s", err, stdout)
	}
	if !bytes.Equal(mustPartition(t, storeB, "left", 0).Proof, proofs[0].Proof) {
		t.Error("partition 0 was proved before the daemon started, and its proof changed")
	}
}

func mustAttempt(t *testing.T, st *store.Store, id string, idx int) {
	t.Helper()
	if _, err := st.StartAttempt(id, idx); err != nil {
		t.Fatal(err)
	}
}

func mustPartition(t *testing.T, dir, id string, idx int) store.Partition {
	t.Helper()
	st, err := store.Open(dir, &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	parts, err := st.Partitions(id)
	if err != nil || len(parts) <= idx {
		t.Fatalf("partitions of %s: %v", id, err)
	}
	return parts[idx]
}

// TestDaemonStopsOnSIGTERM runs cuzk daemon as a process, sends it SIGTERM
// while a job is half proved, and starts it again: the first must answer the
// waiting client, exit 0 and leave the job unfinished in the store; the
// second must finish it without proving again what the first proved.
func TestDaemonStopsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and signals a real process")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "cuzk")
	began := time.Now()
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/cuzk").CombinedOutput(); err != nil {
		t.Fatalf("build cuzk: %v\n%s", err, out)
	}
	keys, st := filepath.Join(dir, "keys"), filepath.Join(dir, "store")
	t.Logf("built in %s", time.Since(began))
	if out, err := exec.Command(bin, "setup", "--circuit", "mimc", "--constraints", "2K", "--keys", keys).CombinedOutput(); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	start := func() (*exec.Cmd, *daemonProc) {
		cmd := exec.Command(bin, "daemon", "--store", st, "--keys", keys, "--out", filepath.Join(dir, "out"),
			"--listen", "127.0.0.1:0", "--backend", "cpu", "--workers", "1")
		d := &daemonProc{log: &syncBuffer{}}
		cmd.Stderr = d.log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		for deadline := time.Now().Add(time.Minute); d.url == ""; time.Sleep(5 * time.Millisecond) {
			if m := servingRE.FindStringSubmatch(d.log.String()); m != nil {
				d.url = m[1]
			}
			if time.Now().After(deadline) {
				t.Fatalf("daemon not serving:\n%s", d.log)
			}
		}
		return cmd, d
	}

	cmd, d := start()
	var sub struct {
		ID string `json:"job_id"`
	}
	if code, body := d.call(t, "POST", "/v1/jobs", `{"circuit": "mimc", "constraints": "2K", "partitions": 12}`, &sub); code != http.StatusAccepted {
		t.Fatalf("submit: %d %s", code, body)
	}
	var js runner.JobStatus
	for deadline := time.Now().Add(time.Minute); js.Proved < 2; time.Sleep(10 * time.Millisecond) {
		d.call(t, "GET", "/v1/jobs/"+sub.ID, "", &js)
		if time.Now().After(deadline) {
			t.Fatalf("no progress: %+v\n%s", js, d.log)
		}
	}
	waited := make(chan int, 1)
	go func() {
		resp, err := http.Get(d.url + "/v1/jobs/" + sub.ID + "/wait")
		if err != nil {
			waited <- 0
			return
		}
		resp.Body.Close()
		waited <- resp.StatusCode
	}()
	time.Sleep(50 * time.Millisecond) // let the wait begin
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("daemon after SIGTERM: %v\n%s", err, d.log)
	}
	if code := <-waited; code != http.StatusServiceUnavailable && code != http.StatusOK {
		t.Errorf("a client waiting through the stop got %d, want 503 (or 200 had the job finished)", code)
	}
	if !strings.Contains(d.log.String(), "left for the next start") {
		t.Errorf("the daemon did not say what it left:\n%s", d.log)
	}
	before := storeState(t, st)
	if len(before) == 12 {
		t.Skip("the job finished before the stop; nothing to resume")
	}

	t.Logf("stopped after %s with %d of 12 proved", time.Since(began), len(before))
	_, d2 := start()
	if code, body := d2.call(t, "GET", "/v1/jobs/"+sub.ID+"/wait", "", &js); code != http.StatusOK || js.State != runner.StateDone {
		t.Fatalf("wait after the restart: %d %s\n%s", code, body, d2.log)
	}
	for _, p := range js.Partitions {
		if b, ok := before[p.Index]; ok && b.Attempts != p.Attempts {
			t.Errorf("partition %d was proved before the stop and again after (attempts %d → %d)", p.Index, b.Attempts, p.Attempts)
		}
	}
}
