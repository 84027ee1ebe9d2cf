package sim

import (
	"math"
	"strings"
	"testing"
	"time"
)

// streamRowTrace is a one-worker trace of compute stages of the given
// lengths, one after another.
func streamRowTrace(name string, ms ...float64) Trace {
	var b traceBuilder
	b.thread(0, "worker 0")
	at := 0.0
	for _, d := range ms {
		b.span(0, "compute", "bench/0", at, d)
		at += d + 10
	}
	return Trace{name, b.json()}
}

// stream_stall is fitted from a row beside endless copies against the row
// alone, and the fitted profile gives back the row's time beside copies:
// the model's own arithmetic (a kernel overlapped all through advances at
// (1 − stall·duty)/(1+kernel_slowdown_copy)) run both ways.
func TestCalibrateStreamStall(t *testing.T) {
	const ms = time.Millisecond
	size := int(100 * ms) // interferenceProfile's kernel of n constraints runs n ns alone
	for _, c := range []struct {
		name      string
		copySlow  float64
		besideMs  float64
		wantStall float64
	}{
		// duty 0.5: 1 − 100/125 = 0.2 of the run lost, 0.4 of the duty.
		{"the stream's copies stalled in part", 0, 125, 0.4},
		// 1 − 110/125 = 0.12 lost beyond the SMs' share: 0.24.
		{"with kernel_slowdown_copy", 0.1, 125, 0.24},
		// All of the duty: 100/(1 − 0.5) = 200.
		{"the whole duty, as without the field", 0, 200, 1},
		// Faster beside copies than alone: the noise, no stall.
		{"no slower beside copies", 0, 99, 0},
	} {
		p := interferenceProfile(t, c.copySlow, 0)
		p.Partition.StreamGiB = 0.5 * float64(p.ReferenceConstraints) / float64(gib)
		// The first stage of each (the pool's first growth) is left out.
		alone := streamRowTrace("alone", 300, 100, 101, 99, 100)
		beside := streamRowTrace("beside", 400, c.besideMs, c.besideMs, c.besideMs)
		got, fit, err := CalibrateStreamStall(p, size, []Trace{alone}, []Trace{beside})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if fit.Alone != 4 || fit.Beside != 3 || fit.AloneMs != 100 || fit.BesideMs != c.besideMs || fit.Duty != 0.5 {
			t.Errorf("%s: fit %+v; want 4 and 3 stages, 100 and %g ms, duty 0.5", c.name, fit, c.besideMs)
		}
		if got.Device.StreamStall == nil || math.Abs(*got.Device.StreamStall-c.wantStall) > 1e-9 || fit.Stall != c.wantStall {
			t.Fatalf("%s: stream_stall %v (fit %g), want %g", c.name, got.Device.StreamStall, fit.Stall, c.wantStall)
		}
		if p.Device.StreamStall != nil {
			t.Errorf("%s: the base profile changed", c.name)
		}
		if err := got.validate(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.besideMs < 100 {
			continue
		}
		kernel, _ := interferenceRun{kernel: 100 * ms, copyMs: 1000}.run(t, got)
		if !near(kernel, time.Duration(c.besideMs*float64(ms))) {
			t.Errorf("%s: the fitted profile's kernel beside copies took %v, want %v ms", c.name, kernel, c.besideMs)
		}
	}
}

// A stall of 0.5 halves what a partial overlap costs the kernel; the
// field absent is the whole duty, as TestKernelStreamStall has it.
func TestStreamStallScalesTheDuty(t *testing.T) {
	const ms = time.Millisecond
	p := interferenceProfile(t, 0, 0)
	p.Partition.StreamGiB = 0.5 * float64(p.ReferenceConstraints) / float64(gib)
	half := 0.5
	p.Device.StreamStall = &half
	// 40 ms at 1 − 0.25 do 30 ms of the kernel; the other 70 follow.
	if kernel, _ := (interferenceRun{kernel: 100 * ms, copyMs: 40}).run(t, p); !near(kernel, 110*ms) {
		t.Errorf("kernel beside a 40 ms copy at stall 0.5: %v, want 110 ms", kernel)
	}
	neg := -0.1
	p.Device.StreamStall = &neg
	if err := p.validate(); err == nil || !strings.Contains(err.Error(), "device.stream_stall") {
		t.Errorf("validate with stream_stall -0.1: %v, want an error naming device.stream_stall", err)
	}
}

// Without streamed keys, or with too few stages, the fit refuses.
func TestCalibrateStreamStallRefuses(t *testing.T) {
	p := interferenceProfile(t, 0, 0)
	alone := streamRowTrace("alone", 300, 100, 100, 100)
	beside := streamRowTrace("beside", 300, 120, 120, 120)
	if _, _, err := CalibrateStreamStall(p, 1e8, []Trace{alone}, []Trace{beside}); err == nil || !strings.Contains(err.Error(), "stream no keys") {
		t.Errorf("no stream_gib: %v, want an error saying the kernels stream no keys", err)
	}
	p.Partition.StreamGiB = 0.5 * float64(p.ReferenceConstraints) / float64(gib)
	if _, _, err := CalibrateStreamStall(p, 1e8, []Trace{alone}, []Trace{streamRowTrace("short", 300, 120, 120)}); err == nil || !strings.Contains(err.Error(), "want 3 or more") {
		t.Errorf("two stages beside copies: %v, want an error asking for 3 or more", err)
	}
}
