package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/store"
)

// jobsFixture writes a store with a done job and an unfinished one.
func jobsFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.CreateJob(store.Job{ID: "done", Circuit: "porep", NumPartitions: 3, Priority: store.PriorityHigh}))
	for i := range 3 {
		_, err := st.StartAttempt("done", i)
		must(err)
		must(st.MarkProved("done", i, fmt.Appendf(nil, "proof %d", i), fmt.Appendf(nil, "public %d", i), nil))
	}
	must(st.CreateJob(store.Job{ID: "half", Circuit: "mimc", NumPartitions: 3}))
	must(st.MarkProved("half", 0, []byte("p"), nil, nil))
	must(st.MarkFailed("half", 1, "out of memory"))
	return dir
}

func TestJobsList(t *testing.T) {
	dir := jobsFixture(t)
	stdout, stderr, err := run(t, "jobs", "--store", dir)
	if err != nil {
		t.Fatalf("jobs: %v\n%s", err, stderr)
	}
	t.Log("\n" + stdout)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "done ") || !strings.HasPrefix(lines[2], "half ") ||
		!strings.Contains(lines[1], " done") || !strings.Contains(lines[2], "unfinished") {
		t.Fatalf("jobs printed:\n%s", stdout)
	}

	stdout, stderr, err = run(t, "jobs", "--store", dir, "--json")
	if err != nil {
		t.Fatalf("jobs --json: %v\n%s", err, stderr)
	}
	var jobs []jobJSON
	if err := json.Unmarshal([]byte(stdout), &jobs); err != nil {
		t.Fatalf("jobs --json printed something that is not JSON: %v\n%s", err, stdout)
	}
	if len(jobs) != 2 || jobs[0].Proved != 3 || jobs[0].Attempts != 3 || jobs[0].Priority != "HIGH" ||
		jobs[1].Proved != 1 || jobs[1].Failed != 1 || jobs[1].Pending != 1 || jobs[1].Status != "unfinished" {
		t.Fatalf("jobs --json: %+v", jobs)
	}
}

func TestJobProofsExport(t *testing.T) {
	dir := jobsFixture(t)
	out := filepath.Join(t.TempDir(), "proofs")
	// Flags after the id, as users type them.
	if _, stderr, err := run(t, "job", "proofs", "done", "--store", dir, "--out", out); err != nil {
		t.Fatalf("job proofs: %v\n%s", err, stderr)
	}
	for i := range 3 {
		for name, want := range map[string]string{
			fmt.Sprintf("partition-%02d.proof", i):  fmt.Sprintf("proof %d", i),
			fmt.Sprintf("partition-%02d.public", i): fmt.Sprintf("public %d", i),
		} {
			b, err := os.ReadFile(filepath.Join(out, name))
			if err != nil || string(b) != want {
				t.Fatalf("%s: %q, %v; want %q", name, b, err, want)
			}
		}
	}
	// Again, flags first: the same files, accepted.
	if _, stderr, err := run(t, "job", "proofs", "--store", dir, "--out", out, "done"); err != nil {
		t.Fatalf("job proofs again: %v\n%s", err, stderr)
	}
	stdout, _, err := run(t, "job", "show", "done", "--store", dir)
	if err != nil || !strings.Contains(stdout, "proved") {
		t.Fatalf("job show: %v\n%s", err, stdout)
	}
	t.Log("\n" + stdout)
}

