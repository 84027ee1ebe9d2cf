package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// run runs the cuzk app with args and returns what it printed and its error.
// The app makes its stderr slog's default, which a daemon running in the
// test's process logs to as well: the buffers are safe for that.
func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut syncBuffer
	app := App()
	app.Writer, app.ErrWriter = &out, &errOut
	app.ExitErrHandler = func(*cli.Context, error) {}
	err := app.Run(append([]string{"cuzk"}, args...))
	return out.String(), errOut.String(), err
}

func TestProveVerifyAndTamper(t *testing.T) {
	keys, out := t.TempDir(), t.TempDir()
	stdout, stderr, err := run(t, "prove", "--circuit", "porep", "--constraints", "2K", "--partitions", "3",
		"--backend", "cpu", "--keys", keys, "--out", out, "--setup-if-missing", "--json", "--seed", "00ff",
		"--trace", filepath.Join(out, "trace.json"))
	if err != nil {
		t.Fatalf("prove: %v\n%s", err, stderr)
	}
	var rep struct {
		JobID      string `json:"job_id"`
		Proved     int    `json:"proved"`
		Partitions []struct {
			Index  int                `json:"index"`
			State  string             `json:"state"`
			Stages map[string]float64 `json:"stages_ms"`
		} `json:"partitions"`
		Total float64 `json:"total_wall_ms"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("prove --json printed something that is not JSON: %v\n%s", err, stdout)
	}
	if rep.Proved != 3 || len(rep.Partitions) != 3 || rep.Total <= 0 || rep.JobID == "" {
		t.Fatalf("report: %+v", rep)
	}
	for _, p := range rep.Partitions {
		if p.State != "proved" || p.Stages["compute"] <= 0 || p.Stages["synthesize"] <= 0 || p.Stages["finalize"] <= 0 {
			t.Errorf("partition %d: %+v", p.Index, p)
		}
	}
	if tr, err := os.ReadFile(filepath.Join(out, "trace.json")); err != nil || !json.Valid(tr) || !bytes.Contains(tr, []byte(`"compute"`)) {
		t.Errorf("--trace did not write a Chrome trace with the compute stages: %v", err)
	}
	if !strings.Contains(stderr, "partitions done") {
		t.Errorf("no metrics summary on stderr with --json:\n%s", stderr)
	}
	keyDir := filepath.Join(keys, "porep-2048")
	proof := filepath.Join(out, "partition-01.proof")
	if _, _, err := run(t, "verify", "--keys", keyDir, "--proof", proof); err != nil {
		t.Fatalf("verify: %v", err)
	}
	// A proof checked against another partition's public inputs must fail.
	pub0, _ := os.ReadFile(filepath.Join(out, "partition-00.public"))
	os.WriteFile(filepath.Join(out, "partition-01.public"), pub0, 0o644)
	if stdout, _, err := run(t, "verify", "--keys", keyDir, "--proof", proof); err == nil || !strings.Contains(stdout, "FAILED") {
		t.Fatalf("verify accepted a proof for other public inputs: %v %s", err, stdout)
	}
	// A tampered proof must fail, not panic.
	b, _ := os.ReadFile(filepath.Join(out, "partition-02.proof"))
	b[10] ^= 0x01
	os.WriteFile(filepath.Join(out, "partition-02.proof"), b, 0o644)
	if _, _, err := run(t, "verify", "--keys", keyDir, "--proof", filepath.Join(out, "partition-02.proof")); err == nil {
		t.Fatal("verify accepted a tampered proof")
	}
}

func TestBadInputIsAnError(t *testing.T) {
	keys := t.TempDir()
	cases := [][]string{
		{"prove", "--circuit", "nope", "--keys", keys},
		{"prove", "--constraints", "0", "--keys", keys},
		{"prove", "--constraints", "-3", "--keys", keys},
		{"prove", "--partitions", "0", "--keys", keys},
		{"prove", "--partitions", "-1", "--keys", keys},
		{"prove", "--design", "nope", "--keys", keys},
		{"prove", "--workers", "0", "--keys", keys},
		{"prove", "--backend", "tpu", "--keys", keys},
		{"prove", "--devices", "a,b", "--keys", keys},
		{"prove", "--keys", keys, "--constraints", "2K", "--backend", "cpu"}, // no keys, no --setup-if-missing
		{"setup", "--circuit", "porep", "--constraints", "1"},
		{"verify", "--keys", keys, "--proof", "missing.proof"},
		{"resume", "--store", keys + "/no-such-store", "--backend", "cpu"},
	}
	for _, args := range cases {
		_, _, err := run(t, args...)
		if err == nil {
			t.Errorf("cuzk %s: no error", strings.Join(args, " "))
		}
	}
	_, _, err := run(t, "prove", "--keys", keys, "--constraints", "2K", "--backend", "cpu")
	if err == nil || !strings.Contains(err.Error(), "cuzk setup") {
		t.Errorf("missing keys: the error should say how to make them: %v", err)
	}
}

// --b-g2 names where b_g2 runs; the GPU needs the GPU backend.
func TestBG2FlagIsChecked(t *testing.T) {
	keys := t.TempDir()
	for _, args := range [][]string{
		{"prove", "--keys", keys, "--constraints", "1K", "--backend", "cpu", "--b-g2", "gpu", "--setup-if-missing"},
		{"prove", "--keys", keys, "--constraints", "1K", "--backend", "cpu", "--b-g2", "gpu-serial", "--setup-if-missing"},
		{"prove", "--keys", keys, "--constraints", "1K", "--backend", "cpu", "--b-g2", "tpu", "--setup-if-missing"},
		{"prove", "--keys", keys, "--constraints", "1K", "--backend", "auto", "--gpu-lib", "/nonexistent/lib.so", "--b-g2", "gpu", "--setup-if-missing"},
	} {
		_, _, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "--b-g2") {
			t.Errorf("cuzk %s: got %v, want an error about --b-g2", strings.Join(args, " "), err)
		}
	}
	out, stderr, err := run(t, "prove", "--keys", keys, "--constraints", "1K", "--partitions", "1", "--backend", "cpu",
		"--b-g2", "cpu", "--setup-if-missing", "--json", "--out", t.TempDir())
	if err != nil || !strings.Contains(out, `"b_g2": "cpu"`) || !strings.Contains(out, `"solver": "cuzk"`) {
		t.Fatalf("--b-g2 cpu on the CPU backend: %v\n%s\n%s", err, out, stderr)
	}
}

// --solver gnark proves with gnark's solver (same proofs, for comparison);
// an unknown solver is refused.
func TestSolverFlag(t *testing.T) {
	keys := t.TempDir()
	_, _, err := run(t, "prove", "--keys", keys, "--constraints", "1K", "--backend", "cpu", "--solver", "magic", "--setup-if-missing")
	if err == nil || !strings.Contains(err.Error(), "--solver") {
		t.Errorf("--solver magic: got %v, want an error about --solver", err)
	}
	out, stderr, err := run(t, "prove", "--keys", keys, "--circuit", "sha", "--constraints", "1K", "--partitions", "2", "--backend", "cpu",
		"--solver", "gnark", "--setup-if-missing", "--json", "--out", t.TempDir())
	if err != nil || !strings.Contains(out, `"proved": 2`) || !strings.Contains(out, `"solver": "gnark"`) {
		t.Fatalf("--solver gnark: %v\n%s\n%s", err, out, stderr)
	}
}

func TestParseCount(t *testing.T) {
	for in, want := range map[string]int{"16384": 16384, "64K": 65536, "1M": 1 << 20, "2^20": 1 << 20, "1.5K": 1536} {
		if got, err := parseCount(in); err != nil || got != want {
			t.Errorf("parseCount(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "x", "2^x", "2^99"} {
		if _, err := parseCount(in); err == nil {
			t.Errorf("parseCount(%q) accepted", in)
		}
	}
}

// --jobs submits several jobs at once: each has its own seed and directory,
// they spread over the devices, and every proof verifies against its own
// job's public inputs.
func TestSeveralJobsOnTwoDevices(t *testing.T) {
	keys, out := t.TempDir(), t.TempDir()
	stdout, stderr, err := run(t, "prove", "--circuit", "mimc", "--constraints", "1K", "--partitions", "3", "--jobs", "2",
		"--devices", "0,1", "--workers", "2", "--backend", "cpu", "--keys", keys, "--out", out, "--setup-if-missing",
		"--json", "--seed", "0aff")
	if err != nil {
		t.Fatalf("prove --jobs 2: %v\n%s", err, stderr)
	}
	var rep struct {
		Jobs []struct {
			JobID      string `json:"job_id"`
			Proved     int    `json:"proved"`
			Out        string `json:"out"`
			Partitions []struct {
				Ran struct {
					Device int `json:"device"`
				} `json:"ran"`
			} `json:"partitions"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if len(rep.Jobs) != 2 || rep.Jobs[0].JobID == rep.Jobs[1].JobID || rep.Jobs[0].Out == rep.Jobs[1].Out {
		t.Fatalf("want two jobs with their own ids and directories: %+v", rep.Jobs)
	}
	devices := map[int]bool{}
	var proofs []string
	for _, j := range rep.Jobs {
		if j.Proved != 3 {
			t.Fatalf("job %s: %d/3 proved", j.JobID, j.Proved)
		}
		for _, p := range j.Partitions {
			devices[p.Ran.Device] = true
		}
		got, _ := filepath.Glob(filepath.Join(j.Out, "*.proof"))
		if len(got) != 3 {
			t.Fatalf("job %s: %d proofs in %s", j.JobID, len(got), j.Out)
		}
		proofs = append(proofs, got...)
	}
	if !devices[0] || !devices[1] {
		t.Fatalf("partitions ran on devices %v, want both", devices)
	}
	if _, stderr, err := run(t, append([]string{"verify", "--keys", filepath.Join(keys, "mimc-1024")}, proofs...)...); err != nil {
		t.Fatalf("verify: %v\n%s", err, stderr)
	}
	if _, _, err := run(t, "prove", "--jobs", "0", "--keys", keys); err == nil {
		t.Error("--jobs 0 accepted")
	}
}

// --keygen picks what makes the keys: keygen on the CPU makes keys that
// prove and verify; the GPU without a kernel library is an error; auto falls
// back to gnark's setup.
func TestKeygenFlag(t *testing.T) {
	keys, out := t.TempDir(), t.TempDir()
	_, stderr, err := run(t, "setup", "--circuit", "mimc", "--constraints", "1K", "--keys", keys, "--keygen", "cpu")
	if err != nil || !strings.Contains(stderr, "keys made by keygen on the CPU") {
		t.Fatalf("setup --keygen cpu: %v\n%s", err, stderr)
	}
	stdout, stderr, err := run(t, "prove", "--circuit", "mimc", "--constraints", "1K", "--partitions", "2", "--backend", "cpu",
		"--keys", keys, "--out", out, "--json")
	if err != nil || !strings.Contains(stdout, `"proved": 2`) {
		t.Fatalf("prove with keygen's keys: %v\n%s\n%s", err, stdout, stderr)
	}
	lib := "--gpu-lib=/nonexistent/libcuzkgpu.so"
	if _, _, err := run(t, "setup", "--circuit", "mimc", "--constraints", "1K", "--keys", t.TempDir(), "--keygen", "gpu", lib); err == nil || !strings.Contains(err.Error(), "--keygen gpu") {
		t.Errorf("--keygen gpu without a library: %v", err)
	}
	if _, _, err := run(t, "setup", "--circuit", "mimc", "--constraints", "1K", "--keys", t.TempDir(), "--keygen", "tpu"); err == nil {
		t.Error("--keygen tpu accepted")
	}
	_, stderr, err = run(t, "setup", "--circuit", "mimc", "--constraints", "1K", "--keys", t.TempDir(), lib)
	if err != nil || !strings.Contains(stderr, "gnark's groth16.Setup") {
		t.Errorf("--keygen auto without a library: %v\n%s", err, stderr)
	}
}

// --cpuprofile writes a profile of the whole command.
func TestCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.prof")
	if _, stderr, err := run(t, "--cpuprofile", path, "sim", "--scenario", "phase9"); err != nil {
		t.Fatalf("sim with --cpuprofile: %v\n%s", err, stderr)
	}
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		t.Fatalf("profile: %v, %v", st, err)
	}
	if _, _, err := run(t, "--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir"), "version"); err == nil {
		t.Error("an unwritable --cpuprofile was accepted")
	}
}

