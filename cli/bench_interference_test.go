package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/cuda"
)

// interferenceReport reads bench interference --json.
func interferenceReport(t *testing.T, out string) ifReport {
	t.Helper()
	var rep ifReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench interference --json printed something that is not JSON: %v\n%s", err, out)
	}
	return rep
}

// checkInterferers fails unless every load that ran was started and stopped
// as often, did work, and is not running any more.
func checkInterferers(t *testing.T, rep ifReport, want map[string]int) {
	t.Helper()
	got := map[string]ifLoadStats{}
	for _, s := range rep.Stopped {
		got[s.Name] = s
	}
	for name, starts := range want {
		s, ok := got[name]
		if !ok || s.Starts != starts || s.Stops != starts || s.Running || s.Units == 0 || s.Bytes == 0 {
			t.Errorf("load %s: %+v, want %d starts and as many stops, work done, not running", name, s, starts)
		}
	}
	if len(got) != len(want) {
		t.Errorf("loads %+v, want %v", rep.Stopped, want)
	}
}

// standInFree builds the stand-in kernel library, points the command at it
// and returns a function reporting its free device memory.
func standInFree(t *testing.T) func() int64 {
	t.Helper()
	lib, err := cuda.BuildStandIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(cuda.EnvLibrary, lib)
	t.Setenv("CUZK_FAKE_GPU_BYTES", strconv.Itoa(256<<20))
	t.Setenv("CUZK_FAKE_GPU_NS_PER_BYTE", "1") // a 1 MiB memset takes 1 ms: the memset kernel runs 16 ms
	return func() int64 {
		t.Helper()
		d, err := cuda.Open(lib)
		if err != nil {
			t.Fatal(err)
		}
		free, _, err := d.MemInfo()
		if err != nil {
			t.Fatal(err)
		}
		return free
	}
}

// The stand-in library (cuda/testdata/fakegpu.c) has no MSM or NTT, so the
// memset kernel is timed there, beside every load: the table has a row per
// load after the kernel alone, every load moved bytes while the kernel ran
// and was stopped, its goroutines gone, and the device memory is all back.
func TestBenchInterferenceOnTheStandInLibrary(t *testing.T) {
	free := standInFree(t)
	before, goroutines := free(), runtime.NumGoroutine()
	args := []string{"bench", "interference", "--kernels", "memset", "--memset-bytes", "1MiB", "--copy-bytes", "4MiB",
		"--cpu-bytes", "4MiB", "--cpu-threads", "2", "--runs", "3"}
	out, stderr, err := run(t, append(args, "--interference", "copy")...)
	if err != nil {
		t.Fatalf("bench interference: %v\n%s", err, stderr)
	}
	var rows [][]string
	for _, ln := range strings.Split(out, "\n") {
		if f := strings.Fields(ln); len(f) >= 9 && f[0] == "memset" {
			rows = append(rows, f)
		}
	}
	if len(rows) != 3 || rows[0][1] != "alone" || rows[1][1] != "copy" || rows[2][1] != "alone-again" || rows[0][7] != "1.000x" || rows[1][8] != "copy" {
		t.Fatalf("want the memset kernel alone, beside copies with the copies' rate, then alone again:\n%s", out)
	}
	for _, r := range rows {
		if ms, err := strconv.ParseFloat(r[5], 64); err != nil || ms <= 0 {
			t.Errorf("row %v: host ms %q, want a positive time", r, r[5])
		}
		if !strings.HasSuffix(r[7], "x") {
			t.Errorf("row %v: host slowdown %q", r, r[7])
		}
	}
	if gbps, err := strconv.ParseFloat(rows[1][9], 64); err != nil || gbps <= 0 {
		t.Errorf("copy rate %q, want a positive GB/s\n%s", rows[1][9], out)
	}
	for _, want := range []string{"host: the host clock", "device: CUDA events", "load copy: started 1 times, stopped 1",
		"kernel_slowdown_copy", "device clock read 0 ms alone"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, stderr, err = run(t, append(args, "--interference", "copy,cpu,memset,all", "--json")...)
	if err != nil {
		t.Fatalf("bench interference --json: %v\n%s", err, stderr)
	}
	rep := interferenceReport(t, out)
	wantRows := []string{"alone", "copy", "cpu", "memset", "all", "alone-again"}
	if len(rep.Rows) != len(wantRows) {
		t.Fatalf("rows %+v, want %v", rep.Rows, wantRows)
	}
	for i, r := range rep.Rows {
		if r.Kernel != "memset" || r.Interference != wantRows[i] || len(r.Host.Runs) != 3 || r.Host.Median <= 0 || r.Host.P90 < r.Host.Median || r.SlowHost <= 0 {
			t.Errorf("row %d: %+v, want memset beside %s, 3 timed runs", i, r, wantRows[i])
		}
		for _, part := range loadParts(r.Interference) {
			if !strings.HasPrefix(r.Interference, "alone") && !(r.AchievedGBps[part] > 0) {
				t.Errorf("row %s: %s moved %v GB/s meanwhile, want some", r.Interference, part, r.AchievedGBps[part])
			}
		}
	}
	checkInterferers(t, rep, map[string]int{"copy": 2, "cpu": 2, "memset": 1})
	if after := free(); after != before {
		t.Errorf("device memory free: %d before, %d after: the bench did not free everything", before, after)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("%d goroutines after the bench, %d before: a load is still running", n, goroutines)
	}
}

// A kernel the library lacks fails the command with CUDA's error, after the
// load beside it was stopped and everything freed.
func TestBenchInterferenceStopsLoadsOnFailure(t *testing.T) {
	free := standInFree(t)
	before := free()
	_, _, err := run(t, "bench", "interference", "--kernels", "msm", "--msm-log", "4", "--interference", "copy",
		"--copy-bytes", "1MiB", "--runs", "1")
	if err == nil || !strings.Contains(err.Error(), "cudaErrorNotSupported") || !strings.Contains(err.Error(), "msm 2^4") {
		t.Fatalf("MSM on the stand-in: %v, want cudaErrorNotSupported naming the kernel", err)
	}
	if after := free(); after != before {
		t.Errorf("device memory free: %d before, %d after the failure", before, after)
	}
}

// Without the kernel library the command says so; it never panics.
func TestBenchInterferenceWithoutLibrary(t *testing.T) {
	t.Setenv(cuda.EnvLibrary, filepath.Join(t.TempDir(), "missing", cuda.LibraryName))
	_, _, err := run(t, "bench", "interference", "--runs", "1")
	if !errors.Is(err, cuda.ErrUnavailable) || !strings.Contains(err.Error(), "bench interference") {
		t.Fatalf("without a library: %v, want cuda.ErrUnavailable from bench interference", err)
	}
}

func TestBenchInterferenceBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--kernels", "fft"},
		{"--kernels", ""},
		{"--interference", "network"},
		{"--runs", "0"},
		{"--copy-bytes", "0"},
		{"--ntt-log", "40"},
	} {
		if _, _, err := run(t, append([]string{"bench", "interference"}, args...)...); err == nil || errors.Is(err, cuda.ErrUnavailable) {
			t.Errorf("bench interference %v: %v, want the flag refused before the library is loaded", args, err)
		}
	}
}

