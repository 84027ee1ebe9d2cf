package sim

import (
	"bytes"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/trace"
)

// fuzzRunnable says whether a parsed scenario is small enough to simulate
// inside a fuzz iteration: a few devices and workers, a few dozen
// partitions, a bounded virtual time.
func fuzzRunnable(s *Scenario) bool {
	if s.Devices > 4 || s.WorkersPerDevice > 8 || len(s.Faults) > 8 {
		return false
	}
	total := 0
	for _, j := range s.Jobs {
		n := max(j.Count, 1)
		if n > 64 || j.Size > 1<<28 {
			return false
		}
		total += n * j.Partitions
	}
	return total <= 64
}

// checkFuzzReport holds a run to the invariants every scenario keeps,
// whatever its numbers: no partition proved twice, none lost (a complete
// run accounts for each as proved or failed), and no figure out of range.
func checkFuzzReport(t *testing.T, s *Scenario, r *Report) {
	t.Helper()
	total := 0
	for _, j := range s.Jobs {
		total += max(j.Count, 1) * j.Partitions
	}
	if r.Duplicates != 0 {
		t.Errorf("%d partitions proved twice", r.Duplicates)
	}
	if r.Complete && r.Partitions+r.Failed != total {
		t.Errorf("complete run accounts for %d proved + %d failed of %d partitions", r.Partitions, r.Failed, total)
	}
	if !r.Complete && r.Partitions+r.Failed > total {
		t.Errorf("%d proved + %d failed of %d partitions", r.Partitions, r.Failed, total)
	}
	if r.OOMsFirst+r.OOMsFallback != r.OOMs {
		t.Errorf("OOMs %d, by kind %d + %d", r.OOMs, r.OOMsFirst, r.OOMsFallback)
	}
	if r.GPUBusyPct < 0 || r.GPUBusyPct > 100.0001 || r.Throughput < 0 || r.SimulatedS < 0 {
		t.Errorf("busy %g %%, %g partitions/s, %g s simulated", r.GPUBusyPct, r.Throughput, r.SimulatedS)
	}
}

// fuzzDesign picks a design by the fuzzer's byte.
func fuzzDesign(b uint8) string { return actors.Designs[int(b)%len(actors.Designs)] }

// runFuzz runs scenario s, which NewScenario returned with err, checks its
// report and draws its timeline; a scenario refused, or a run that ends in
// an error, is a clear error and nothing to check.
func runFuzz(t *testing.T, s *Scenario, err error) {
	t.Helper()
	if err != nil {
		return
	}
	res, err := Run(s, Options{Record: true})
	if err != nil {
		return
	}
	checkFuzzReport(t, s, res.Report)
	var svg bytes.Buffer
	err = res.WriteTimeline(&svg)
	switch {
	case err != nil:
		t.Errorf("timeline of a run of %g s: %v", res.Report.SimulatedS, err)
	case !bytes.Contains(svg.Bytes(), []byte("</svg>")):
		t.Errorf("timeline: %d bytes, no closing tag", svg.Len())
	}
}

// FuzzScenario feeds arbitrary bytes to the scenario parser: every input is
// a scenario or a clear error, never a panic, and a scenario small enough to
// run keeps the invariants above. The embedded scenarios seed the corpus.
func FuzzScenario(f *testing.F) {
	for _, name := range ScenarioNames() {
		data, _, err := readNamed(scenarioFS, "scenarios", name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"devices":1,"design":"split","workers_per_device":2,"vram_gib":16,"resident_gib":3,"headroom_gib":1,"jobs":[{"id":"a","partitions":4,"declare_scratch":true}],"faults":[{"kind":"oom","at_ms":5}]}`))
	f.Add([]byte(`{"devices":2,"design":"split-devsync","workers_per_device":3,"stages_before":["synthesize"],"stages_after":[],"host_mem_limit_gib":40,"jobs":[{"id":"a","count":2,"partitions":3,"every_ms":10}],"faults":[{"kind":"process_crash","at_ms":100,"restart_after_ms":50}],"max_time_s":60}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScenario("fuzz.json", data)
		if err != nil {
			if err.Error() == "" || !strings.HasPrefix(err.Error(), "scenario fuzz.json") {
				t.Fatalf("error does not name the scenario: %q", err)
			}
			return
		}
		if !fuzzRunnable(s) {
			return
		}
		if s.MaxTimeS == 0 || s.MaxTimeS > 3600 {
			s.MaxTimeS = 3600
		}
		runFuzz(t, s, nil)
	})
}