func TestMedian(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{{nil, 0}, {ms(5), 5 * time.Millisecond}, {ms(9, 1, 5), 5 * time.Millisecond}, {ms(4, 1, 3, 2), 2500 * time.Microsecond}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// Partitions that failed for good (here: a card too small for one) stay
// failed on a plain resume, and are proved by resume --retry-failed on a card
// large enough.
func TestResumeRetriesFailedPartitions(t *testing.T) {
	keys, dir, st := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "store")
	// The proofs' directory is under a file: no partition can write its
	// proof, and with one attempt each fails for good.
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(blocker, "out")
	_, stderr, err := run(t, "prove", "--circuit", "porep", "--constraints", "2K", "--partitions", "2", "--backend", "cpu",
		"--max-attempts", "1", "--keys", keys, "--setup-if-missing", "--store", st, "--out", out)
	if err == nil || !strings.Contains(err.Error(), "2 of 2 partitions failed") {
		t.Fatalf("prove into a directory that cannot be made: %v\n%s", err, stderr)
	}
	os.Remove(blocker)
	if _, stderr, err := run(t, "resume", "--store", st, "--backend", "cpu"); err != nil || !strings.Contains(stderr, "no unfinished jobs") {
		t.Fatalf("plain resume of a failed job: %v\n%s", err, stderr)
	}
	stdout, stderr, err := run(t, "resume", "--store", st, "--backend", "cpu", "--design", "budget", "--vram-limit", "1GiB",
		"--retry-failed", "--json")
	if err != nil || strings.Count(stderr, "reopened") != 2 || !strings.Contains(stdout, `"proved": 2`) {
		t.Fatalf("resume --retry-failed: %v\n%s\n%s", err, stdout, stderr)
	}
	proofs, _ := filepath.Glob(filepath.Join(out, "*.proof"))
	if len(proofs) != 2 {
		t.Fatalf("%d proofs in %s", len(proofs), out)
	}
	if _, stderr, err := run(t, append([]string{"verify", "--keys", filepath.Join(keys, "porep-2048")}, proofs...)...); err != nil {
		t.Fatalf("verify: %v\n%s", err, stderr)
	}
}

// bench prove --keys memory makes the keys in the process and writes
// nothing: no directory named memory appears where it ran.
func TestBenchProveKeysInMemory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	stdout, stderr, err := run(t, "bench", "prove", "--backend", "cpu", "--keys", "memory", "--keygen", "cpu",
		"--circuit", "mimc", "--sizes", "4K", "--runs", "1")
	if err != nil {
		t.Fatalf("bench prove --keys memory: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "in memory: no key is written") || !strings.Contains(stdout, "3997") {
		t.Errorf("bench prove --keys memory: stdout\n%s\nstderr\n%s", stdout, stderr)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("bench prove --keys memory wrote %v (%v)", entries, err)
	}
}

// A word that is not a flag ends flag parsing: a command that takes no
// arguments refuses it, and verify and export refuse a flag after a file
// (a required one included), rather than each running without what followed.
func TestStrayArgumentsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"prove", "--witness", "a.wtns", "b.wtns"}, `prove: unexpected arguments ["b.wtns"]`},
		{[]string{"sim", "calibrat"}, `sim: unexpected arguments ["calibrat"]`},
		{[]string{"bench", "contention", "--backend", "sim", "extra"}, `bench contention: unexpected arguments ["extra"]`},
		{[]string{"version", "x"}, `version: unexpected arguments`},
		{[]string{"verify", "--keys", t.TempDir(), "a.proof", "--json"}, `verify: flag "--json" after "a.proof"`},
		{[]string{"export", "--keys", t.TempDir(), "--out", t.TempDir(), "a.proof", "--format", "snarkjs"}, `export: flag "--format" after "a.proof"`},
		// A required flag after a file is named as misplaced, not as missing.
		{[]string{"verify", "a.proof", "--keys", t.TempDir()}, `verify: flag "--keys" after "a.proof"`},
		{[]string{"verify", "a.proof"}, `verify: required flags not set: --keys`},
		{[]string{"export", "--keys", t.TempDir(), "a.proof"}, `export: required flags not set: --out`},
	} {
		_, _, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("cuzk %s: %v; want an error saying %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	// A command without arguments runs as before.
	if _, _, err := run(t, "version"); err != nil {
		t.Errorf("cuzk version: %v", err)
	}
}
