package cli

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		var sub struct {
			ID string `json:"job_id"`
		}
		if code, body := d.call(t, "POST", "/v1/jobs", `{"circuit": "mimc", "constraints": "2K", "partitions": 2, "idempotency_key": "`+key+`"}`, &sub); code != http.StatusAccepted {
			t.Fatalf("submit: %d %s\n%s", code, body, d.log)
		}
		var js runner.JobStatus
		if code, body := d.call(t, "GET", "/v1/jobs/"+sub.ID+"/wait", "", &js); code != http.StatusOK || js.State != runner.StateDone {
			t.Fatalf("wait: %d %s", code, body)
		}
		ids = append(ids, sub.ID)
	}
	ask := []string{"--daemon", d.url, "--auth-token-file", tokenFile}

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
