package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/sim"
)

func runSimCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := App()
	app.Writer, app.ErrWriter = &out, &errOut
	app.ExitErrHandler = func(*cli.Context, error) {}
	err := app.Run(append([]string{"cuzk", "sim"}, args...))
	return out.String(), err
}

// TestSimReport: the report names everything a user compares designs by,
// and the seed that replays it.
func TestSimReport(t *testing.T) {
	out, err := runSimCLI(t, "--scenario", "phase10-split", "--seed", "3")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"partitions/s", "per 10-partition job", "GPU busy", "VRAM peak", "OOM", "fallbacks", "wait p99 ms", "hold p50 ms", "seed        3"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestSimFilesAndJSON(t *testing.T) {
	dir := t.TempDir()
	tr, svg := filepath.Join(dir, "t.json"), filepath.Join(dir, "t.svg")
	out, err := runSimCLI(t, "--scenario", "budget", "--workers", "2", "--json", "--trace", tr, "--timeline", svg, "--timeline-until", "20")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Design  string `json:"design"`
		Workers int    `json:"workers_per_device"`
		Proved  int    `json:"partitions_proved"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json printed no JSON: %v\n%s", err, out)
	}
	if rep.Design != "budget" || rep.Workers != 2 || rep.Proved != 50 {
		t.Errorf("report %+v, want budget with 2 workers and 50 partitions proved", rep)
	}
	var trace map[string]any
	data, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &trace); err != nil || trace["traceEvents"] == nil {
		t.Errorf("trace is not a Chrome trace: %v", err)
	}
	if data, err := os.ReadFile(svg); err != nil || !bytes.HasPrefix(data, []byte("<svg")) {
		t.Errorf("timeline is not an SVG: %v", err)
	}
}

func TestSimCompareAndErrors(t *testing.T) {
	out, err := runSimCLI(t, "--scenario", "phase9", "--compare")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"single", "split-devsync", "split", "budget"} {
		if !strings.Contains(out, "\n"+d+" ") {
			t.Errorf("compare table lacks design %s:\n%s", d, out)
		}
	}
	if _, err := runSimCLI(t, "--scenario", "nope"); err == nil || !strings.Contains(err.Error(), "phase9") {
		t.Errorf("unknown scenario: err %v, want one listing the embedded scenarios", err)
	}
	if _, err := runSimCLI(t, "--scenario", "phase9", "--design", "fastest"); err == nil || !strings.Contains(err.Error(), "fastest") {
		t.Errorf("unknown design: err %v", err)
	}
}

// sim calibrate writes a profile whose stage costs are a one-worker trace's
// means, and refuses a trace of several workers; sim without a scenario is an
// error.
func TestSimCalibrate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "profile.json")
	_, stderr, err := run(t, "sim", "calibrate", "--trace", "../docs/traces/gpu-mimc1m-g2-budget-w1-card.json.gz",
		"--profile", "../docs/predictions/h200x2-mimc256k.json", "--constraints", "1048305", "--name", "fitted", "--out", out)
	if err != nil {
		t.Fatalf("sim calibrate: %v\n%s", err, stderr)
	}
	p, err := sim.LoadProfile(out)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "fitted" || p.ReferenceConstraints != 1048305 || !p.Stages["compute"].Calibrated || !strings.Contains(stderr, "synthesize") {
		t.Fatalf("profile %+v\n%s", p, stderr)
	}
	if _, _, err := run(t, "sim", "calibrate", "--trace", "../docs/traces/gpu-mimc256k-single-w3-card.json.gz",
		"--profile", "../docs/predictions/h200x2-mimc256k.json", "--constraints", "256K"); err == nil {
		t.Error("a three-worker trace was accepted")
	}
	if _, _, err := run(t, "sim"); err == nil || !strings.Contains(err.Error(), "--scenario") {
		t.Errorf("sim without a scenario: %v", err)
	}
}

// calibrateAlone runs sim calibrate with args and --out, and loads the
// profile it wrote; what it printed on stderr comes with it.
func calibrateAlone(t *testing.T, args ...string) (*sim.Profile, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "profile.json")
	_, stderr, err := run(t, append(append([]string{"sim", "calibrate"}, args...), "--out", out)...)
	if err != nil {
		t.Fatalf("sim calibrate %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	p, err := sim.LoadProfile(out)
	if err != nil {
		t.Fatal(err)
	}
	return p, stderr
}

// sim calibrate --race-trace alone adds the race between workers to the
// profile given, its other figures kept: one of the f10 traces the base
// profile's share came from has 6 ties, in 2 of which the worker granted
// later called the device first. Without a trace of either kind it is an
// error.
func TestSimCalibrateRaceOnly(t *testing.T) {
	tr := "../docs/runs/h200-2026-12-03b/r1/f10-new-140GiB-4/trace-split-devsync-w3.json.gz"
	p, stderr := calibrateAlone(t, "--profile", "../docs/predictions/contention/h200-contention-base.json", "--race-trace", tr)
	h := p.Host.Handoff
	if h == nil || h.NewestFirst != 0.973 || h.LaterFirst != 0.333 || !strings.Contains(stderr, "host.handoff.later_first") {
		t.Fatalf("handoff %+v\n%s", h, stderr)
	}
	if _, _, err := run(t, "sim", "calibrate", "--profile", "../docs/predictions/contention/h200-contention-base.json"); err == nil {
		t.Error("no trace at all was accepted")
	}
}

// sim calibrate --beside-trace alone adds how much a kernel beside them
// slows trims and pool growths to the profile given: F15's split with two
// workers, whose trims and growths back all ran beside the other's kernel,
// against F15's one-worker figures. A one-worker trace has none.
func TestSimCalibrateBesideOnly(t *testing.T) {
	prof := "../docs/predictions/contention/f15/h200-contention-f15.json"
	p, stderr := calibrateAlone(t, "--profile", prof,
		"--beside-trace", "../docs/runs/h200-2026-12-03d/r2/grid/traces-gpu-f15-140GiB/trace-split-w2.json.gz")
	if d := p.Device; d.PoolSlowdownKernel != 0.495 || !strings.HasPrefix(d.Source, "fitted from the profile's calibration traces: pool_slowdown_kernel (24 ops)") {
		t.Fatalf("slowdown %g, source %q\n%s", d.PoolSlowdownKernel, d.Source, stderr)
	}
	if _, _, err := run(t, "sim", "calibrate", "--profile", prof,
		"--beside-trace", "../docs/runs/h200-2026-12-03d/r1/cal/traces-f15/trace-split-w1.json.gz"); err == nil {
		t.Error("a one-worker trace fitted a slowdown")
	}
}

// sim calibrate --fit-scenario fits the stage costs of a one-worker run
// whose syntheses overlap (bench prove's host-memory gate) through the
// simulator: the g1 calibration run gives the stage costs of the committed
// 2^24 profile, which was fitted the same way; plain calibrate refuses that
// trace.
func TestSimCalibrateFitScenario(t *testing.T) {
	t.Chdir("..") // the scenario's profile path is relative to the repository root
	tr := "docs/runs/h200-2026-12-01g/g1/tr-m24-16g-w1/trace-budget-w1-16.00GiB.json.gz"
	args := []string{"sim", "calibrate", "--trace", tr, "--profile", "docs/predictions/h200-mimc32m-16g-e.json", "--constraints", "16777210"}
	if _, _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("plain calibrate on overlapping syntheses: %v", err)
	}
	out := filepath.Join(t.TempDir(), "profile.json")
	_, stderr, err := run(t, append(args, "--fit-scenario", "docs/predictions/h200-mimc16m-16g-g-job.json", "--out", out)...)
	if err != nil {
		t.Fatalf("sim calibrate --fit-scenario: %v\n%s", err, stderr)
	}
	got, err := sim.LoadProfile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sim.LoadProfile("docs/predictions/h200-mimc16m-16g-g.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{"compute", "synthesize", "prep", "finalize"} {
		g, w := got.Stages[st].PerConstraintNs, want.Stages[st].PerConstraintNs
		if math.Abs(g-w) > 1e-3*w {
			t.Errorf("%s: %.4f ns a constraint, the committed profile %.4f\n%s", st, g, w, stderr)
		}
	}
	if !strings.Contains(stderr, "simulated") {
		t.Errorf("no simulated means reported:\n%s", stderr)
	}
}

// cuzk sim --cluster runs a farm and reports its throughput and lost work
// as JSON; a flag of a one-host run is refused.
func TestSimCluster(t *testing.T) {
	out, err := runSimCLI(t, "--cluster", "farm-100x8", "--seed", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep sim.ClusterReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !rep.Complete || rep.Seed != 2 || rep.GPUs != 800 || rep.Throughput <= 0 || rep.Duplicates != 0 {
		t.Fatalf("report %+v: want a complete run of 800 GPUs with seed 2 and no duplicate", rep)
	}
	if _, err := runSimCLI(t, "--cluster", "farm-100x8", "--design", "split"); err == nil || !strings.Contains(err.Error(), "--design") {
		t.Fatalf("--cluster with --design: %v, want it refused", err)
	}
}

// sim calibrate --latency-trace alone adds the completion latencies of a
// trace's device calls to the profile given.
func TestSimCalibrateLatencyOnly(t *testing.T) {
	dir := t.TempDir()
	var ev []string
	for i := range 6 {
		ev = append(ev, fmt.Sprintf(`{"name":"stream_sync","ph":"i","pid":0,"tid":1,"ts":%d,"args":{"partition":"bench/%d","took_us":100000,"waited":false,"late_us":%d}}`,
			(i+1)*200000, i, 40+i))
	}
	tr := filepath.Join(dir, "trace.json")
	if err := os.WriteFile(tr, []byte(`{"traceEvents":[`+strings.Join(ev, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p, stderr := calibrateAlone(t, "--profile", "../docs/predictions/contention/h200-contention-base.json", "--latency-trace", tr)
	l := p.Host.CompletionLatency
	if l == nil || l.Calls["stream_sync"].P50Us != 42.5 || l.Waited != l.Calls["stream_sync"] ||
		!strings.Contains(stderr, "host.completion_latency.calls.stream_sync.p50_us") {
		t.Fatalf("completion latency %+v\n%s", l, stderr)
	}
}

// --seeds sums several seeds up: the seeds that met an OOM or failed a
// partition, out of how many ran, alone and with --compare; a trace records
// one seed's run and takes none.
func TestSimSeeds(t *testing.T) {
	out, err := runSimCLI(t, "--scenario", "phase10-first", "--workers", "3", "--seeds", "3", "--seed", "5")
	if err != nil {
		t.Fatal(err)
	}
	// phase10-first's fallbacks OOM and its partitions fail, whatever the seed.
	if !strings.Contains(out, "seeds 5 to 7") || !regexp.MustCompile(`split-first\s+3\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+3/3\s+3/3\s+0/3`).MatchString(out) {
		t.Errorf("--seeds 3 from 5 on phase10-first: want seeds 5 to 7 and every seed with an OOM and a failed partition:\n%s", out)
	}
	out, err = runSimCLI(t, "--scenario", "phase9", "--compare", "--seeds", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var sums []sim.SeedSummary
	if err := json.Unmarshal([]byte(out), &sums); err != nil {
		t.Fatalf("--compare --seeds --json printed no summaries: %v\n%s", err, out)
	}
	if len(sums) != 20 {
		t.Fatalf("%d summaries, want 20 (five designs × 1-4 workers)", len(sums))
	}
	for _, s := range sums {
		if s.Seeds != 2 || s.ThroughputLeast > s.ThroughputMean || s.ThroughputMean > s.ThroughputMost {
			t.Errorf("%s × %d: %d seeds, mean %g outside %g to %g", s.Design, s.WorkersPerDevice, s.Seeds, s.ThroughputMean, s.ThroughputLeast, s.ThroughputMost)
		}
	}
	if _, err := runSimCLI(t, "--scenario", "phase9", "--seeds", "2", "--trace", filepath.Join(t.TempDir(), "t.json")); err == nil {
		t.Error("--seeds 2 with --trace: no error")
	}
	if _, err := runSimCLI(t, "--scenario", "phase9", "--seeds", "0"); err == nil {
		t.Error("--seeds 0: no error")
	}
}

// The terminal line of a run of many seeds counts the seeded runs ended of
// all, from the goroutines that ran them, and ends with the whole count.
func TestSeedProgress(t *testing.T) {
	var b strings.Builder
	done, stop := seedProgress(&b, 40)
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() { defer wg.Done(); done() }()
	}
	wg.Wait()
	stop()
	last := b.String()[strings.LastIndex(b.String(), "\r")+1:]
	if !strings.Contains(last, "40 of 40 seeded runs (100 %)") || !strings.HasSuffix(last, "\n") {
		t.Errorf("last line %q, want 40 of 40 seeded runs (100 %%) and a line's end", last)
	}
}
