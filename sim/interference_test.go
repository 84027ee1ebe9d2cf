package sim

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
)

// interferenceProfile is factsProfile (a kernel's size is its solo duration
// in ns) on a 16-core host whose bus moves 1 GB/s, so that a copy of n MB
// takes n ms; synthesize asks for every core, finalize for a quarter of them.
func interferenceProfile(t *testing.T, copySlow, cpuSlow float64) *Profile {
	p := factsProfile(t)
	p.Host.Cores = 16
	p.Device.H2DGBps = 1
	p.Device.KernelSlowdownCopy = copySlow
	p.Device.KernelSlowdownCPU = cpuSlow
	p.Partition.ScratchGiB = 0
	p.Stages["synthesize"] = StageProfile{Cores: 16}
	p.Stages["finalize"] = StageProfile{Cores: 4}
	if err := p.validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// interferenceRun starts, at t = 0 unless said otherwise, a kernel of kernel
// on one stream, a copy of copyMs on another (none when 0, at copyAt) and a
// CPU stage st of cpu (none when 0), and returns when the kernel and the copy
// returned.
type interferenceRun struct {
	kernel, kernelAt time.Duration
	copyMs           int
	copyAt           time.Duration
	stage            actors.Stage
	cpu              time.Duration
}

func (r interferenceRun) run(t *testing.T, p *Profile) (kernelEnd, copyEnd time.Duration) {
	t.Helper()
	k := NewKernel(p, []int64{16 * gib}, gpu.DefaultPoolPolicy(), 1)
	d := k.Devices()[0]
	buf := d.m.Submit(gpu.Op{Kind: gpu.OpMalloc, Bytes: gib}, nil).Result.Buffer
	s1, s2 := d.NewStream(), d.NewStream()
	kernelEnd, copyEnd = -1, -1
	k.At(r.kernelAt, func() {
		d.Submit(gpu.Op{Kind: gpu.OpCompute, Stream: s1, Kernel: &gpu.Kernel{Partition: "k", Size: int(r.kernel)}}, func(res gpu.Result) {
			if res.Err != nil {
				t.Errorf("kernel: %v", res.Err)
			}
			kernelEnd = k.Now()
		})
	})
	if r.copyMs > 0 {
		k.At(r.copyAt, func() {
			d.Submit(gpu.Op{Kind: gpu.OpCopyIn, Stream: s2, Buffer: buf, Bytes: int64(r.copyMs) * 1e6}, func(res gpu.Result) {
				if res.Err != nil {
					t.Errorf("copy: %v", res.Err)
				}
				copyEnd = k.Now()
			})
		})
	}
	if r.cpu > 0 {
		k.cpu.run(actors.PartitionID{Job: "interference"}, r.stage, r.cpu, func() {})
	}
	k.RunUntil(time.Hour, func() bool { return false })
	if kernelEnd < 0 || (r.copyMs > 0 && copyEnd < 0) {
		t.Fatalf("%+v: kernel returned at %v, copy at %v", r, kernelEnd, copyEnd)
	}
	return kernelEnd, copyEnd
}

func near(got, want time.Duration) bool {
	d := got - want
	return d > -time.Microsecond && d < time.Microsecond
}

// With kernel_slowdown_copy a kernel runs slower while a copy is on the copy
// engine, and only then: a kernel overlapped by copies for all of its run
// takes 1+s times as long, one overlapped for a stretch w of wall time
// w·s/(1+s) longer, one after the copy is unchanged; the copy's own time
// never changes.
func TestKernelSlowdownCopy(t *testing.T) {
	const ms = time.Millisecond
	slow := interferenceProfile(t, 0.5, 0)
	for _, c := range []struct {
		name         string
		p            *Profile
		r            interferenceRun
		kernel, copy time.Duration
	}{
		{"no factor: the copy does not slow the kernel", interferenceProfile(t, 0, 0),
			interferenceRun{kernel: 100 * ms, copyMs: 40}, 100 * ms, 40 * ms},
		{"overlapped for all of its run", slow,
			interferenceRun{kernel: 100 * ms, copyMs: 300}, 150 * ms, 300 * ms},
		// 40 ms at 1/1.5 do 26.67 ms of the kernel; the other 73.33 follow at full speed.
		{"overlapped for its first 40 ms", slow,
			interferenceRun{kernel: 100 * ms, copyMs: 40}, 100*ms + 40*ms/3, 40 * ms},
		{"overlapped from 20 to 60 ms", slow,
			interferenceRun{kernel: 100 * ms, copyMs: 40, copyAt: 20 * ms}, 100*ms + 40*ms/3, 60 * ms},
		{"after the copy", slow,
			interferenceRun{kernel: 100 * ms, kernelAt: 50 * ms, copyMs: 40}, 150 * ms, 40 * ms},
		{"alone", slow, interferenceRun{kernel: 100 * ms}, 100 * ms, -1},
	} {
		kernel, copy := c.r.run(t, c.p)
		if !near(kernel, c.kernel) || (c.copy >= 0 && !near(copy, c.copy)) {
			t.Errorf("%s: kernel returned at %v, copy at %v; want %v and %v", c.name, kernel, copy, c.kernel, c.copy)
		}
	}
}

// With kernel_slowdown_cpu a kernel slows by the share of the host's cores
// the running CPU stages ask for, for as long as they run; with both factors
// the stretches multiply.
func TestKernelSlowdownCPU(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		name   string
		p      *Profile
		r      interferenceRun
		kernel time.Duration
	}{
		{"no factor", interferenceProfile(t, 0, 0),
			interferenceRun{kernel: 100 * ms, stage: actors.StageSynthesize, cpu: time.Second}, 100 * ms},
		{"every core, for all of its run", interferenceProfile(t, 0, 0.6),
			interferenceRun{kernel: 100 * ms, stage: actors.StageSynthesize, cpu: time.Second}, 160 * ms},
		{"a quarter of the cores", interferenceProfile(t, 0, 0.6),
			interferenceRun{kernel: 100 * ms, stage: actors.StageFinalize, cpu: time.Second}, 115 * ms},
		// 30 ms at 1/1.6 do 18.75 ms of the kernel; when the stage leaves the
		// CPU empty the other 81.25 run at full speed.
		{"every core, for its first 30 ms", interferenceProfile(t, 0, 0.6),
			interferenceRun{kernel: 100 * ms, stage: actors.StageSynthesize, cpu: 30 * ms}, 111*ms + 250*time.Microsecond},
		{"a stage ended before the kernel", interferenceProfile(t, 0, 0.6),
			interferenceRun{kernel: 100 * ms, kernelAt: 50 * ms, stage: actors.StageSynthesize, cpu: 30 * ms}, 150 * ms},
		{"copies and every core", interferenceProfile(t, 0.5, 0.6),
			interferenceRun{kernel: 100 * ms, copyMs: 300, stage: actors.StageSynthesize, cpu: time.Second}, 240 * ms},
	} {
		kernel, _ := c.r.run(t, c.p)
		if !near(kernel, c.kernel) {
			t.Errorf("%s: kernel returned at %v, want %v", c.name, kernel, c.kernel)
		}
	}
}

