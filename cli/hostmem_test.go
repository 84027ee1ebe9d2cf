package cli

import (
	"errors"
	"math"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/prover"
)

func TestParseHostMemLimit(t *testing.T) {
	total := func() (int64, error) { return 100 << 30, nil }
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"64GiB", 64 << 30},
		{"512MiB", 512 << 20},
		{"60%", 60 << 30},
		{" 12.5 % ", int64(12.5 * (1 << 30))},
		{"auto", defaultHostMemPercent << 30},
		{"", defaultHostMemPercent << 30},
		{"off", 0},
		{"OFF", 0},
	} {
		got, err := parseHostMemLimit(tc.in, total)
		if err != nil || got != tc.want {
			t.Errorf("parseHostMemLimit(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"0%", "101%", "-5GiB", "lots", "%", "0"} {
		if got, err := parseHostMemLimit(bad, total); err == nil {
			t.Errorf("parseHostMemLimit(%q) = %d, want an error", bad, got)
		}
	}
	noMeminfo := func() (int64, error) { return 0, errors.New("no /proc/meminfo") }
	if _, err := parseHostMemLimit("auto", noMeminfo); err == nil || !strings.Contains(err.Error(), "64GiB") {
		t.Errorf("auto without /proc/meminfo: %v, want an error that says to give bytes", err)
	}
	if got, err := parseHostMemLimit("8GiB", noMeminfo); err != nil || got != 8<<30 {
		t.Errorf("bytes without /proc/meminfo: %d, %v", got, err)
	}
}

// gateCase is a run's settings and what a count of the host-memory gate's
// should be for them.
type gateCase struct {
	name      string
	cfg       actors.Config
	devices   int
	hostBytes int64
	want      int
}

// The solver readies (and faults in) as many solutions as a run holds at
// once, not one per partition of the job: sha at 2^25 holds 9.05 GiB a
// partition, six under a 64 GiB gate with eight synthesis slots, and four
// more reserved results would be 16 GiB resident that nothing uses.
func TestSolvesAtOnce(t *testing.T) {
	sha25 := prover.HostBytes(1<<25, 25_600_000)
	for _, tc := range []gateCase{
		{"no gate: one per GPU worker", actors.Config{WorkersPerDevice: 3}, 2, sha25, 6},
		{"sha 2^25, 64 GiB gate, 8 slots", actors.Config{WorkersPerDevice: 3, HostMemLimit: 64 << 30, SynthWorkers: 8}, 1, sha25, 7},
		{"sha 2^25, half of 128 GiB", actors.Config{WorkersPerDevice: 3, HostMemLimit: 128868 << 19, SynthWorkers: 8}, 1, sha25, 6},
		{"small partitions: the slots", actors.Config{WorkersPerDevice: 3, HostMemLimit: 64 << 30, SynthWorkers: 8}, 1, 1 << 30, 8},
		{"a partition larger than the gate", actors.Config{WorkersPerDevice: 3, HostMemLimit: 1 << 30, SynthWorkers: 8}, 1, 2 << 30, 1},
	} {
		if got := solvesAtOnce(tc.cfg, tc.devices, tc.hostBytes); got != tc.want {
			t.Errorf("%s: %d solves at once, want %d", tc.name, got, tc.want)
		}
	}
}

// The bench pins staging for what the gate lets a stream of jobs hold at
// once: porep-sha at 2^22 (1.2 GB a partition) fits 53 under half of 128
// GiB, more than its 40 partitions of four jobs, so all 40 are pinned before
// the first row; without the gate, one per GPU worker.
func TestHeldAtOnce(t *testing.T) {
	ps22 := prover.HostBytes(1<<22, 3_085_727)
	half := int64(128868) << 19
	for _, tc := range []gateCase{
		{"no gate: one per GPU worker", actors.Config{WorkersPerDevice: 3}, 2, ps22, 6},
		{"porep-sha 2^22, half of 128 GiB", actors.Config{WorkersPerDevice: 3, HostMemLimit: half, SynthWorkers: 8}, 1, ps22, int(half / ps22)},
		{"a partition larger than the gate: one", actors.Config{WorkersPerDevice: 3, HostMemLimit: 1 << 30, SynthWorkers: 8}, 1, 2 << 30, 1},
		{"porep-sha 2^27 (32.8 GiB), a 66 GiB gate: two", actors.Config{WorkersPerDevice: 3, HostMemLimit: 66 << 30, SynthWorkers: 8}, 1, 35_218_000_000, 2},
	} {
		if got := heldAtOnce(tc.cfg, tc.devices, tc.hostBytes); got != tc.want {
			t.Errorf("%s: %d held at once, want %d", tc.name, got, tc.want)
		}
	}
	if n := heldAtOnce(actors.Config{WorkersPerDevice: 3, HostMemLimit: half, SynthWorkers: 8}, 1, ps22); n < 40 {
		t.Errorf("porep-sha 2^22: %d held at once, fewer than four jobs' 40 partitions", n)
	}
}

func TestParseMemTotal(t *testing.T) {
	got, err := parseMemTotal(strings.NewReader("MemFree:  10 kB\nMemTotal:       131072 kB\nBuffers: 1 kB\n"))
	if err != nil || got != 131072<<10 {
		t.Errorf("MemTotal: %d, %v", got, err)
	}
	for _, bad := range []string{"MemFree: 10 kB\n", "MemTotal: lots kB\n", "MemTotal: 10 MB\n"} {
		if _, err := parseMemTotal(strings.NewReader(bad)); err == nil {
			t.Errorf("parseMemTotal(%q): no error", bad)
		}
	}
	if n, err := memTotal(); err == nil && n <= 0 {
		t.Errorf("this host's MemTotal: %d", n)
	}
}

// prove under the host-memory gate reports what the gate held; a limit
// below one partition is refused with both sizes named.
func TestProveUnderTheHostGate(t *testing.T) {
	keys := t.TempDir()
	args := []string{"prove", "--circuit", "mimc", "--constraints", "2K", "--partitions", "4", "--backend", "cpu",
		"--keys", keys, "--setup-if-missing", "--seed", "0a", "--workers", "1"}
	stdout, stderr, err := run(t, append(args, "--out", t.TempDir(), "--host-mem-limit", "4MiB", "--synth-workers", "2")...)
	if err != nil {
		t.Fatalf("prove: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "4/4 proved") || !strings.Contains(stdout, "host memory: at most") || !strings.Contains(stdout, "GPU idle") {
		t.Errorf("prove's report lacks the proofs or the host-memory line:\n%s", stdout)
	}
	_, _, err = run(t, append(args, "--out", t.TempDir(), "--host-mem-limit", "1KiB")...)
	if err == nil || !strings.Contains(err.Error(), "host memory") || !strings.Contains(err.Error(), "1.00 KiB") {
		t.Errorf("a partition larger than --host-mem-limit: %v, want a refusal naming the sizes", err)
	}
	stdout, stderr, err = run(t, append(args, "--out", t.TempDir(), "--host-mem-limit", "off")...)
	if err != nil {
		t.Fatalf("prove --host-mem-limit off: %v\n%s", err, stderr)
	}
	if strings.Contains(stdout, "host memory:") {
		t.Errorf("without the gate the report has a host-memory line:\n%s", stdout)
	}
	if _, _, err := run(t, append(args, "--host-mem-limit", "lots")...); err == nil || !strings.Contains(err.Error(), "--host-mem-limit") {
		t.Errorf("--host-mem-limit lots: %v", err)
	}
}

// capHeapToHost lowers a Go heap limit above what the host has left to it,
// and keeps a lower one.
func TestCapHeapToHost(t *testing.T) {
	if _, err := memAvailable(); err != nil {
		t.Skipf("no /proc/meminfo here: %v", err)
	}
	prev := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prev)
	limit := capHeapToHost()
	total, err := memTotal()
	if err != nil {
		t.Fatal(err)
	}
	if limit <= 0 || limit > total || debug.SetMemoryLimit(-1) != limit {
		t.Fatalf("cap %d with %d bytes of host memory, limit now %d", limit, total, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(1 << 30)
	if got := capHeapToHost(); got != 0 || debug.SetMemoryLimit(-1) != 1<<30 {
		t.Fatalf("a lower limit was changed: cap %d, limit %d", got, debug.SetMemoryLimit(-1))
	}
	if n, err := parseMeminfo(strings.NewReader("MemTotal: 8 kB\nMemAvailable:  4 kB\n"), "MemAvailable"); err != nil || n != 4<<10 {
		t.Fatalf("MemAvailable: %d, %v", n, err)
	}
}

// The staging pinned before a run is the gate's room, at most the
// partitions the run has; without the gate, one per partition in flight.
func TestStagingToPin(t *testing.T) {
	gate := actors.Config{WorkersPerDevice: 3, HostMemLimit: 66 << 30, SynthWorkers: 8}
	ps27 := int64(35_218_000_000) // porep-sha 2^27 with one A and B wire vector
	for _, tc := range []struct {
		name      string
		cfg       actors.Config
		hostBytes int64
		most      int
		want      int
	}{
		{"2^27 under a 66 GiB gate, ten partitions: two", gate, ps27, 10, 2},
		{"2^27 under a 66 GiB gate, a daemon's three at once: two", gate, ps27, 3, 2},
		{"small partitions, one job of ten: ten", actors.Config{WorkersPerDevice: 3, HostMemLimit: 64 << 30, SynthWorkers: 8}, 1 << 30, 10, 10},
		{"no gate: one per worker", actors.Config{WorkersPerDevice: 3}, ps27, 10, 3},
	} {
		if got := stagingToPin(tc.cfg, 1, tc.hostBytes, tc.most); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
