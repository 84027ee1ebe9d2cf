package cli

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/sim"
)

// bench prove's rows of several sizes write a trace each.
func TestBenchTraceNames(t *testing.T) {
	a, b := benchTraceName("split", 3, 0, 20), benchTraceName("split", 3, 0, 22)
	if a == b || a != "trace-split-w3-card-log20.json" || benchTraceName("budget", 1, 16<<30, 27) != "trace-budget-w1-16.00GiB-log27.json" {
		t.Fatalf("trace names %q, %q, %q", a, b, benchTraceName("budget", 1, 16<<30, 27))
	}
}

// The scenario bench prove writes beside a row's trace is the run as the
// simulator takes it: written from the plan the H100 printed for porep-sha
// 2^26 under 16 GiB (runs/h100-2026-12-06e c1), it gives the device memory,
// resident memory, jobs and host gate of the scenario that round's call wrote
// from the printed plan (pred/fit.json), and `sim calibrate` fitted through
// it, with the partitions' size taken from it, gives the profile that call
// predicted its rows from.
func TestBenchScenarioIsTheCalibrationsScenario(t *testing.T) {
	t.Chdir("..")
	const gib = 1 << 30
	round := int64(gib / 100) // the plan printed two decimals
	plan := gpuprove.Plan{Free: 1594 * round, Partition: 4 * gib, Layout: gpuprove.LayoutCompact, Tier: gpuprove.TierPinned,
		HostKeys: 2806 * round, Chunks: 225 * round, Scratch: 345 * round, Tables: 201 * round}
	cfg := actors.Config{Design: "budget", WorkersPerDevice: 1, HostMemLimit: 54 * gib, SynthWorkers: 8}
	hostGiB := 17.881 // prover.HostFootprint of porep-sha 2^26, as bench prints it
	hostBytes := int64(hostGiB * gib)
	name := strings.TrimSuffix(benchScenarioName(benchTraceName("budget", 1, 16*gib, 26)), ".json")
	sc := benchScenario(name, "porep-sha", cfg, plan, 16*gib, 1, 67108404, hostBytes, 2, 10)
	dir := t.TempDir()
	path := filepath.Join(dir, benchScenarioName(benchTraceName("budget", 1, 16*gib, 26)))
	if filepath.Base(path) != "scenario-budget-w1-16.00GiB-log26.json" {
		t.Fatalf("scenario file %s", filepath.Base(path))
	}
	if err := writeBenchScenario(path, sc); err != nil {
		t.Fatal(err)
	}
	got, err := sim.LoadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	runDir := "docs/runs/h100-2026-12-06e/"
	want, err := sim.LoadScenario(runDir + "pred/fit.json")
	if err != nil {
		t.Fatal(err)
	}
	if got.VRAMGiB != want.VRAMGiB || got.ResidentGiB != want.ResidentGiB || got.HostMemLimitGiB != want.HostMemLimitGiB ||
		got.SynthWorkers != want.SynthWorkers || got.Design != want.Design || got.WorkersPerDevice != want.WorkersPerDevice ||
		!reflect.DeepEqual(got.Jobs, want.Jobs) {
		t.Fatalf("bench's scenario: vram %g, resident %g, gate %g, slots %d, %s w%d, jobs %+v\nthe call's:      vram %g, resident %g, gate %g, slots %d, %s w%d, jobs %+v",
			got.VRAMGiB, got.ResidentGiB, got.HostMemLimitGiB, got.SynthWorkers, got.Design, got.WorkersPerDevice, got.Jobs,
			want.VRAMGiB, want.ResidentGiB, want.HostMemLimitGiB, want.SynthWorkers, want.Design, want.WorkersPerDevice, want.Jobs)
	}
	tr := untarFile(t, runDir+"c1/atsize.tgz", "cal/trace-budget-w1-16.00GiB-log26.json.gz", dir)
	committed, err := sim.LoadProfile(runDir + "pred/profile.json")
	if err != nil {
		t.Fatal(err)
	}
	sameFit(t, calibrateAtSize(t, dir, tr, path), committed)
}

// --copy-load's modes: a row alone, beside the copies, or both, alone
// first; and a row's words for the copies beside it.
func TestCopyLoadModes(t *testing.T) {
	for in, want := range map[string][]bool{"off": {false}, "on": {true}, "also": {false, true}} {
		if got, err := copyLoadModes(in); err != nil || !slices.Equal(got, want) {
			t.Errorf("--copy-load %s: %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := copyLoadModes("both"); err == nil {
		t.Error("--copy-load both: no error")
	}
	if got := copiesNote(gpuBenchRow{}); got != "" {
		t.Errorf("a row alone: %q", got)
	}
	if got := copiesNote(gpuBenchRow{copies: true, copyGBps: []float64{55.14, 48}}); got != " beside copies (55.1, 48.0 GB/s)" {
		t.Errorf("a row beside copies: %q", got)
	}
}

// The copy load leaves its stream empty between copies (newCopyLoop: one
// copy at a time), so that a device-wide wait made while it runs (a
// cudaFree of the prover's) returns: on the stand-in library, whose
// device-wide waits wait until every stream is empty, bench interference's
// load, one copy always queued behind the one running, holds such a wait
// until it stops (not asserted here: whether the stream runs dry depends on
// how soon the host queues the next copy).
func TestCopyLoadLetsDeviceWideWaitsThrough(t *testing.T) {
	standInFree(t)
	d, err := cuda.Open(os.Getenv(cuda.EnvLibrary))
	if err != nil {
		t.Fatal(err)
	}
	// Copies of 64 MiB take the stand-in's stream thread milliseconds.
	b, ld, err := newCopyLoop(d, 64<<20)
	defer func() {
		if err := b.close(); err != nil {
			t.Error(err)
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := ld.start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Sync() }()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(20 * time.Second):
		t.Error("a device sync beside the copy load did not return in 20 s while the load ran")
	}
	cancel()
	if err := ld.stop(); err != nil {
		t.Error(err)
	}
	if st := ld.stats(); st.Units == 0 || st.Running {
		t.Errorf("the copy load: %+v, want copies made and the load stopped", st)
	}
}
