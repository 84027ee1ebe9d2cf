package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/model"
)

// regrowthTrace is a one-worker trace whose items each trim 6 GiB and grow
// the pool back by 6 GiB in regrowMs.
func regrowthTrace(regrowMs float64) []byte {
	var b traceBuilder
	b.op("malloc_async", 10, 9.9, 6*gib)
	for i := 1; i <= 4; i++ {
		at := float64(i) * 1000
		b.op("trim_pool", at+12, 12, 6*gib)
		b.op("malloc_async", at+12+regrowMs, regrowMs, 6*gib)
	}
	return b.json()
}

// Regrowths under a limit that take longer than the whole card's give the
// ballast's extra cost per GiB; a trace with no regrowth fits nothing, and
// a limit that costs nothing fits 0, not a negative figure.
func TestCalibrateBallastFromRegrowthsUnderALimit(t *testing.T) {
	base, err := LoadProfile("../docs/predictions/contention/h200-contention-base.json")
	if err != nil {
		t.Fatal(err)
	}
	whole, _, err := CalibrateDevice(base, 1<<20, Trace{"whole card", regrowthTrace(9)}) // 1.5 ms a GiB
	if err != nil {
		t.Fatal(err)
	}
	got, fits, err := CalibrateBallast(whole, 0, Trace{"16 GiB", regrowthTrace(13.2)}) // 2.2 ms a GiB
	if err != nil {
		t.Fatal(err)
	}
	if v := got.Device.PoolGrowthBallastMsPerGiB; math.Abs(v-0.7) > 1e-9 || len(fits) != 1 || fits[0].Count != 4 {
		t.Fatalf("ballast %.4f ms/GiB from %+v: want 0.7 from 4 regrowths", v, fits)
	}
	if got.Device.PoolRegrowthMsPerGiB != whole.Device.PoolRegrowthMsPerGiB || !strings.Contains(string(got.Calibration), "16 GiB") {
		t.Fatalf("the ballast fit changed the regrowth (%g) or did not record its trace", got.Device.PoolRegrowthMsPerGiB)
	}
	var none traceBuilder
	none.op("malloc", 5, 4, 6*gib)
	if p, fits, err := CalibrateBallast(whole, 0, Trace{"no regrowth", none.json()}); err != nil || len(fits) != 0 || p.Device.PoolGrowthBallastMsPerGiB != 0 {
		t.Fatalf("a trace without regrowths: %v, %+v", err, fits)
	}
	if p, _, err := CalibrateBallast(whole, 0, Trace{"as fast", regrowthTrace(8)}); err != nil || p.Device.PoolGrowthBallastMsPerGiB != 0 {
		t.Fatalf("regrowths faster under the limit: ballast %g, %v", p.Device.PoolGrowthBallastMsPerGiB, err)
	}
}

// A device smaller than its profile's card pays the ballast's cost on every
// pool growth, first or back after a trim; the whole card does not.
func TestBallastSlowsPoolGrowth(t *testing.T) {
	p, err := LoadProfile("../docs/predictions/contention/h200-contention-base.json")
	if err != nil {
		t.Fatal(err)
	}
	p.Device.PoolGrowthBallastMsPerGiB = 0.75
	card := int64(p.Device.VRAMGiB * float64(gib))
	for _, c := range []struct {
		total   int64
		ballast bool
	}{{card, false}, {card - gib/2, false}, {16 * gib, true}} {
		k := NewKernel(p, []int64{c.total}, gpu.DefaultPoolPolicy(), 1)
		d := k.devices[0]
		ballast := d.ballast
		for _, first := range []bool{true, false} {
			call := model.Call{Grew: 8 * gib, FirstGrowth: first}
			got := d.growth(call)
			d.ballast = false
			plain := d.growth(call)
			d.ballast = ballast
			want := plain
			if c.ballast {
				want += 6 * time.Millisecond
			}
			if got != want {
				t.Errorf("%s, first %v: growth %v, want %v", fmt.Sprint(gpu.FormatBytes(c.total)), first, got, want)
			}
		}
	}
}

