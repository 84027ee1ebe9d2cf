package cli

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/sim"
)

// bench contention calibrate on the emulated device: the four one-worker
// runs and the racing ones (--race) land in their directories, the fitted
// profile holds the partition, the device's figures and the ties' share, the
// same partition flags then predict three workers on the simulator as the
// bench measures them, and --fit-only fits the same profile again from the
// traces.
func TestBenchContentionCalibrate(t *testing.T) {
	dir := t.TempDir()
	// An earlier calibration's card in dir is not these runs'.
	if err := os.WriteFile(filepath.Join(dir, "card.json"), []byte(`{"name": "stale", "memory_bytes": 1073741824}`), 0o644); err != nil {
		t.Fatal(err)
	}
	partition := []string{"--kernel", "40ms", "--before", "30ms", "--after", "10ms", "--staged", "6GiB", "--copy", "1GiB",
		"--scratch", "512MiB", "--vram-limit", "16GiB", "--items", "5", "--free-copy-work", "2450us", "--trim-copy-work", "1300us"}
	out, stderr, err := run(t, append([]string{"bench", "contention", "calibrate", "--dir", dir, "--runs", "1", "--race", "1"}, partition...)...)
	if err != nil {
		t.Fatalf("calibrate: %v\n%s", err, stderr)
	}
	for _, f := range []string{"designs/trace-single-w1.json", "designs/trace-budget-w1.json", "designs/trace-split-devsync-w1.json",
		"probe/trace-single-w1.json", "ballast/trace-split-w1.json", "probe-ballast/trace-single-w1.json", "designs.txt", "probe-ballast.txt",
		"race/trace-split-devsync-w3.json", "race/trace-split-devsync-w4.json", "race.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("calibration left no %s: %v", f, err)
		}
	}
	if !strings.Contains(stderr, "calibration 5/5 race") || !strings.Contains(stderr, "device.h2d_gbps") || !strings.Contains(stderr, "host.handoff.later_first") {
		t.Errorf("no progress or fit on stderr:\n%s", stderr)
	}
	profile := filepath.Join(dir, "profile.json")
	if !strings.Contains(out, "--profile "+profile) {
		t.Errorf("the output does not say how to predict with %s:\n%s", profile, out)
	}
	p, err := sim.LoadProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "contention" || p.Partition.VRAMGiB != 6 || p.Partition.CopyGiB != 1 || p.Partition.ScratchGiB != 0.5 || p.Device.H2DGBps < 20 || p.Device.H2DGBps > 70 ||
		p.Device.FreeCopyWorkMsPerGiB < 1.5 || p.Device.FreeCopyWorkMsPerGiB > 3.5 ||
		p.Device.TrimCopyWorkMsPerGiB < 0.8 || p.Device.TrimCopyWorkMsPerGiB > 2 || !p.Device.PoolOpsSerialize {
		t.Errorf("profile %q: partition %+v, device %+v; want 6 GiB held, 1 GiB copied, 0.5 GiB of scratch, ~55 GB/s, ~2.45 ms/GiB behind a free and ~1.3 behind a trim, the base's rules",
			p.Name, p.Partition, p.Device)
	}
	// The card is the runs' own (the emulated device of --card's 140 GiB),
	// not the base's H200.
	if p.Device.Name != "emulated" || p.Device.VRAMGiB != 140 || !strings.Contains(stderr, "the whole-card runs' device → emulated, 140") {
		t.Errorf("profile's card %q of %g GiB; want the runs' emulated device of 140 GiB", p.Device.Name, p.Device.VRAMGiB)
	}
	if h := p.Host.Handoff; h == nil || !strings.Contains(h.Source, "fitted through the simulator") {
		t.Errorf("the racing runs' ties did not reach the profile: %+v", h)
	}
	// The hint's flags predict the partition the runs had.
	var hint []string
	for _, ln := range strings.Split(out, "\n") {
		if strings.Contains(ln, "--backend sim") {
			hint = strings.Fields(ln)[1:]
		}
	}
	if len(hint) == 0 {
		t.Fatalf("no prediction command in:\n%s", out)
	}
	predicted, stderr, err := run(t, append(hint, "--designs", "single,split,budget", "--workers", "3", "--seeds", "4")...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", hint, err, stderr)
	}
	measured, stderr, err := run(t, append([]string{"bench", "contention", "--designs", "single,split,budget", "--workers", "3"}, partition...)...)
	if err != nil {
		t.Fatalf("bench contention: %v\n%s", err, stderr)
	}
	pr, mr := contentionRows(t, predicted), contentionRows(t, measured)
	for _, d := range []string{"single", "split", "budget"} {
		pv, _ := strconv.ParseFloat(pr[d+"/3"][2], 64)
		mv, _ := strconv.ParseFloat(mr[d+"/3"][2], 64)
		t.Logf("%s × 3: predicted %.2f items/s, measured %.2f", d, pv, mv)
		if mv <= 0 || !closeEnough(pv, mv) {
			t.Errorf("%s × 3: predicted %.2f items/s from the calibration, measured %.2f", d, pv, mv)
		}
	}
	// Fitted again from the same traces, with another name and base.
	again := filepath.Join(dir, "again.json")
	if _, stderr, err := run(t, append([]string{"bench", "contention", "calibrate", "--dir", dir, "--fit-only", "--name", "again",
		"--out", again}, partition...)...); err != nil {
		t.Fatalf("--fit-only: %v\n%s", err, stderr)
	}
	q, err := sim.LoadProfile(again)
	if err != nil {
		t.Fatal(err)
	}
	if q.Name != "again" || q.Stages["compute"].PerConstraintNs != p.Stages["compute"].PerConstraintNs || q.Device.H2DGBps != p.Device.H2DGBps ||
		q.Host.Handoff.LaterFirst != p.Host.Handoff.LaterFirst || q.Device.Name != p.Device.Name || q.Device.VRAMGiB != p.Device.VRAMGiB {
		t.Errorf("--fit-only: %s compute %g ns, %g GB/s, later_first %g; the run's fit: %g ns, %g GB/s, %g", q.Name, q.Stages["compute"].PerConstraintNs,
			q.Device.H2DGBps, q.Host.Handoff.LaterFirst, p.Stages["compute"].PerConstraintNs, p.Device.H2DGBps, p.Host.Handoff.LaterFirst)
	}
}

