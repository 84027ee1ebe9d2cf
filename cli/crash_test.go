package cli

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
)

// TestKillAndResume proves a 10-partition job in a real cuzk process, kills
// it with SIGKILL at several points (and interrupts it once with SIGINT, as
// Ctrl-C does), and resumes: all 10 proofs must exist and verify, and no
// partition the store had recorded as proved is proved again. An interrupted
// prove stops on its own, soon, and leaves no partition failed.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills real processes")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "cuzk")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/cuzk").CombinedOutput(); err != nil {
		t.Fatalf("build cuzk: %v\n%s", err, out)
	}
	keys := filepath.Join(dir, "keys")
	cuzk := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Stderr = &bytes.Buffer{}
		cmd.Stdout = &bytes.Buffer{}
		return cmd
	}
	common := []string{"--circuit", "porep", "--constraints", "2K", "--keys", keys}
	if err := cuzk(append([]string{"setup"}, common...)...).Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sig       syscall.Signal
		killAfter int
	}{{syscall.SIGKILL, 1}, {syscall.SIGKILL, 4}, {syscall.SIGKILL, 8}, {syscall.SIGINT, 3}} {
		killAfter := tc.killAfter
		t.Run(fmt.Sprintf("%s-after-%d-proofs", strings.ToLower(tc.sig.String()), killAfter), func(t *testing.T) {
			st, out := filepath.Join(dir, fmt.Sprint("store", tc.sig, killAfter)), filepath.Join(dir, fmt.Sprint("out", tc.sig, killAfter))
			p := cuzk(append([]string{"prove", "--partitions", "10", "--backend", "cpu", "--workers", "2",
				"--store", st, "--out", out, "--seed", fmt.Sprintf("%02x", killAfter+1)}, common...)...)
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(2 * time.Minute)
			for countProofs(out) < killAfter {
				if time.Now().After(deadline) {
					p.Process.Kill()
					t.Fatalf("no progress: %s", p.Stderr)
				}
				time.Sleep(2 * time.Millisecond)
			}
			sent := time.Now()
			p.Process.Signal(tc.sig)
			err := p.Wait()
			if err == nil {
				t.Skipf("the job finished before the signal; nothing to resume")
			}
			if tc.sig == syscall.SIGINT {
				stderr := p.Stderr.(*bytes.Buffer).String()
				if !strings.Contains(stderr, "interrupted") || !strings.Contains(stderr, "cuzk resume") {
					t.Errorf("interrupted prove did not say so and how to resume:\n%s", stderr)
				}
				t.Logf("SIGINT: exited after %v", time.Since(sent).Round(time.Millisecond))
				if failed := storeFailed(t, st); failed != 0 {
					t.Errorf("%d partitions recorded failed after an interrupt; want 0 (they are pending)", failed)
				}
			}
			before := storeState(t, st)
			t.Logf("killed with %d proof files; store had %d proved", countProofs(out), len(before))

			r := cuzk("resume", "--store", st, "--backend", "cpu", "--json")
			if err := r.Run(); err != nil {
				t.Fatalf("resume: %v\n%s", err, r.Stderr)
			}
			after := storeState(t, st)
			if len(after) != 10 {
				t.Fatalf("after resume %d partitions proved, want 10", len(after))
			}
			for idx, b := range before {
				a := after[idx]
				if a.Attempts != b.Attempts || !bytes.Equal(a.Proof, b.Proof) {
					t.Errorf("partition %d was proved before the kill and again after (attempts %d → %d)", idx, b.Attempts, a.Attempts)
				}
			}
			var proofs []string
			for i := 0; i < 10; i++ {
				proofs = append(proofs, filepath.Join(out, runner.ProofFile(i)))
			}
			v := cuzk(append([]string{"verify", "--keys", filepath.Join(keys, "porep-2048")}, proofs...)...)
			if err := v.Run(); err != nil {
				t.Fatalf("verify after resume: %v\n%s", err, v.Stdout)
			}
			if n := strings.Count(v.Stdout.(*bytes.Buffer).String(), ": ok"); n != 10 {
				t.Fatalf("%d of 10 proofs verify", n)
			}
		})
	}
}

func countProofs(dir string) int {
	m, _ := filepath.Glob(filepath.Join(dir, "*.proof"))
	return len(m)
}

// storeJob returns the store's one job and its partitions.
func storeJob(t *testing.T, dir string) (store.JobSummary, []store.Partition) {
	t.Helper()
	st, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	jobs, err := st.Jobs()
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs: %v %v", jobs, err)
	}
	parts, err := st.Partitions(jobs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return jobs[0], parts
}

// storeFailed returns how many partitions of the store's one job failed for
// good.
func storeFailed(t *testing.T, dir string) int {
	job, _ := storeJob(t, dir)
	return job.Failed
}

// storeState returns the proved partitions of the store's one job.
func storeState(t *testing.T, dir string) map[int]store.Partition {
	_, parts := storeJob(t, dir)
	out := map[int]store.Partition{}
	for _, p := range parts {
		if p.State == store.Proved {
			out[p.Index] = p
		}
	}
	return out
}