// The factors are optional and non-negative, and a profile without them is
// written as before.
func TestKernelSlowdownFields(t *testing.T) {
	p, err := LoadProfile("seed-16g")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "kernel_slowdown") {
		t.Errorf("a profile without the factors marshals them: %s", b)
	}
	bad := strings.Replace(string(b), `"h2d_gbps":`, `"kernel_slowdown_copy":-0.1,"h2d_gbps":`, 1)
	if _, err := ParseProfile("bad", []byte(bad)); err == nil || !strings.Contains(err.Error(), "device.kernel_slowdown_copy") {
		t.Errorf("negative kernel_slowdown_copy: %v, want an error naming the field", err)
	}
	good := strings.Replace(string(b), `"h2d_gbps":`, `"kernel_slowdown_copy":0.05,"kernel_slowdown_cpu":0.1,"h2d_gbps":`, 1)
	q, err := ParseProfile("good", []byte(good))
	if err != nil || q.Device.KernelSlowdownCopy != 0.05 || q.Device.KernelSlowdownCPU != 0.1 {
		t.Errorf("profile with both factors: %v, %+v", err, q)
	}
}

// With copy_fifo the copy engine serves copies one at a time in the order
// they were issued, whatever their streams: three copies of 40, 30 and 20
// ms issued at once end at 40, 70 and 90 ms. Shared, the same three end at
// 90, 80 and 60 ms (each at a third of the bus, then a half): the first
// issued is the last done. The engine is as busy either way.
func TestCopyEngineFIFO(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		fifo bool
		want []time.Duration
	}{{false, []time.Duration{90 * ms, 80 * ms, 60 * ms}}, {true, []time.Duration{40 * ms, 70 * ms, 90 * ms}}} {
		p := interferenceProfile(t, 0, 0)
		p.Device.CopyFIFO = c.fifo
		k := NewKernel(p, []int64{16 * gib}, gpu.DefaultPoolPolicy(), 1)
		d := k.Devices()[0]
		buf := d.m.Submit(gpu.Op{Kind: gpu.OpMalloc, Bytes: gib}, nil).Result.Buffer
		ends := make([]time.Duration, 3)
		for i, mb := range []int64{40, 30, 20} {
			s := d.NewStream()
			d.Submit(gpu.Op{Kind: gpu.OpCopyIn, Stream: s, Buffer: buf, Bytes: mb * 1e6}, func(res gpu.Result) {
				if res.Err != nil {
					t.Errorf("copy %d: %v", i, res.Err)
				}
				ends[i] = k.Now()
			})
		}
		k.RunUntil(time.Hour, func() bool { return false })
		for i := range ends {
			if !near(ends[i], c.want[i]) {
				t.Errorf("fifo %v: copies ended at %v, want %v", c.fifo, ends, c.want)
				break
			}
		}
	}
}