// The most a one-worker run's cudaMemGetInfo calls saw free under a limit
// gives the ballast's shortfall; without the limit, or without such calls,
// nothing is fitted.
func TestCalibrateShortfallFromMemInfo(t *testing.T) {
	base, err := LoadProfile("../docs/predictions/contention/h200-contention-base.json")
	if err != nil {
		t.Fatal(err)
	}
	var b traceBuilder
	for i, free := range []int64{16*gib - 3<<20, 11*gib - 3<<20, 16*gib - 1<<20} {
		b.op("mem_info", float64(i*100+1), 0.01, free)
	}
	got, fits, err := CalibrateBallast(base, 16*gib, Trace{"16 GiB", b.json()})
	if err != nil {
		t.Fatal(err)
	}
	if v := got.Device.LimitShortfallMiB; v != 1 || len(fits) != 1 || fits[0].Count != 3 {
		t.Fatalf("shortfall %g MiB from %+v: want 1 from 3 calls", v, fits)
	}
	if p, fits, err := CalibrateBallast(base, 0, Trace{"16 GiB", b.json()}); err != nil || len(fits) != 0 || p.Device.LimitShortfallMiB != 0 {
		t.Fatalf("without a limit: %v, %+v, %g", err, fits, p.Device.LimitShortfallMiB)
	}
	var none traceBuilder
	none.op("malloc", 5, 4, 6*gib)
	if _, fits, err := CalibrateBallast(base, 16*gib, Trace{"no mem_info", none.json()}); err != nil || len(fits) != 0 {
		t.Fatalf("without cudaMemGetInfo: %v, %+v", err, fits)
	}
}

// Under a limit the device has the shortfall less free, and its designs'
// ledger sees as much; the whole card has none.
func TestShortfallUnderALimitOnly(t *testing.T) {
	p, err := LoadProfile("../docs/predictions/contention/h200-contention-base.json")
	if err != nil {
		t.Fatal(err)
	}
	p.Device.LimitShortfallMiB = 2
	card := int64(p.Device.VRAMGiB * float64(gib))
	for _, c := range []struct {
		total, free int64
	}{{card, card}, {16 * gib, 16*gib - 2<<20}} {
		k := NewKernel(p, []int64{c.total}, gpu.DefaultPoolPolicy(), 1)
		d := k.devices[0]
		if f := d.m.Free(); f != c.free {
			t.Errorf("%s: free %d, want %d", gpu.FormatBytes(c.total), f, c.free)
		}
		if tot := d.Info().Total; tot != c.free {
			t.Errorf("%s: the ledger's total %d, want %d", gpu.FormatBytes(c.total), tot, c.free)
		}
	}
}

// A cudaMalloc that starts right after a cudaFree and takes far longer than
// a malloc costs waited for the freed bytes: from the free's return to the
// malloc's, less malloc_ms, per GiB freed, is malloc_free_wait_ms_per_gib
// (the median over such mallocs). A malloc that returns in about malloc_ms
// fitted beside the freed bytes, and one long after the free waited for
// nothing of it: neither is a sample.
func TestCalibrateMallocFreeWaitUnderALimit(t *testing.T) {
	base, err := LoadProfile("../docs/predictions/contention/h200-contention-base.json")
	if err != nil {
		t.Fatal(err)
	}
	m := base.Device.MallocMs
	var b traceBuilder
	for i, waitMs := range []float64{30, 32, 40} { // 10 GiB freed: 3, 3.2 and 4 ms a GiB
		at := float64(i) * 1000
		b.op("free", at+6, 6, 10*gib)
		b.op("malloc", at+6+waitMs+m, waitMs+m-0.1, 10*gib) // starts 0.1 ms after the free
	}
	b.op("free", 5006, 6, 10*gib)
	b.op("malloc", 5006.1+m, m, 4*gib)  // fitted beside
	b.op("malloc", 5200+50, 50, 10*gib) // long after the free
	got, fits, err := CalibrateBallast(base, 0, Trace{"16 GiB", b.json()})
	if err != nil {
		t.Fatal(err)
	}
	if v := got.Device.MallocFreeWaitMsPerGiB; math.Abs(v-3.2) > 1e-3 || len(fits) != 1 || fits[0].Count != 3 {
		t.Fatalf("malloc's wait %.4f ms/GiB from %+v: want 3.2 from 3 mallocs", v, fits)
	}
	var none traceBuilder
	none.op("free", 6, 6, 10*gib)
	none.op("malloc", 6.1+m, m, 4*gib)
	if p, fits, err := CalibrateBallast(base, 0, Trace{"fits beside", none.json()}); err != nil || len(fits) != 0 ||
		p.Device.MallocFreeWaitMsPerGiB != base.Device.MallocFreeWaitMsPerGiB {
		t.Fatalf("no malloc waited: %v, %+v", err, fits)
	}
}

