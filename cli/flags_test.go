package cli

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Numbers that make no sense are refused by name, before anything runs,
// instead of being replaced by a default.
func TestNumericFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"prove", "--workers", "0"}, "--workers 0: must be at least 1"},
		{[]string{"prove", "--max-attempts", "0"}, "--max-attempts 0: must be at least 1"},
		{[]string{"prove", "--partitions", "100001"}, "--partitions 100001: must be 1 to 100000"},
		{[]string{"prove", "--partitions", "0"}, "--partitions 0: must be 1 to 100000"},
		{[]string{"prove", "--jobs", "-1"}, "--jobs -1: must be 1 to 1000"},
		{[]string{"prove", "--retry-backoff", "-1s"}, "--retry-backoff -1s: must not be negative"},
		{[]string{"resume", "--store", "x", "--workers", "0"}, "--workers 0: must be at least 1"},
		{[]string{"sim", "--scenario", "phase9", "--workers", "-1"}, "--workers -1: must be at least 1"},
		{[]string{"sim", "--scenario", "phase9", "--vram-gib", "-1"}, "--vram-gib -1: must be more than 0"},
		{[]string{"bench", "prove", "--runs", "0"}, "--runs 0: must be at least 1"},
		{[]string{"bench", "prove", "--jobs", "0"}, "--jobs 0: must be 1 to 1000"},
		{[]string{"bench", "prove", "--key-tier", "tape"}, "--key-tier tape: want auto, device, pinned, host or disk"},
		{[]string{"bench", "prove", "--copy-load", "sometimes"}, `--copy-load "sometimes": want off, on or also`},
		{[]string{"bench", "prove", "--copy-load-bytes", "0"}, `--copy-load-bytes "0": want a size such as 256MiB`},
		{[]string{"bench", "msm", "--bits-fraction", "1.5"}, "--bits-fraction 1.5: must be 0 to 1"},
		{[]string{"bench", "msm", "--windows", "16,3"}, `--windows: "3" is not a window size in [4, 24]`},
		{[]string{"bench", "msm", "--windows", "16,x"}, `--windows: "x" is not a window size in [4, 24]`},
		{[]string{"bench", "msm", "--tables", "33"}, `--tables: "33" is not COPIES (0..32) or COPIES:WINDOW (window 0 or 4..24)`},
		{[]string{"bench", "msm", "--tables", "0,2:3"}, `--tables: "2:3" is not COPIES (0..32) or COPIES:WINDOW (window 0 or 4..24)`},
	} {
		_, stderr, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v (%s), want an error with %q", c.args, err, stderr, c.want)
		}
	}
}

// setup refuses a --keys that is not a directory before it makes any key.
func TestSetupRefusesAFileAsKeys(t *testing.T) {
	file := t.TempDir() + "/not-a-dir"
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, stderr, err := run(t, "setup", "--circuit", "mimc", "--constraints", "64K", "--keys", file)
	if err == nil || !strings.Contains(err.Error(), "--keys") || strings.Contains(stderr, "keys made") {
		t.Fatalf("setup into a file: %v\n%s", err, stderr)
	}
	t.Logf("refused after %v: %v", time.Since(start), err)
}

// A partition that cannot fit the device even alone is refused before
// anything is proved, naming what it needs and what there is; --plan shows
// the same numbers and fails the same way.
func TestPartitionTooLargeRefusedUpFront(t *testing.T) {
	keys := t.TempDir()
	args := []string{"prove", "--circuit", "mimc", "--constraints", "4K", "--partitions", "2", "--backend", "cpu",
		"--keys", keys, "--setup-if-missing", "--vram-limit", "64KiB", "--out", t.TempDir()}
	_, stderr, err := run(t, args...)
	if err == nil || !strings.Contains(err.Error(), "one partition needs") || !strings.Contains(err.Error(), "64.00 KiB") {
		t.Fatalf("prove with a partition larger than the device: %v\n%s", err, stderr)
	}
	if strings.Contains(stderr, "proved and verified") {
		t.Errorf("something was proved before the refusal:\n%s", stderr)
	}
	stdout, _, err := run(t, append(args, "--plan")...)
	if err == nil || !strings.Contains(stdout, "one partition's buffer") {
		t.Fatalf("--plan: %v\n%s", err, stdout)
	}
	stdout, _, err = run(t, "prove", "--circuit", "mimc", "--constraints", "4K", "--backend", "cpu", "--keys", keys, "--plan")
	if err != nil || !strings.Contains(stdout, "for partitions") {
		t.Fatalf("--plan on a device that fits: %v\n%s", err, stdout)
	}
	t.Logf("\n%s", stdout)
}

func TestChunkPoints(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "4M": 1 << 22, "2^20": 1 << 20, "64K": 1 << 16} {
		if got, err := chunkPoints(in); err != nil || got != want {
			t.Errorf("--chunk-points %s: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"3M", "8M", "32K", "x", "-4M"} {
		if got, err := chunkPoints(in); err == nil {
			t.Errorf("--chunk-points %s: %d, want an error", in, got)
		}
	}
}