// --beside runs split and split-first at 2-4 workers and fits the pool's
// work beside kernels from them, both figures replacing the base's, and
// --fit-only finds the same runs again. The values are not checked here:
// the emulated device slows neither side, its pool work is a millisecond
// of host sleep, and what the fit sees beside it is the host's jitter
// (0-0.13 for the kernel's side on this 2-core host under load); the
// figures' arithmetic is sim's TestCalibratePoolSlowdownBesideAKernel and
// TestCalibrateKernelSlowdownBesidePool.
func TestBenchContentionCalibrateBeside(t *testing.T) {
	dir := t.TempDir()
	partition := []string{"--kernel", "40ms", "--before", "30ms", "--after", "10ms", "--staged", "6GiB", "--copy", "1GiB",
		"--scratch", "512MiB", "--vram-limit", "16GiB", "--items", "5"}
	_, stderr, err := run(t, append([]string{"bench", "contention", "calibrate", "--dir", dir, "--runs", "1", "--beside", "1"}, partition...)...)
	if err != nil {
		t.Fatalf("calibrate --beside: %v\n%s", err, stderr)
	}
	for _, w := range []string{"2", "3", "4"} {
		for _, d := range []string{"split", "split-first"} {
			if _, err := os.Stat(filepath.Join(dir, "beside", "trace-"+d+"-w"+w+".json")); err != nil {
				t.Errorf("no beside run of %s × %s: %v", d, w, err)
			}
		}
	}
	if !strings.Contains(stderr, "device.pool_slowdown_kernel") || !strings.Contains(stderr, "device.kernel_slowdown_pool") {
		t.Errorf("the beside runs fitted nothing:\n%s", stderr)
	}
	p, err := sim.LoadProfile(filepath.Join(dir, "profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Device.Source, "pool_slowdown_kernel") || !strings.Contains(p.Device.Source, "kernel_slowdown_pool") {
		t.Errorf("the profile's device source does not name the beside runs' figures: %q", p.Device.Source)
	}
	again := filepath.Join(dir, "again.json")
	if _, stderr, err := run(t, append([]string{"bench", "contention", "calibrate", "--dir", dir, "--fit-only", "--out", again}, partition...)...); err != nil {
		t.Fatalf("--fit-only: %v\n%s", err, stderr)
	}
	q, err := sim.LoadProfile(again)
	if err != nil {
		t.Fatal(err)
	}
	if q.Device.PoolSlowdownKernel != p.Device.PoolSlowdownKernel || q.Device.KernelSlowdownPool != p.Device.KernelSlowdownPool {
		t.Errorf("--fit-only: %g, %g; the run's fit: %g, %g", q.Device.PoolSlowdownKernel, q.Device.KernelSlowdownPool,
			p.Device.PoolSlowdownKernel, p.Device.KernelSlowdownPool)
	}
}

func TestBenchContentionCalibrateBadInput(t *testing.T) {
	empty := t.TempDir()
	for _, args := range [][]string{
		{"--backend", "sim"},
		{"--vram-limit", "16GiB", "--card", "16GiB"},
		{"--card", "lots"},
		{"--designs", "nope"},
		{"--base", "no-such-profile"},
		{"--fit-only"}, // nothing in --dir
		{"--race", "-1"},
		{"--beside", "-1"},
	} {
		_, stderr, err := run(t, append([]string{"bench", "contention", "calibrate", "--dir", empty, "--items", "1"}, args...)...)
		if err == nil {
			t.Errorf("calibrate %v: accepted", args)
		} else if strings.Contains(stderr, "panic") {
			t.Errorf("calibrate %v: %s", args, stderr)
		}
	}
}

// The gpu backend's calibration over the stand-in kernel library (host memory
// behind the C ABI, 512 MiB): the whole-card runs without a ballast (--card at
// or above the device's memory), the limited ones under --vram-limit's, and
// a profile whose partition is the flags'.
func TestBenchContentionCalibrateOnTheStandInLibrary(t *testing.T) {
	useStandIn(t)
	dir := t.TempDir()
	_, stderr, err := run(t, "bench", "contention", "calibrate", "--backend", "gpu", "--dir", dir, "--runs", "1", "--items", "3",
		"--designs", "single,split", "--kernel", "10ms", "--before", "5ms", "--after", "5ms", "--staged", "64MiB", "--copy", "16MiB",
		"--scratch", "16MiB", "--vram-limit", "256MiB", "--card", "512MiB")
	if err != nil {
		t.Fatalf("calibrate on the stand-in: %v\n%s", err, stderr)
	}
	for _, run := range []string{"designs        every design with the CPU stages, whole card (512.00 MiB limit)", "ballast        split under the limit (256.00 MiB limit)"} {
		if !strings.Contains(stderr, run) {
			t.Errorf("no %q on stderr:\n%s", run, stderr)
		}
	}
	p, err := sim.LoadProfile(filepath.Join(dir, "profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Device.VRAMGiB <= 0 || p.Device.VRAMGiB > 0.5 || strings.Contains(p.Device.Name, "H200") {
		t.Errorf("profile's card %q of %g GiB; want the stand-in's 512 MiB or less, not the base's H200", p.Device.Name, p.Device.VRAMGiB)
	}
	if math.Abs(p.Partition.VRAMGiB-64.0/1024) > 1e-3 || math.Abs(p.Partition.CopyGiB-16.0/1024) > 1e-3 {
		t.Errorf("partition %+v: want 64 MiB held, 16 MiB copied", p.Partition)
	}
	if _, err := os.Stat(filepath.Join(dir, "designs", "trace-split-w1.json")); err != nil {
		t.Errorf("no split run among the designs: %v", err)
	}
}