func TestJobsErrors(t *testing.T) {
	dir := jobsFixture(t)
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "partition-01.proof"), []byte("another job's"), 0o644); err != nil {
		t.Fatal(err)
	}
	held, err := store.Open(filepath.Join(t.TempDir(), "held"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs"}, "--store or --daemon is required"},
		{[]string{"job", "show", "done"}, "--store or --daemon is required"},
		{[]string{"job", "show", "done", "--store", dir, "--daemon", "127.0.0.1:1"}, "--store and --daemon: give one"},
		{[]string{"jobs", "--store", dir, "--auth-token-file", "t"}, "--auth-token-file goes with --daemon"},
		{[]string{"job", "show", "done", "--daemon", "nonsense"}, "want host:port, unix:PATH"},
		{[]string{"job", "show", "done", "--daemon", "127.0.0.1:1", "--tls-ca", "ca.pem"}, "it goes with https://"},
		{[]string{"job", "retry", "done"}, "cuzk resume --store DIR --retry-failed"},
		{[]string{"job", "cancel", "done"}, "cuzk job cancel asks a daemon"},
		{[]string{"jobs", "--store", filepath.Join(dir, "nothing")}, "no store there"},
		{[]string{"jobs", "--store", held.Dir()}, "a prove or resume is using it (try again once it is done), or a daemon (ask it"},
		{[]string{"job", "proofs", "--store", dir, "--out", other}, "missing the job id"},
		{[]string{"job", "proofs", "done", "--store", dir}, "--out is required"},
		{[]string{"job", "proofs", "done", "--store", dir, "--out", other, "extra"}, "unexpected arguments"},
		{[]string{"job", "proofs", "done", "--store", dir, "--bogus", "x"}, "flag provided but not defined"},
		{[]string{"job", "proofs", "half", "--store", dir, "--out", other}, "not done: 1 of 3 partitions proved, 1 failed, 1 pending"},
		{[]string{"job", "proofs", "nope", "--store", dir, "--out", other}, "no job nope"},
		{[]string{"job", "proofs", "done", "--store", dir, "--out", other}, "exists with other content"},
		{[]string{"job", "show", "../x", "--store", dir}, "not in [A-Za-z0-9._-]"},
	} {
		_, _, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("cuzk %s: %v; want an error saying %q", strings.Join(tc.args, " "), err, tc.want)
			continue
		}
		t.Logf("cuzk %s: %v", strings.Join(tc.args, " "), err)
	}
}

// job forget removes an ended job from a store, never an unfinished one, and
// never makes a store where there was none.
func TestJobForget(t *testing.T) {
	dir := jobsFixture(t)
	st, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateJob(store.Job{ID: "stopped", Circuit: "mimc", NumPartitions: 2}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := st.Cancel("stopped", i); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	if out, _, err := run(t, "jobs", "--store", dir); err != nil || !strings.Contains(out, "cancelled") {
		t.Errorf("jobs with a cancelled job: %v\n%s", err, out)
	}
	for _, id := range []string{"done", "stopped"} {
		_, stderr, err := run(t, "job", "forget", id, "--store", dir)
		if err != nil || !strings.Contains(stderr, "job "+id+" (") {
			t.Fatalf("job forget %s: %v\n%s", id, err, stderr)
		}
		t.Log(strings.TrimSpace(stderr))
	}
	out, stderr, err := run(t, "jobs", "--store", dir, "--json")
	if err != nil {
		t.Fatalf("jobs: %v\n%s", err, stderr)
	}
	var jobs []jobJSON
	if err := json.Unmarshal([]byte(out), &jobs); err != nil || len(jobs) != 1 || jobs[0].ID != "half" {
		t.Errorf("jobs after forgetting two: %v %+v", err, jobs)
	}
	held, err := store.Open(filepath.Join(t.TempDir(), "held"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	missing := filepath.Join(t.TempDir(), "nothing")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"job", "forget", "half", "--store", dir}, "job half is unfinished (1 of 3 partitions proved)"},
		{[]string{"job", "forget", "done", "--store", dir}, "no job done"},
		{[]string{"job", "forget", "--store", dir}, "missing the job id"},
		{[]string{"job", "forget", "half"}, "--store or --daemon is required"},
		{[]string{"job", "forget", "x", "--store", held.Dir()}, "DELETE /v1/jobs/x"},
		{[]string{"job", "forget", "x", "--store", missing}, "no store there"},
	} {
		_, _, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("cuzk %s: %v; want an error saying %q", strings.Join(tc.args, " "), err, tc.want)
			continue
		}
		t.Logf("cuzk %s: %v", strings.Join(tc.args, " "), err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("job forget on a missing store: %v, want the directory left absent", err)
	}
}
