package sim

import (
	"testing"
	"time"

	"github.com/cuzk/cuzk/gpu"
)

// With stages_alone, a stage of a whole buffer made while no kernel runs
// moves the profile's share of it (copy_gib of vram_gib) and the kernel that
// next starts on its stream puts the rest on the copy engine, beside the
// copies there; a stage made while a kernel runs moves the whole buffer. The
// kernel's own time does not change, the copies beside the rest share the
// engine with it. Without the flag every copy moves its bytes.
func TestStagesAloneCopiesByWhatRuns(t *testing.T) {
	const ms = time.Millisecond
	type got struct {
		alone, beside, part time.Duration
		aloneCopied         int64
		besideCopied        int64
		kernelEnd           time.Duration
	}
	run := func(stagesAlone bool) got {
		p := interferenceProfile(t, 0, 0) // 1 GB/s: n MB take n ms
		p.Partition.VRAMGiB, p.Partition.CopyGiB, p.Partition.StagesAlone = 4, 1, stagesAlone
		k := NewKernel(p, []int64{16 * gib}, gpu.DefaultPoolPolicy(), 1)
		d := k.Devices()[0]
		a := d.m.Submit(gpu.Op{Kind: gpu.OpMalloc, Bytes: 100e6}, nil).Result.Buffer
		b := d.m.Submit(gpu.Op{Kind: gpu.OpMalloc, Bytes: 100e6}, nil).Result.Buffer
		c := d.m.Submit(gpu.Op{Kind: gpu.OpMalloc, Bytes: 100e6}, nil).Result.Buffer
		s1, s2, s3 := d.NewStream(), d.NewStream(), d.NewStream()
		var g got
		submit := func(at time.Duration, op gpu.Op, took *time.Duration, copied *int64) {
			k.At(at, func() {
				called := k.Now()
				d.Submit(op, func(r gpu.Result) {
					if r.Err != nil {
						t.Errorf("%s: %v", op.Kind, r.Err)
					}
					*took = k.Now() - called
					if copied != nil {
						*copied = r.Copied
					}
				})
			})
		}
		submit(0, gpu.Op{Kind: gpu.OpCopyIn, Stream: s1, Buffer: a, Bytes: 100e6}, &g.alone, &g.aloneCopied)
		submit(30*ms, gpu.Op{Kind: gpu.OpCompute, Stream: s1, Kernel: &gpu.Kernel{Partition: "k", Size: int(100 * ms)}}, &g.kernelEnd, nil)
		submit(40*ms, gpu.Op{Kind: gpu.OpCopyIn, Stream: s2, Buffer: b, Bytes: 100e6}, &g.beside, &g.besideCopied)
		// A copy of part of a buffer moves what it names, kernel or not.
		submit(300*ms, gpu.Op{Kind: gpu.OpCopyIn, Stream: s3, Buffer: c, Bytes: 10e6}, &g.part, nil)
		k.RunUntil(time.Hour, func() bool { return false })
		g.kernelEnd += 30 * ms
		return g
	}
	on := run(true)
	// Alone: 25 of 100 MB, 25 ms. The kernel starts at 30 ms and puts the
	// other 75 MB on the engine; the 100 MB copy at 40 ms shares the engine
	// with the rest's 65 MB left (both at half speed until 170 ms), then
	// runs alone for its last 35 MB: 165 ms.
	want := got{alone: 25 * ms, aloneCopied: 25e6, beside: 165 * ms, besideCopied: 0, kernelEnd: 130 * ms, part: 10 * ms}
	if !near(on.alone, want.alone) || on.aloneCopied != want.aloneCopied || !near(on.beside, want.beside) ||
		on.besideCopied != want.besideCopied || !near(on.kernelEnd, want.kernelEnd) || !near(on.part, want.part) {
		t.Errorf("stages_alone: got %+v, want %+v", on, want)
	}
	// Without: 100 MB from 0 and 100 MB from 40 ms share the engine from
	// 40 to 160 ms; the kernel waits on its stream for the first.
	off := run(false)
	want = got{alone: 160 * ms, beside: 160 * ms, kernelEnd: 260 * ms, part: 10 * ms}
	if !near(off.alone, want.alone) || off.aloneCopied != 0 || !near(off.beside, want.beside) || !near(off.kernelEnd, want.kernelEnd) {
		t.Errorf("without stages_alone: got %+v, want %+v", off, want)
	}
}