// FuzzProfile feeds arbitrary bytes to the profile parser, and runs a small
// scenario on each profile it accepts: a profile is a clear error or one
// the simulator can run, never a panic or a negative cost.
func FuzzProfile(f *testing.F) {
	for _, name := range ProfileNames() {
		data, _, err := readNamed(profileFS, "profiles", name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(0), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, design, workers uint8) {
		p, err := ParseProfile("fuzz.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "profile fuzz.json") {
				t.Fatalf("error does not name the profile: %q", err)
			}
			return
		}
		s, err := NewScenario(Scenario{
			Name: "fuzz", Devices: 1, Design: fuzzDesign(design),
			WorkersPerDevice: 1 + int(workers)%4, MaxTimeS: 3600,
			Jobs: []JobConfig{{ID: "a", Partitions: 6}},
		}, p)
		runFuzz(t, s, err)
	})
}

// FuzzMachine runs every design on the contention base profile with its
// memory and cost figures drawn by the fuzzer (partitions larger than the
// card, scratch beside them, copies larger than what is staged, a ballast
// and headroom, the device model's switches): a run proves, fails or stops
// at its time limit with its partitions accounted for, or the scenario is
// refused with an error; it never panics.
func FuzzMachine(f *testing.F) {
	f.Add(16.0, 7.0, 3.0, 3.0, 95.0, 45.0, 0.0, 0.0, 1.0, uint8(3), uint8(3), uint8(0))
	f.Add(140.0, 12.0, 2.5, 12.0, 120.0, 400.0, 4.0, 1.0, 1.2, uint8(1), uint8(4), uint8(0xff))
	f.Add(16.0, 15.5, 0.4, 0.0, 1.0, 0.0, 0.0, 0.0, 0.5, uint8(4), uint8(2), uint8(0x55))
	f.Fuzz(func(t *testing.T, vram, part, scratch, copyGiB, kernelMs, synthMs, resident, headroom, exponent float64, design, workers, flags uint8) {
		base, err := LoadProfile("h200-contention-base")
		if err != nil {
			t.Fatal(err)
		}
		p := *base
		p.Device.VRAMGiB = vram
		p.Partition.VRAMGiB, p.Partition.ScratchGiB, p.Partition.CopyGiB = part, scratch, copyGiB
		p.Partition.Exponent = exponent
		p.Device.CopyFIFO = flags&1 != 0
		p.Device.PoolOpsSerialize = flags&2 != 0
		p.Device.MallocWaitsFreeWork = flags&4 != 0
		p.Device.ScratchOOMWaitsCopies = flags&8 != 0
		p.Device.ScratchOOMAtOnceAfterTrim = flags&16 != 0
		p.Device.StreamSyncWaitsPool = flags&32 != 0
		p.Stages = maps.Clone(base.Stages)
		set := func(name string, ms float64) {
			st := p.Stages[name]
			st.BaseMs, st.PerConstraintNs = ms, 0
			p.Stages[name] = st
		}
		set("compute", kernelMs)
		set("synthesize", synthMs)
		s, err := NewScenario(Scenario{
			Name: "fuzz", Devices: 1, Design: fuzzDesign(design),
			WorkersPerDevice: 1 + int(workers)%4, MaxTimeS: 600, MaxAttempts: 3,
			ResidentGiB: resident, HeadroomGiB: headroom, LockHops: flags&64 != 0,
			Jobs: []JobConfig{{ID: "a", Partitions: 8, DeclareScratch: flags&128 != 0}},
		}, &p)
		runFuzz(t, s, err)
	})
}

// fuzzTrace is the production trace of a short simulated run of the
// contention base profile.
func fuzzTrace(f *testing.F, design string, workers int) []byte {
	f.Helper()
	p, err := LoadProfile("h200-contention-base")
	if err != nil {
		f.Fatal(err)
	}
	s, err := NewScenario(Scenario{Name: "trace", Devices: 1, Design: design, WorkersPerDevice: workers, VRAMGiB: 16,
		Jobs: []JobConfig{{ID: "a", Partitions: 4}}}, p)
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	tw := trace.New(&buf)
	if _, err := Run(s, Options{Observer: tw}); err != nil {
		f.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzCalibrate feeds arbitrary traces to every calibration: each returns
// an error or a profile the simulator accepts (no NaN, no negative cost),
// never a panic. Simulated traces of one worker and of three seed the
// corpus.
func FuzzCalibrate(f *testing.F) {
	f.Add(fuzzTrace(f, "budget", 1))
	f.Add(fuzzTrace(f, "split-devsync", 3))
	f.Add([]byte(`{"traceEvents":[{"name":"compute","ph":"X","ts":0,"dur":5,"pid":0,"tid":1}]}`))
	base, err := LoadProfile("h200-contention-base")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := Trace{Name: "fuzz", JSON: data}
		check := func(what string, p *Profile, err error) {
			if err != nil {
				return
			}
			if err := p.validate(); err != nil {
				t.Errorf("%s made a profile the simulator refuses: %v", what, err)
			}
		}
		p, _, err := Calibrate(base, data, 1<<20, "fuzz")
		check("Calibrate", p, err)
		p, _, err = CalibrateDevice(base, 1<<20, tr)
		check("CalibrateDevice", p, err)
		p, _, err = CalibrateBallast(base, 16<<30, tr)
		check("CalibrateBallast", p, err)
		p, _, err = CalibrateRace(base, tr)
		check("CalibrateRace", p, err)
		p, _, err = CalibrateCompletionLatency(base, tr)
		check("CalibrateCompletionLatency", p, err)
		p, _, err = CalibratePoolBeside(base, tr)
		check("CalibratePoolBeside", p, err)
	})
}

