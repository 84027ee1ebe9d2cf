package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/sim"
)

// poolBesideCounts checks a probe's JSON: each round one trim and one growth
// alone and one of each beside the kernel, every trim alone releasing the
// staged buffer the pool cached (beside the kernel, what its scratch left
// of it).
func poolBesideCounts(t *testing.T, out string, rounds int, staged, scratch int64) poolBesideResult {
	t.Helper()
	var r poolBesideResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var n [2][2]int
	for _, c := range r.Calls {
		n[b2i(c.Trim)][b2i(c.Beside)]++
		want := staged
		if c.Trim && !c.Beside && r.Touched {
			want += scratch // the cached partition's kernel left its scratch in the pool too
		}
		if (!c.Beside && c.Bytes != want) || c.Bytes <= 0 || c.Bytes > want {
			t.Errorf("round %d: a call (trim %v, beside %v) of %d bytes, want %d (beside: at most)", c.Round, c.Trim, c.Beside, c.Bytes, want)
		}
	}
	if want := [2][2]int{{rounds, rounds}, {rounds, rounds}}; n != want {
		t.Errorf("calls [growth, trim][alone, beside] %v, want %v:\n%s", n, want, out)
	}
	if r.KernelMs <= 0 {
		t.Errorf("kernel median %g ms", r.KernelMs)
	}
	return r
}

// The probe on the emulated device: every round trims and grows back alone
// and beside the kernel, and sim calibrate fits the slowdown from its trace.
func TestBenchPoolBeside(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "probe.json")
	out, stderr, err := run(t, "bench", "pool-beside", "--rounds", "3", "--kernel", "60ms", "--delay", "5ms",
		"--staged", "2GiB", "--copy", "256MiB", "--scratch", "256MiB", "--trace", tr, "--json")
	if err != nil {
		t.Fatalf("bench pool-beside: %v\n%s", err, stderr)
	}
	poolBesideCounts(t, out, 3, 2<<30, 256<<20)
	// Touched, each cached block first holds a partition of its own.
	out, stderr, err = run(t, "bench", "pool-beside", "--rounds", "2", "--kernel", "40ms", "--touch",
		"--staged", "2GiB", "--copy", "256MiB", "--scratch", "256MiB", "--json")
	if err != nil {
		t.Fatalf("bench pool-beside --touch: %v\n%s", err, stderr)
	}
	if r := poolBesideCounts(t, out, 2, 2<<30, 256<<20); !r.Touched {
		t.Error("--touch: the result says the cached blocks were not touched")
	}
	fitted := filepath.Join(dir, "fitted.json")
	_, stderr, err = run(t, "sim", "calibrate", "--profile", "../docs/predictions/contention/h200-contention-base.json",
		"--beside-trace", tr, "--out", fitted)
	if err != nil {
		t.Fatalf("sim calibrate --beside-trace: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "device.pool_slowdown_kernel   6 ops") {
		t.Errorf("want the 6 calls beside the kernel fitted:\n%s", stderr)
	}
	if _, err := sim.LoadProfile(fitted); err != nil {
		t.Error(err)
	}
	for _, bad := range [][]string{
		{"--delay", "40ms", "--kernel", "60ms"},
		{"--backend", "sim"},
		{"--copy", "2GiB", "--staged", "1GiB"},
	} {
		if _, _, err := run(t, append([]string{"bench", "pool-beside", "--rounds", "1"}, bad...)...); err == nil {
			t.Errorf("%v: want an error", bad)
		}
	}
}

// The probe through the real device's bookkeeping (gpuprove.Device) on the
// stand-in kernel library, whose pool keeps nothing (cuda/testdata/fakegpu.c):
// every round runs, and no trim releases the cached buffer, which the probe
// reports rather than a slowdown of nothing.
func TestBenchPoolBesideOnTheStandInLibrary(t *testing.T) {
	useStandIn(t)
	_, stderr, err := run(t, "bench", "pool-beside", "--backend", "gpu", "--rounds", "2", "--kernel", "30ms",
		"--staged", "64MiB", "--copy", "16MiB", "--scratch", "16MiB", "--vram-limit", "256MiB", "--json")
	if err == nil || !strings.Contains(err.Error(), "4 of 4 trims released other than the 64.00 MiB the pool cached (round 0 released 0 B)") {
		t.Fatalf("bench pool-beside on the stand-in: %v, want every trim reported short\n%s", err, stderr)
	}
}
