package sim

import (
	"testing"
	"time"

	"github.com/cuzk/cuzk/gpu"
)

// releaseRig is one simulated device of interferenceProfile (1 GB/s, so a
// copy of n MB takes n ms alone) with the release costs given, and a
// synchronous way to make calls on it at given times.
type releaseRig struct {
	t *testing.T
	k *Kernel
	d *Device
	s gpu.Stream
}

func newReleaseRig(t *testing.T, freeMs, freeCopyMs, trimMs, copySlow float64) *releaseRig {
	p := interferenceProfile(t, copySlow, 0)
	p.Device.FreeMsPerGiB = freeMs
	p.Device.FreeCopyWorkMsPerGiB = freeCopyMs
	p.Device.TrimMsPerGiB = trimMs
	p.Device.MallocMs = 0
	p.Device.PoolGrowthMs = 0
	k := NewKernel(p, []int64{32 * gib}, gpu.DefaultPoolPolicy(), 1)
	d := k.Devices()[0]
	return &releaseRig{t: t, k: k, d: d, s: d.NewStream()}
}

// at makes op at time at and records, in took, how long it took and, in r,
// its result.
func (g *releaseRig) at(at time.Duration, op gpu.Op, took *time.Duration, r *gpu.Result) {
	g.k.At(at, func() {
		called := g.k.Now()
		if op.Kind.OnStream() || op.Kind == gpu.OpStreamSync {
			op.Stream = g.s
		}
		g.d.Submit(op, func(res gpu.Result) {
			if res.Err != nil {
				g.t.Errorf("%s: %v", op.Kind, res.Err)
			}
			if took != nil {
				*took = g.k.Now() - called
			}
			if r != nil {
				*r = res
			}
		})
	})
}

func (g *releaseRig) run() { g.k.RunUntil(time.Hour, func() bool { return false }) }

// A cudaFree costs its host time by the bytes it frees, and leaves work on
// the copy engine by the same bytes: a copy made at once after it shares the
// engine with that work and takes as much longer as the work left; a copy
// made once the work is done takes its solo time; a kernel is not slowed by
// the free's work even where copies slow kernels.
func TestFreeLeavesCopyWork(t *testing.T) {
	g := newReleaseRig(t, 1, 2.5, 0, 1)
	buf := g.d.m.Submit(gpu.Op{Kind: gpu.OpMalloc, Bytes: 4 * gib}, nil).Result.Buffer
	dst := g.d.m.Submit(gpu.Op{Kind: gpu.OpMalloc, Bytes: gib}, nil).Result.Buffer
	var free, copyAtOnce, copyLater, kernel time.Duration
	var freed gpu.Result
	g.at(0, gpu.Op{Kind: gpu.OpFree, Buffer: buf}, &free, &freed)
	// The free returns at 4 ms and leaves 10 ms of work: a 20 ms copy at
	// 4 ms shares the engine with it and ends at 34 ms.
	g.at(4*time.Millisecond, gpu.Op{Kind: gpu.OpCopyIn, Buffer: dst, Bytes: 20e6}, &copyAtOnce, nil)
	g.at(100*time.Millisecond, gpu.Op{Kind: gpu.OpCopyIn, Buffer: dst, Bytes: 20e6}, &copyLater, nil)
	g.run()
	for _, c := range []struct {
		what      string
		got, want time.Duration
	}{
		{"the free of 4 GiB", free, 4 * time.Millisecond},
		{"a 20 ms copy right after it", copyAtOnce, 30 * time.Millisecond},
		{"a 20 ms copy long after it", copyLater, 20 * time.Millisecond},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s took %v, want %v", c.what, c.got, c.want)
		}
	}
	if freed.Released != 4*gib {
		t.Errorf("the free released %d bytes, want 4 GiB", freed.Released)
	}

	g = newReleaseRig(t, 0, 2.5, 0, 1)
	buf = g.d.m.Submit(gpu.Op{Kind: gpu.OpMalloc, Bytes: 4 * gib}, nil).Result.Buffer
	g.at(0, gpu.Op{Kind: gpu.OpFree, Buffer: buf}, nil, nil)
	g.at(0, gpu.Op{Kind: gpu.OpCompute, Kernel: &gpu.Kernel{Partition: "k", Size: int(50 * time.Millisecond)}}, &kernel, nil)
	g.run()
	if !near(kernel, 50*time.Millisecond) {
		t.Errorf("a 50 ms kernel beside a free's work took %v: the work is no copy", kernel)
	}
}