// FuzzFaults injects the fuzzer's faults (worker crashes, OOMs, process
// crashes with restarts) into a two-device run of every design: whatever
// they hit, the run ends, no partition is proved twice, and every partition
// is proved or failed; none is lost.
func FuzzFaults(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(2), []byte{0, 10, 0, 1, 30, 1, 2, 50, 20})
	f.Add(uint64(7), uint8(1), uint8(3), []byte{2, 5, 0, 2, 6, 0, 1, 7, 1, 0, 8, 2})
	f.Add(uint64(3), uint8(4), uint8(1), []byte{1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0})
	f.Fuzz(func(t *testing.T, seed uint64, design, workers uint8, raw []byte) {
		base, err := LoadProfile("h200-contention-base")
		if err != nil {
			t.Fatal(err)
		}
		n := 1 + int(workers)%4
		var faults []FaultConfig
		for i := 0; i+2 < len(raw) && len(faults) < 8; i += 3 {
			fc := FaultConfig{AtMs: float64(raw[i+1]) * 25, Device: int(raw[i+2]) % 2, Worker: int(raw[i+2]) % n}
			switch raw[i] % 3 {
			case 0:
				fc.Kind = "worker_crash"
			case 1:
				fc.Kind = "oom"
			default:
				fc.Kind, fc.Device, fc.Worker, fc.RestartAfterMs = "process_crash", 0, 0, float64(raw[i+2])*10
			}
			faults = append(faults, fc)
		}
		s, err := NewScenario(Scenario{
			Name: "faults", Seed: seed, Devices: 2, Design: fuzzDesign(design), WorkersPerDevice: n,
			VRAMGiB: 16, MaxTimeS: 3600, Faults: faults,
			Jobs: []JobConfig{{ID: "a", Partitions: 6}, {ID: "b", Partitions: 4, SubmitAtMs: 300}},
		}, base)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := res.Report
		if !r.Complete {
			t.Fatalf("the run did not end: %d proved, %d failed of 10 in %g s", r.Partitions, r.Failed, r.SimulatedS)
		}
		checkFuzzReport(t, s, r)
	})
}

// FuzzCluster runs the farm's lease protocol (the daemons' cluster.Leases)
// over the fuzzer's network and failures: latency and jitter beside the
// lease TTL and heartbeat, slow detection, frequent crashes of hosts that
// own jobs. No proof is ever recorded twice, and a run that ends has every
// partition proved.
func FuzzCluster(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(2), 5.0, 1.0, 3000.0, 750.0, 2000.0, 0.0, 60.0, uint8(4))
	f.Add(uint64(2), uint8(5), uint8(1), 400.0, 300.0, 1000.0, 900.0, 5000.0, 120.0, 5.0, uint8(9))
	f.Fuzz(func(t *testing.T, seed uint64, hosts, gpus uint8, latency, jitter, ttl, heartbeat, detect, failures, repair float64, jobs uint8) {
		s := &ClusterScenario{Name: "fuzz", Seed: seed, Hosts: 1 + int(hosts)%6, GPUsPerHost: 1 + int(gpus)%3, Host: "phase9",
			LatencyMs: latency, JitterMs: jitter, LeaseTTLMs: ttl, HeartbeatMs: heartbeat, DetectMs: detect,
			FailuresPerHostHour: failures, RepairS: repair, MaxTimeS: 4 * 3600,
			Jobs: []JobConfig{{ID: "j", Count: 1 + int(jobs)%6, Partitions: 5, EveryMs: 500}}}
		for _, v := range []float64{latency, jitter, ttl, heartbeat, detect, failures, repair} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v > 1e7 {
				return
			}
		}
		if s.defaults() != nil {
			return
		}
		r, err := RunCluster(s, 4, 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		total := s.Jobs[0].Count * s.Jobs[0].Partitions
		if r.Duplicates != 0 || r.Proved > total {
			t.Fatalf("%d proved of %d, %d recorded twice", r.Proved, total, r.Duplicates)
		}
		if r.Complete && r.Proved != total {
			t.Fatalf("complete with %d proved of %d", r.Proved, total)
		}
	})
}