// With stream_gib a kernel copies its keys through the copy engine as it
// runs: while another copy holds the engine it advances at 1 − duty, duty the
// share of its solo run its streaming takes on the engine alone (at most
// all of it), and after the copy at full speed; the copy's time never
// changes, and a profile without stream_gib is exactly as before.
func TestKernelStreamStall(t *testing.T) {
	const ms = time.Millisecond
	// interferenceProfile's kernel of n constraints runs n ns alone and its
	// bus moves 1 byte a ns: a kernel streaming d·n bytes has duty d.
	streaming := func(duty, copySlow float64) *Profile {
		p := interferenceProfile(t, copySlow, 0)
		p.Partition.StreamGiB = duty * float64(p.ReferenceConstraints) / float64(gib)
		if err := p.validate(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name         string
		p            *Profile
		r            interferenceRun
		kernel, copy time.Duration
	}{
		{"no stream: the copy does not slow the kernel", streaming(0, 0),
			interferenceRun{kernel: 100 * ms, copyMs: 40}, 100 * ms, 40 * ms},
		// 40 ms at 0.5 do 20 ms of the kernel; the other 80 follow at full speed.
		{"half its run on the engine, overlapped for its first 40 ms", streaming(0.5, 0),
			interferenceRun{kernel: 100 * ms, copyMs: 40}, 120 * ms, 40 * ms},
		{"overlapped from 20 to 60 ms", streaming(0.5, 0),
			interferenceRun{kernel: 100 * ms, copyMs: 40, copyAt: 20 * ms}, 120 * ms, 60 * ms},
		{"overlapped for all of its run", streaming(0.5, 0),
			interferenceRun{kernel: 100 * ms, copyMs: 300}, 200 * ms, 300 * ms},
		{"after the copy", streaming(0.5, 0),
			interferenceRun{kernel: 100 * ms, kernelAt: 50 * ms, copyMs: 40}, 150 * ms, 40 * ms},
		{"streaming longer than its run: it stalls for the copy", streaming(1.5, 0),
			interferenceRun{kernel: 100 * ms, copyMs: 40}, 140 * ms, 40 * ms},
		// 40 ms at 0.5/1.5 do 13.33 ms; the other 86.67 at full speed.
		{"with kernel_slowdown_copy the two multiply", streaming(0.5, 0.5),
			interferenceRun{kernel: 100 * ms, copyMs: 40}, 100*ms + 40*ms*2/3, 40 * ms},
		{"alone", streaming(0.5, 0), interferenceRun{kernel: 100 * ms}, 100 * ms, -1},
	} {
		kernel, copy := c.r.run(t, c.p)
		if !near(kernel, c.kernel) || (c.copy >= 0 && !near(copy, c.copy)) {
			t.Errorf("%s: kernel returned at %v, copy at %v; want %v and %v", c.name, kernel, copy, c.kernel, c.copy)
		}
	}
}

// WithStream sets stream_gib at the profile's reference size from a figure
// at another size, and refuses a negative one.
func TestWithStream(t *testing.T) {
	p := factsProfile(t) // reference 1,000,000 constraints, exponent 1
	q, err := p.WithStream(28, 2_000_000)
	if err != nil || q.Partition.StreamGiB != 14 || p.Partition.StreamGiB != 0 {
		t.Fatalf("WithStream(28, 2M): %v, stream_gib %g (the base's %g); want 14 and the base's 0", err, q.Partition.StreamGiB, p.Partition.StreamGiB)
	}
	if got := q.PartitionStream(4_000_000); got != 56*gib {
		t.Errorf("PartitionStream(4M) = %d, want %d", got, 56*gib)
	}
	if _, err := p.WithStream(-1, 0); err == nil {
		t.Error("WithStream(-1): no error")
	}
	bad := *p
	bad.Partition.StreamGiB = -2
	if err := bad.validate(); err == nil || !strings.Contains(err.Error(), "partition.stream_gib") {
		t.Errorf("validate with stream_gib -2: %v, want an error naming partition.stream_gib", err)
	}
}