// A trim costs its host time by the bytes it releases: nothing when the pool
// has nothing observed to give back.
func TestTrimCostsByWhatItReleases(t *testing.T) {
	g := newReleaseRig(t, 0, 0, 2, 0)
	var alloc gpu.Result
	var empty, full time.Duration
	var trimmed gpu.Result
	g.at(0, gpu.Op{Kind: gpu.OpTrimPool}, &empty, nil)
	g.at(time.Millisecond, gpu.Op{Kind: gpu.OpMallocAsync, Bytes: 3 * gib}, nil, &alloc)
	g.k.At(2*time.Millisecond, func() {
		g.at(2*time.Millisecond, gpu.Op{Kind: gpu.OpFreeAsync, Buffer: alloc.Buffer}, nil, nil)
	})
	g.at(3*time.Millisecond, gpu.Op{Kind: gpu.OpStreamSync}, nil, nil)
	g.at(4*time.Millisecond, gpu.Op{Kind: gpu.OpTrimPool}, &full, &trimmed)
	g.run()
	if empty != 0 {
		t.Errorf("a trim of an empty pool took %v", empty)
	}
	if !near(full, 6*time.Millisecond) || trimmed.Released != 3*gib {
		t.Errorf("a trim releasing 3 GiB took %v and released %d bytes, want 6 ms and 3 GiB", full, trimmed.Released)
	}
}

// A trim that releases memory leaves work on the copy engine by the bytes it
// released (trim_copy_work_ms_per_gib), from the instant it returns: a copy
// made at once after it shares the engine with that work, one made once the
// work is done takes its solo time, and a trim that releases nothing leaves
// nothing.
func TestTrimLeavesCopyWork(t *testing.T) {
	took := func(trimCopyMs float64, release bool, copyAt time.Duration) time.Duration {
		g := newReleaseRig(t, 0, 0, 2, 0)
		g.d.prof.TrimCopyWorkMsPerGiB = trimCopyMs
		dst := g.d.m.Submit(gpu.Op{Kind: gpu.OpMalloc, Bytes: gib}, nil).Result.Buffer
		var alloc gpu.Result
		var copied time.Duration
		g.at(0, gpu.Op{Kind: gpu.OpMallocAsync, Bytes: 4 * gib}, nil, &alloc)
		g.k.At(time.Millisecond, func() {
			if release {
				g.at(time.Millisecond, gpu.Op{Kind: gpu.OpFreeAsync, Buffer: alloc.Buffer}, nil, nil)
			}
		})
		g.at(2*time.Millisecond, gpu.Op{Kind: gpu.OpStreamSync}, nil, nil)
		// The trim at 3 ms releases 4 GiB in 8 ms: its 4 GiB × trimCopyMs of
		// work starts with it, and it returns at 11 ms.
		g.at(3*time.Millisecond, gpu.Op{Kind: gpu.OpTrimPool}, nil, nil)
		g.at(copyAt, gpu.Op{Kind: gpu.OpCopyIn, Buffer: dst, Bytes: 20e6}, &copied, nil)
		g.run()
		return copied
	}
	for _, c := range []struct {
		what    string
		work    float64
		release bool
		at      time.Duration
		want    time.Duration
	}{
		{"a 20 ms copy at the trim's return, 6 of its 14 ms of work left", 3.5, true, 11 * time.Millisecond, 26 * time.Millisecond},
		{"the same copy 4 ms later, 2 ms of work left", 3.5, true, 15 * time.Millisecond, 22 * time.Millisecond},
		{"the same copy after the work", 3.5, true, 40 * time.Millisecond, 20 * time.Millisecond},
		{"a trim's work shorter than its host call", 1.5, true, 11 * time.Millisecond, 20 * time.Millisecond},
		{"a copy after a trim that released nothing", 3.5, false, 4 * time.Millisecond, 20 * time.Millisecond},
		{"a copy at the trim's return, no trim work", 0, true, 11 * time.Millisecond, 20 * time.Millisecond},
	} {
		if got := took(c.work, c.release, c.at); !near(got, c.want) {
			t.Errorf("%s took %v, want %v", c.what, got, c.want)
		}
	}
}