// Under a limit, a cudaMalloc right after a cudaFree whose buffer could not
// fit beside the freed one needed its bytes: where most such mallocs
// return as fast as a malloc with nothing to wait for (the emulated
// device), the device's mallocs do not wait for a free's work; where they
// take the wait, its figure is fitted as before and the rule kept.
func TestCalibrateMallocNeedNotWaitUnderALimit(t *testing.T) {
	base, err := LoadProfile("../docs/predictions/contention/h200-contention-base.json")
	if err != nil {
		t.Fatal(err)
	}
	if !base.Device.MallocWaitsFreeWork {
		t.Fatal("the base's mallocs do not wait for a free's work: the test needs them to")
	}
	m := base.Device.MallocMs
	trace := func(waitMs float64, n int) []byte {
		var b traceBuilder
		for i := range n {
			at := float64(i) * 1000
			b.op("free", at+6, 6, 10*gib)
			b.op("malloc", at+6+waitMs+m, waitMs+m-0.1, 10*gib)
		}
		return b.json()
	}
	got, fits, err := CalibrateBallast(base, 16*gib, Trace{"quick", trace(0.2, 4)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Device.MallocWaitsFreeWork || len(fits) != 1 || fits[0].Field != "device.malloc_waits_free_work" || fits[0].Count != 4 {
		t.Fatalf("4 quick mallocs that needed the freed 10 GiB under 16 GiB: waits %v, fits %+v", got.Device.MallocWaitsFreeWork, fits)
	}
	// Beside a 40 GiB limit the two buffers fit together: the quick mallocs say nothing.
	if p, fits, err := CalibrateBallast(base, 40*gib, Trace{"quick", trace(0.2, 4)}); err != nil || !p.Device.MallocWaitsFreeWork || len(fits) != 0 {
		t.Fatalf("quick mallocs that fitted beside: waits %v, fits %+v, %v", p.Device.MallocWaitsFreeWork, fits, err)
	}
	// Too few to say.
	if p, _, err := CalibrateBallast(base, 16*gib, Trace{"two", trace(0.2, 2)}); err != nil || !p.Device.MallocWaitsFreeWork {
		t.Fatalf("two quick mallocs: waits %v, %v", p.Device.MallocWaitsFreeWork, err)
	}
	p, fits, err := CalibrateBallast(base, 16*gib, Trace{"waited", trace(32, 4)})
	if err != nil || !p.Device.MallocWaitsFreeWork || math.Abs(p.Device.MallocFreeWaitMsPerGiB-3.2) > 1e-3 || fits[0].Field != "device.malloc_free_wait_ms_per_gib" {
		t.Fatalf("mallocs that waited 32 ms for 10 GiB: waits %v, %.3f ms/GiB, fits %+v, %v", p.Device.MallocWaitsFreeWork, p.Device.MallocFreeWaitMsPerGiB, fits, err)
	}
}

// A fitted profile's device source names the figures its traces gave, then
// the base's source; partition and host fits are not the device's.
func TestNoteDeviceFits(t *testing.T) {
	base, err := LoadProfile("../docs/predictions/contention/h200-contention-base.json")
	if err != nil {
		t.Fatal(err)
	}
	was := base.Device.Source
	NoteDeviceFits(base, []DeviceFit{{"partition.vram_gib", 4, 7}, {"host.handoff.newest_first", 9, 0.9}})
	if base.Device.Source != was {
		t.Fatalf("no device fit, source changed to %q", base.Device.Source)
	}
	NoteDeviceFits(base, []DeviceFit{{"device.h2d_gbps", 71, 54.96}, {"partition.copy_gib", 14, 6}, {"device.malloc_free_wait_ms_per_gib", 7, 3.1}})
	want := "fitted from the profile's calibration traces: h2d_gbps (71 ops), malloc_free_wait_ms_per_gib (7 ops); the rest: " + was
	if base.Device.Source != want {
		t.Fatalf("source %q, want %q", base.Device.Source, want)
	}
}

// Trims of 4 GiB and growths back after them, against a profile that
// charges 1 and 0.5 ms a GiB for them alone: in the trace, alone, at 1.2
// times that, beside another worker's compute stage at 1.5 times; one trim
// that the stage overlaps in part, at 5 times, is left out:
// pool_slowdown_kernel 0.5 from the 4 calls beside, measured against the
// profile's figures, not the trace's calls alone (their 1.2 is reported).
// Traces with no call beside a kernel fit nothing.
func TestCalibratePoolSlowdownBesideAKernel(t *testing.T) {
	q := *contentionBase(t)
	q.Device.TrimMsPerGiB, q.Device.PoolRegrowthMs, q.Device.PoolRegrowthMsPerGiB = 1, 0, 0.5
	var b traceBuilder
	pair := func(at, trimMs, growMs float64) {
		b.op("trim_pool", at+trimMs, trimMs, 4*gib)
		b.op("malloc_async", at+trimMs+growMs+0.1, growMs, 4*gib)
	}
	for i := range 3 {
		pair(float64(i)*100, 4.8, 2.4)
	}
	b.span(1, "compute", "bench/1", 1000, 100)
	pair(1010, 6, 3)
	pair(1050, 6, 3)
	b.op("trim_pool", 1095+20, 20, 4*gib) // 5 of its 20 ms beside the stage
	got, fit, err := CalibratePoolBeside(&q, Trace{"w2", b.json()})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.Device.PoolSlowdownKernel-0.5) > 1e-9 || fit.Beside != 4 || fit.Alone != 6 || fit.AloneRatio != 1.2 {
		t.Fatalf("slowdown %g from %+v: want 0.5 from 4 calls beside, and 6 alone at 1.2 times the profile's", got.Device.PoolSlowdownKernel, fit)
	}
	var alone traceBuilder
	alone.op("trim_pool", 4, 4, 4*gib)
	alone.op("malloc_async", 6.1, 2, 4*gib)
	if _, _, err := CalibratePoolBeside(&q, Trace{"w1", alone.json()}); err == nil {
		t.Fatal("a trace without a call beside a kernel fitted a slowdown")
	}
	// With no call alone, the same.
	var besideOnly traceBuilder
	besideOnly.span(1, "compute", "bench/1", 0, 100)
	besideOnly.op("trim_pool", 16, 6, 4*gib)
	besideOnly.op("malloc_async", 19.1, 3, 4*gib)
	got, fit, err = CalibratePoolBeside(&q, Trace{"w2", besideOnly.json()})
	if err != nil || math.Abs(got.Device.PoolSlowdownKernel-0.5) > 1e-9 || fit.Beside != 2 || fit.Alone != 0 || fit.AloneRatio != 0 {
		t.Fatalf("beside only: %v, slowdown %v from %+v: want 0.5 from 2 calls against the profile's figures", err, got, fit)
	}
	// A call the profile charges under half a millisecond (a trim of 4 GiB
	// at 0.1 ms a GiB) is the host's jitter: left out.
	q.Device.TrimMsPerGiB = 0.1
	got, fit, err = CalibratePoolBeside(&q, Trace{"w2", besideOnly.json()})
	if err != nil || math.Abs(got.Device.PoolSlowdownKernel-0.5) > 1e-9 || fit.Beside != 1 {
		t.Fatalf("a cheap trim: %v, slowdown %v from %+v: want 0.5 from the growth alone", err, got, fit)
	}
}

// Kernels of 100 ms (each with its scratch allocation's 2 ms of host time
// inside its compute stage) on one worker, beside none of another worker's
// pool work or beside a trim of 20 ms that ran 4 ms longer (kernel_slowdown_pool
// 0.25: 20·0.25/1.25), and one whose scratch did not fit (10 ms, left out),
// and the trace's first (left out): the fit gives 0.25 from the 4 kernels
// beside. A trace that does not time the scratch allocations fits nothing
// and leaves the profile's figure.
func TestCalibrateKernelSlowdownBesidePool(t *testing.T) {
	q := *contentionBase(t)
	q.Device.TrimMsPerGiB = 4
	build := func(scratchTimed bool) *traceBuilder {
		var b traceBuilder
		kernel := func(i int, durMs float64) {
			part := fmt.Sprintf("bench/%d", i)
			start := float64(i) * 1000
			b.span(1, "compute", part, start, durMs)
			if scratchTimed {
				b.span(2, "scratch_malloc", part, start+0.1, 2)
			}
		}
		kernel(0, 150)
		for i := 1; i <= 4; i++ {
			kernel(i, 102)
		}
		for i := 5; i <= 8; i++ {
			kernel(i, 106)
			b.op("trim_pool", float64(i)*1000+40, 20, 4*gib)
		}
		kernel(9, 10)
		b.op("trim_pool", 9000+8, 6, 4*gib)
		return &b
	}
	got, fit, err := CalibratePoolBeside(&q, Trace{"w2", build(true).json()})
	if err != nil {
		t.Fatal(err)
	}
	if fit.Kernels != 4 || math.Abs(fit.KernelSlowdown-0.25) > 1e-9 || got.Device.KernelSlowdownPool != fit.KernelSlowdown {
		t.Fatalf("kernel_slowdown_pool %g from %+v: want 0.25 from 4 kernels", got.Device.KernelSlowdownPool, fit)
	}
	q.Device.KernelSlowdownPool = 0.07
	got, fit, err = CalibratePoolBeside(&q, Trace{"w2", build(false).json()})
	if err != nil || fit.Kernels != 0 || got.Device.KernelSlowdownPool != 0.07 {
		t.Fatalf("no scratch allocations timed: %v, %+v, kernel_slowdown_pool %g: want none fitted, 0.07 kept", err, fit, got.Device.KernelSlowdownPool)
	}
}
