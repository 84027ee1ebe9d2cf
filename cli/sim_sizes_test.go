package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/sim"
)

// untarFile writes the member name of the .tgz archive to dir and returns
// its path.
func untarFile(t *testing.T, archive, name, dir string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("%s has no %s", archive, name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimPrefix(h.Name, "./") != name {
			continue
		}
		out := filepath.Join(dir, filepath.Base(archive)+"-"+filepath.Base(name))
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// The H100's porep-sha profile with the card's own device figures comes out
// of the command docs/simulator.md gives ("The card's device figures"): from
// the one-worker runs at 2^24 (c1), 2^22 and 2^23 (c3) of
// runs/h100-2026-12-06c, f30's contention profile and the base with the
// lanes, the committed f30dev profile's stage costs and device figures.
func TestSimCalibrateSizesAndDeviceFrom(t *testing.T) {
	t.Chdir("..")
	dir := t.TempDir()
	runs := "docs/runs/h100-2026-12-06c/"
	t24 := untarFile(t, runs+"c1/cal.tgz", "tr/trace-budget-w1-card-log24.json.gz", dir)
	t22 := untarFile(t, runs+"c3/cal.tgz", "tr/trace-budget-w1-card-log22.json.gz", dir)
	t23 := untarFile(t, runs+"c3/cal.tgz", "tr/trace-budget-w1-card-log23.json.gz", dir)
	base, err := sim.LoadProfile("docs/predictions/h200-porepsha64m-card.json")
	if err != nil {
		t.Fatal(err)
	}
	base.Host.CPUOrder, base.Host.CPUHold = sim.CPULanes, 2
	raw, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	basePath := filepath.Join(dir, "base.json")
	if err := os.WriteFile(basePath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	f30 := "docs/runs/h100-2026-12-06b/pred/h200-contention-f30.json"
	args := []string{"sim", "calibrate", "--profile", basePath, "--trace", t24, "--constraints", "16777215",
		"--fit-scenario", "docs/predictions/h100-porepsha16m-card-fit-job.json"}
	for _, bad := range [][]string{{"--size-trace", t22}, {"--size-trace", "x=" + t22}, {"--device-from", "nowhere.json"}} {
		if _, _, err := run(t, append(args, bad...)...); err == nil {
			t.Errorf("sim calibrate %s: want an error", strings.Join(bad, " "))
		}
	}
	out := filepath.Join(dir, "profile.json")
	_, stderr, err := run(t, append(args, "--device-from", f30, "--size-trace", "4194275="+t22, "--size-trace", "8388231="+t23, "--out", out)...)
	if err != nil {
		t.Fatalf("sim calibrate: %v\n%s", err, stderr)
	}
	got, err := sim.LoadProfile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sim.LoadProfile("docs/predictions/h100-porepsha64m-card-f30dev.json")
	if err != nil {
		t.Fatal(err)
	}
	for st, w := range want.Stages {
		g := got.Stages[st]
		if math.Abs(g.PerConstraintNs-w.PerConstraintNs) > 1e-3*w.PerConstraintNs || math.Abs(g.BaseMs-w.BaseMs) > 1e-3 {
			t.Errorf("%s: %g ms + %.4f ns a constraint, the committed profile %g + %.4f", st, g.BaseMs, g.PerConstraintNs, w.BaseMs, w.PerConstraintNs)
		}
	}
	if got.Stages["compute"].BaseMs < 20 || got.Partition.CopyGiB != 0.5 || got.Device.MallocFreeWaitMsPerGiB != want.Device.MallocFreeWaitMsPerGiB {
		t.Errorf("compute's fixed cost %g ms, copy %g GiB, malloc wait %g ms a GiB: want about 26, 0.5, %g",
			got.Stages["compute"].BaseMs, got.Partition.CopyGiB, got.Device.MallocFreeWaitMsPerGiB, want.Device.MallocFreeWaitMsPerGiB)
	}
	if !strings.Contains(stderr, "spans at 3 sizes") {
		t.Errorf("the fit's report does not give the sizes:\n%s", stderr)
	}
}

// The H100's 2^26 profile made on the card (runs/h100-2026-12-06d c2.sh,
// predict.sh) comes out of the committed one-worker trace again: its stage
// costs, its partition (8.94 GiB at 2^26, staging a alone: stages_alone)
// and the device figures its calibration read. Its predictions are checked
// row by row by TestInPlaceProvingPredictionsReproduce.
func TestSimCalibrateAtTheTargetSize(t *testing.T) {
	t.Chdir("..")
	dir := t.TempDir()
	run26 := "docs/runs/h100-2026-12-06d/c2/"
	tr := untarFile(t, run26+"c2.tgz", "cal/trace-budget-w1-card-log26.json.gz", dir)
	got := calibrateAtSize(t, dir, tr, "docs/predictions/h100-porepsha64m-card-w1-fit-job.json", "--constraints", "67108404")
	want, err := sim.LoadProfile(run26 + "profile.json")
	if err != nil {
		t.Fatal(err)
	}
	sameFit(t, got, want)
	if gib := float64(got.PartitionVRAM(67108404)) / (1 << 30); !got.Partition.StagesAlone || math.Abs(gib-8.94) > 0.01 {
		t.Errorf("a 2^26 partition: %.3f GiB, stages alone %v; want 8.94 and true", gib, got.Partition.StagesAlone)
	}
	// --stream-gib (predict.sh: the key points the plan streams) adds
	// partition.stream_gib and nothing else; a negative one is refused.
	streamed := calibrateAtSize(t, dir, tr, "docs/predictions/h100-porepsha64m-card-w1-fit-job.json", "--constraints", "67108404", "--stream-gib", "28.06")
	if streamed.Partition.StreamGiB != 28.06 {
		t.Errorf("--stream-gib 28.06: partition.stream_gib %g", streamed.Partition.StreamGiB)
	}
	streamed.Partition.StreamGiB = 0
	sameFit(t, streamed, want)
	if _, stderr, err := run(t, "sim", "calibrate", "--profile", "docs/predictions/h100-porepsha-lanes-base.json", "--trace", tr,
		"--constraints", "67108404", "--stream-gib", "-1"); err == nil || !strings.Contains(stderr+err.Error(), "--stream-gib") {
		t.Errorf("--stream-gib -1: %v\n%s", err, stderr)
	}
	// --copies-trace: the same row beside endless copies, every kernel a
	// fifth longer, gives device.stream_stall: the share of the stream's
	// duty (28.06 GiB at the profile's h2d_gbps over the kernel alone) the
	// kernels lost, 1 − 1/1.2 of their run; nothing else changes.
	copies, aloneMs := stretchCompute(t, tr, 1.2, filepath.Join(dir, "copies.json"))
	stalled := calibrateAtSize(t, dir, tr, "docs/predictions/h100-porepsha64m-card-w1-fit-job.json", "--constraints", "67108404",
		"--stream-gib", "28.06", "--copies-trace", copies)
	duty := 28.06 * (1 << 30) / (stalled.Device.H2DGBps * 1e9) * 1e3 / aloneMs
	if want := (1 - 1/1.2) / duty; stalled.Device.StreamStall == nil || math.Abs(*stalled.Device.StreamStall-want) > 2e-3 {
		t.Errorf("--copies-trace: device.stream_stall %v, want %.3f (duty %.3f)", stalled.Device.StreamStall, want, duty)
	}
	stalled.Device.StreamStall, stalled.Device.Source, stalled.Partition.StreamGiB = nil, want.Device.Source, 0
	sameFit(t, stalled, want)
	fitArgs := []string{"sim", "calibrate", "--profile", "docs/predictions/h100-porepsha-lanes-base.json", "--constraints", "67108404",
		"--fit-scenario", "docs/predictions/h100-porepsha64m-card-w1-fit-job.json"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--copies-trace", copies}, "--copies-trace needs --trace"},
		{[]string{"--trace", tr, "--copies-trace", copies}, "stream no keys"},
		{[]string{"--trace", tr, "--stream-gib", "28.06", "--copies-trace", filepath.Join(dir, "none.json")}, "none.json"},
	} {
		if _, stderr, err := run(t, append(slices.Clone(fitArgs), c.args...)...); err == nil || !strings.Contains(stderr+err.Error(), c.want) {
			t.Errorf("sim calibrate %s: %v, want an error saying %q\n%s", strings.Join(c.args, " "), err, c.want, stderr)
		}
	}
}

// stretchCompute writes the trace at path (.json.gz) to out with every
// compute stage f times as long, and returns out and the median of the
// stages as they were, the first left out (as the stage costs take them).
func stretchCompute(t *testing.T, path string, f float64, out string) (string, float64) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var tr map[string]any
	if err := json.NewDecoder(zr).Decode(&tr); err != nil {
		t.Fatal(err)
	}
	var ms []float64
	for _, e := range tr["traceEvents"].([]any) {
		ev := e.(map[string]any)
		if ev["ph"] == "X" && ev["name"] == "compute" {
			d := ev["dur"].(float64)
			ms = append(ms, d/1e3)
			ev["dur"] = d * f
		}
	}
	if len(ms) < 4 {
		t.Fatalf("%s: %d compute stages", path, len(ms))
	}
	data, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ms = ms[1:]
	slices.Sort(ms)
	med := ms[len(ms)/2]
	if len(ms)%2 == 0 {
		med = (ms[len(ms)/2-1] + med) / 2
	}
	return out, med
}

// calibrateAtSize is the calibration of docs/runs/atsize/predict.sh: sim
// calibrate on the H100's base with the lanes and f30's device figures (the
// H100's own), fitted through fitScenario on trace; extra flags after.
func calibrateAtSize(t *testing.T, dir, trace, fitScenario string, extra ...string) *sim.Profile {
	t.Helper()
	out := filepath.Join(dir, "profile.json")
	args := append([]string{"sim", "calibrate", "--profile", "docs/predictions/h100-porepsha-lanes-base.json",
		"--device-from", "docs/runs/h100-2026-12-06b/pred/h200-contention-f30.json", "--trace", trace,
		"--fit-scenario", fitScenario, "--out", out}, extra...)
	if _, stderr, err := run(t, args...); err != nil {
		t.Fatalf("sim calibrate: %v\n%s", err, stderr)
	}
	p, err := sim.LoadProfile(out)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sameFit fails t where got's stage costs, partition, device figures or
// reference size differ from want's (a committed profile fitted the same way).
func sameFit(t *testing.T, got, want *sim.Profile) {
	t.Helper()
	for st, w := range want.Stages {
		if g := got.Stages[st]; g.PerConstraintNs != w.PerConstraintNs || g.BaseMs != w.BaseMs {
			t.Errorf("%s: %g ms + %.4f ns a constraint, the committed profile %g + %.4f", st, g.BaseMs, g.PerConstraintNs, w.BaseMs, w.PerConstraintNs)
		}
	}
	if got.Partition != want.Partition || got.Device != want.Device || got.ReferenceConstraints != want.ReferenceConstraints {
		t.Errorf("partition %+v, device h2d %g GB/s, reference %d; the committed profile %+v, %g, %d",
			got.Partition, got.Device.H2DGBps, got.ReferenceConstraints, want.Partition, want.Device.H2DGBps, want.ReferenceConstraints)
	}
}