// On a GPU the real kernels run, small, beside every load; without one the
// test is skipped, and under CUZK_REQUIRE_GPU=1 it fails.
func TestBenchInterferenceOnGPU(t *testing.T) {
	if _, err := cuda.Load(""); err != nil {
		if os.Getenv("CUZK_REQUIRE_GPU") == "1" {
			t.Fatalf("CUZK_REQUIRE_GPU=1 but no GPU backend: %v", err)
		}
		if errors.Is(err, cuda.ErrUnavailable) {
			t.Skipf("no GPU backend: %v", err)
		}
		t.Fatal(err)
	}
	out, stderr, err := run(t, "bench", "interference", "--msm-log", "16", "--ntt-log", "18", "--memset-bytes", "64MiB",
		"--copy-bytes", "256MiB", "--cpu-bytes", "256MiB", "--runs", "3", "--json")
	if err != nil {
		t.Fatalf("bench interference on the GPU: %v\n%s", err, stderr)
	}
	rep := interferenceReport(t, out)
	if len(rep.Rows) != 3*6 {
		t.Fatalf("%d rows, want 3 kernels × (alone, 4 loads, alone again):\n%s", len(rep.Rows), out)
	}
	for _, r := range rep.Rows {
		if r.Device.Median <= 0 || r.Host.Median <= 0 || r.SlowDevice <= 0 || r.SlowHost <= 0 {
			t.Errorf("%s beside %s: %+v, want positive times and slowdowns", r.Kernel, r.Interference, r)
		}
		if r.Interference == "copy" && r.AchievedGBps["copy"] < 1 {
			t.Errorf("%s: copies moved %.2f GB/s meanwhile", r.Kernel, r.AchievedGBps["copy"])
		}
		t.Logf("%-9s %-7s device %7.3f ms (%.3fx), host %7.3f ms (%.3fx), %v", r.Kernel, r.Interference,
			r.Device.Median, r.SlowDevice, r.Host.Median, r.SlowHost, r.AchievedGBps)
	}
	checkInterferers(t, rep, map[string]int{"copy": 6, "cpu": 6, "memset": 3})
}
