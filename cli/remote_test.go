package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	"github.com/cuzk/cuzk/runner"
)

// cuzk jobs and cuzk job ask a running daemon with --daemon, carrying its
// token: list, show, export proofs that verify, refuse a retry or a cancel
// the job's state does not allow, and forget.
func TestJobsAskTheDaemon(t *testing.T) {
	keys, out, exported := t.TempDir(), t.TempDir(), t.TempDir()
	if _, stderr, err := run(t, "setup", "--circuit", "mimc", "--constraints", "2K", "--keys", keys); err != nil {
		t.Fatalf("setup: %v\n%s", err, stderr)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "--store", filepath.Join(t.TempDir(), "store"), "--keys", keys, "--out", out, "--auth-token-file", tokenFile)
	d.token = "0123456789abcdef0123456789abcdef"
	var ids []string
	for _, key := range []string{"a", "b"} {
		ids = append(ids, d.prove(t, `{"circuit": "mimc", "constraints": "2K", "partitions": 2, "idempotency_key": "`+key+`"}`))
	}
	ask := []string{"--daemon", d.url, "--auth-token-file", tokenFile}

	// The JSON API's cancel, beside CancelProof.
	var long struct {
		ID string `json:"job_id"`
	}
	if code, body := d.call(t, "POST", "/v1/jobs", `{"circuit": "mimc", "constraints": "2K", "partitions": 400}`, &long); code != http.StatusAccepted {
		t.Fatalf("submit: %d %s", code, body)
	}
	if code, body := d.call(t, "POST", "/v1/jobs/"+long.ID+"/cancel", "", nil); code != http.StatusAccepted {
		t.Errorf("cancel a running job: %d %s, want 202", code, body)
	}
	var js runner.JobStatus
	if code, body := d.call(t, "GET", "/v1/jobs/"+long.ID+"/wait", "", &js); code != http.StatusOK || js.State != runner.StateCancelled {
		t.Errorf("the cancelled job: %d %s", code, body)
	}
	if code, body := d.call(t, "DELETE", "/v1/jobs/"+long.ID, "", nil); code != http.StatusOK {
		t.Fatalf("forget the cancelled job: %d %s", code, body)
	}

	if _, _, err := run(t, "jobs", "--daemon", d.url); err == nil || !strings.Contains(err.Error(), "give its token with --auth-token-file") {
		t.Errorf("jobs without the token: %v, want the token asked for", err)
	}
	stdout, stderr, err := run(t, append([]string{"jobs"}, ask...)...)
	if err != nil {
		t.Fatalf("jobs --daemon: %v\n%s", err, stderr)
	}
	for _, id := range ids {
		if !strings.Contains(stdout, id) {
			t.Errorf("jobs --daemon does not list %s:\n%s", id, stdout)
		}
	}
	t.Logf("cuzk jobs --daemon %s:\n%s", d.url, stdout)
	stdout, _, err = run(t, append([]string{"jobs", "--json"}, ask...)...)
	var rows []jobJSON
	if err != nil || json.Unmarshal([]byte(stdout), &rows) != nil || len(rows) != 2 {
		t.Fatalf("jobs --daemon --json: %v\n%s", err, stdout)
	}
	for i, r := range rows {
		if r.ID != ids[i] || r.Status != "done" || r.Proved != 2 || r.Circuit != "mimc" || r.Priority != "NORMAL" {
			t.Errorf("row %d: %+v, want job %s done with 2 proved, oldest first", i, r, ids[i])
		}
	}

	stdout, stderr, err = run(t, append([]string{"status"}, ask...)...)
	if err != nil || !strings.Contains(stdout, "backend cpu, design budget") || !strings.Contains(stdout, "the store's jobs: 2 (0 running, 2 done") {
		t.Errorf("status --daemon: %v\n%s%s", err, stdout, stderr)
	}
	t.Logf("cuzk status --daemon %s:\n%s", d.url, stdout)
	stdout, _, err = run(t, append([]string{"status", "--json"}, ask...)...)
	var st struct {
		Backend string `json:"backend"`
		Totals  struct {
			JobsDone int `json:"jobsDone"`
		} `json:"totals"`
	}
	if err != nil || json.Unmarshal([]byte(stdout), &st) != nil || st.Backend != "cpu" || st.Totals.JobsDone != 2 {
		t.Errorf("status --daemon --json: %v %+v\n%s", err, st, stdout)
	}
	if _, _, err := run(t, "status"); err == nil || !strings.Contains(err.Error(), "--daemon is required") {
		t.Errorf("status without --daemon: %v", err)
	}

	stdout, stderr, err = run(t, append([]string{"job", "show", ids[0]}, ask...)...)
	if err != nil || !strings.Contains(stdout, "job "+ids[0]+": circuit mimc") || strings.Count(stdout, "proved") != 2 {
		t.Errorf("job show --daemon: %v\n%s%s", err, stdout, stderr)
	}
	t.Logf("cuzk job show %s --daemon:\n%s", ids[0], stdout)
	if _, stderr, err := run(t, append([]string{"job", "proofs", ids[0], "--out", exported}, ask...)...); err != nil || !strings.Contains(stderr, "2 proofs written") {
		t.Fatalf("job proofs --daemon: %v\n%s", err, stderr)
	}
	stdout, stderr, err = run(t, "verify", "--keys", filepath.Join(keys, "mimc-2048"), filepath.Join(exported, runner.ProofFile(0)), filepath.Join(exported, runner.ProofFile(1)))
	if err != nil || strings.Count(stdout, ": ok") != 2 {
		t.Errorf("the exported proofs do not verify: %v\n%s%s", err, stdout, stderr)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"job", "retry", ids[0]}, "no failed partition to retry"},
		{[]string{"job", "cancel", ids[0]}, "failed_precondition"},
		{[]string{"job", "show", "no-such-job"}, "not_found"},
	} {
		_, _, err := run(t, append(tc.args, ask...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("cuzk %s --daemon: %v, want an error saying %q", strings.Join(tc.args, " "), err, tc.want)
			continue
		}
		t.Logf("cuzk %s --daemon: %v", strings.Join(tc.args, " "), err)
	}

	// Key sets: made on the daemon, loaded, freed.
	stdout, stderr, err = run(t, append([]string{"setup", "--circuit", "mimc", "--constraints", "1K", "--wait"}, ask...)...)
	if err != nil || !strings.Contains(stderr, "done in") || !strings.HasPrefix(stdout, "setup-") {
		t.Errorf("setup --daemon --wait: %v\n%s%s", err, stdout, stderr)
	}
	t.Logf("cuzk setup --daemon: %s%s", stdout, stderr)
	stdout, stderr, err = run(t, append([]string{"keys", "preload", "--key", "mimc:1K", "--key", "mimc:2K"}, ask...)...)
	if err != nil || !strings.Contains(stdout, "mimc-1024") || !strings.Contains(stdout, "mimc-2048") {
		t.Errorf("keys preload --daemon: %v\n%s%s", err, stdout, stderr)
	}
	t.Logf("cuzk keys preload --daemon:\n%s", stdout)
	stdout, stderr, err = run(t, append([]string{"keys", "evict"}, ask...)...)
	if err != nil || !strings.Contains(stdout, "2 key sets freed") {
		t.Errorf("keys evict --daemon: %v\n%s%s", err, stdout, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"keys", "preload", "--key", "mimc:2K"}, "--daemon is required"},
		{append([]string{"keys", "preload"}, ask...), "--key CIRCUIT:CONSTRAINTS is required"},
		{append([]string{"keys", "preload", "--key", "mimc"}, ask...), "want CIRCUIT:CONSTRAINTS"},
		{append([]string{"keys", "preload", "--key", "mimc:3K"}, ask...), "no keys for mimc"},
		{append([]string{"setup", "--circuit", "mimc", "--constraints", "1K", "--r1cs", "x.r1cs"}, ask...), "--r1cs goes with a setup in this process"},
		{[]string{"setup", "--circuit", "mimc", "--constraints", "1K", "--wait"}, "--wait goes with --daemon"},
	} {
		_, _, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("cuzk %s: %v; want an error saying %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}

	if _, stderr, err := run(t, append([]string{"job", "forget", ids[0]}, ask...)...); err != nil || !strings.Contains(stderr, "job "+ids[0]+" (done) forgotten") {
		t.Fatalf("job forget --daemon: %v\n%s", err, stderr)
	}
	stdout, _, err = run(t, append([]string{"jobs", "--json"}, ask...)...)
	if err != nil || json.Unmarshal([]byte(stdout), &rows) != nil || len(rows) != 1 || rows[0].ID != ids[1] {
		t.Errorf("jobs after the forget: %v\n%s", err, stdout)
	}
	if _, _, err := run(t, "jobs", "--daemon", "127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "is it running there?") {
		t.Errorf("jobs of no daemon: %v, want it asked whether one runs there", err)
	}
}

// cuzk submit hands jobs to a daemon, an example circuit's and a user's
// witness files, follows them to their end and exports proofs that verify;
// its key finds the first job again; cuzk job watch follows a job.
func TestSubmitToTheDaemon(t *testing.T) {
	dir := t.TempDir()
	keys, out := filepath.Join(dir, "keys"), filepath.Join(dir, "out")
	if _, stderr, err := run(t, "setup", "--circuit", "mimc", "--constraints", "2K", "--keys", keys); err != nil {
		t.Fatalf("setup: %v\n%s", err, stderr)
	}
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &cubic{})
	if err != nil {
		t.Fatal(err)
	}
	setupR1CSFile(t, ccs, filepath.Join(dir, "cubic.r1cs"), keys)
	w0, w1 := filepath.Join(dir, "w0.bin"), filepath.Join(dir, "w1.bin")
	writeWitness(t, w0, 3, 35)
	writeWitness(t, w1, 2, 15)
	d := startDaemon(t, "--store", filepath.Join(dir, "store"), "--keys", keys, "--out", out)

	for _, tc := range []struct {
		args          []string
		keySet        string
		wantPartition int
	}{
		{[]string{"--circuit", "mimc", "--constraints", "2K", "--partitions", "3", "--idempotency-key", "k1"}, "mimc-2048", 3},
		{[]string{"--key-set", "cubic", "--witness", w0, "--witness", w1, "--priority", "high"}, "cubic", 2},
	} {
		exported := t.TempDir()
		args := append([]string{"submit", "--daemon", d.url, "--wait", "--out", exported}, tc.args...)
		stdout, stderr, err := run(t, args...)
		if err != nil {
			t.Fatalf("cuzk %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		id := strings.TrimSpace(stdout)
		// A partition may end before the stream is open: the lines are
		// those the stream saw, the last line the whole count.
		if !strings.HasPrefix(id, "job-") || strings.Count(stderr, " proved (device ") > tc.wantPartition ||
			!strings.Contains(stderr, fmt.Sprintf("job %s ended: done, %d of %d partitions proved", id, tc.wantPartition, tc.wantPartition)) {
			t.Errorf("cuzk %s: job %q\n%s", strings.Join(args, " "), id, stderr)
		}
		t.Logf("cuzk %s:\n%s%s", strings.Join(args, " "), stdout, stderr)
		var proofs []string
		for i := range tc.wantPartition {
			proofs = append(proofs, filepath.Join(exported, runner.ProofFile(i)))
		}
		vout, verr, err := run(t, append([]string{"verify", "--keys", filepath.Join(keys, tc.keySet)}, proofs...)...)
		if err != nil || strings.Count(vout, ": ok") != tc.wantPartition {
			t.Errorf("the proofs of %s do not verify: %v\n%s%s", id, err, vout, verr)
		}
		if _, stderr, err := run(t, "job", "watch", id, "--daemon", d.url); err != nil || !strings.Contains(stderr, "ended: done") {
			t.Errorf("job watch of a done job: %v\n%s", err, stderr)
		}
	}
	// A job cancelled on the daemon: watching it fails, saying why.
	long, _, err := run(t, "submit", "--daemon", d.url, "--circuit", "mimc", "--constraints", "2K", "--partitions", "400")
	if err != nil {
		t.Fatal(err)
	}
	long = strings.TrimSpace(long)
	if _, stderr, err := run(t, "job", "cancel", long, "--daemon", d.url); err != nil || !strings.Contains(stderr, "job "+long+" cancelling") {
		t.Fatalf("job cancel: %v\n%s", err, stderr)
	}
	if _, stderr, err := run(t, "job", "watch", long, "--daemon", d.url); err == nil || !strings.Contains(err.Error(), "did not end done: cancelled: ") ||
		!strings.Contains(stderr, "ended: cancelled") {
		t.Errorf("job watch of a cancelled job: %v\n%s", err, stderr)
	} else {
		t.Logf("cuzk job watch %s: %v", long, err)
	}
	first, _, _ := run(t, "jobs", "--daemon", d.url, "--json")
	again, stderr, err := run(t, "submit", "--daemon", d.url, "--circuit", "mimc", "--constraints", "2K", "--partitions", "3", "--idempotency-key", "k1")
	if err != nil || !strings.Contains(stderr, "submitted before") || !strings.Contains(first, strings.TrimSpace(again)) {
		t.Errorf("the key again: %v %q\n%s", err, again, stderr)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--circuit", "mimc", "--constraints", "2K"}, "--daemon ADDR is required"},
		{[]string{"submit", "--daemon", d.url}, "--circuit (an example circuit, with --constraints) or --key-set"},
		{[]string{"submit", "--daemon", d.url, "--circuit", "mimc"}, "--circuit needs --constraints"},
		{[]string{"submit", "--daemon", d.url, "--circuit", "mimc", "--key-set", "cubic"}, "give one"},
		{[]string{"submit", "--daemon", d.url, "--key-set", "cubic"}, "needs its --witness files"},
		{[]string{"submit", "--daemon", d.url, "--key-set", "cubic", "--witness", w0, "--partitions", "3"}, "one partition per witness"},
		{[]string{"submit", "--daemon", d.url, "--circuit", "mimc", "--constraints", "2K", "--out", dir}, "--out goes with --wait"},
		{[]string{"submit", "--daemon", d.url, "--circuit", "mimc", "--constraints", "2K", "--priority", "urgent"}, "--priority"},
		{[]string{"submit", "--daemon", d.url, "--circuit", "mimc", "--constraints", "4K"}, "failed_precondition"},
		{[]string{"job", "watch", "no-such-job", "--daemon", d.url}, "not_found"},
		{[]string{"job", "watch", "x"}, "cuzk job watch asks a daemon"},
	} {
		_, _, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("cuzk %s: %v; want an error saying %q", strings.Join(tc.args, " "), err, tc.want)
			continue
		}
		t.Logf("cuzk %s: %v", strings.Join(tc.args, " "), err)
	}
}
