package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/cuzk/cuzk/gpu"
)

// poolRig is one simulated device of interferenceProfile (1 GB/s; a kernel
// of n constraints runs n ns) whose pool growths cost 1 ms a GiB, first or
// again, and whose trims cost trimMs a GiB released, with calls made at
// given times on given streams.
type poolRig struct {
	t *testing.T
	k *Kernel
	d *Device
}

func newPoolRig(t *testing.T, serialize bool, trimMs float64) *poolRig {
	p := interferenceProfile(t, 0, 0)
	p.Device.PoolGrowthMs, p.Device.PoolGrowthMsPerGiB = 0, 1
	p.Device.PoolRegrowthMs, p.Device.PoolRegrowthMsPerGiB = 0, 1
	p.Device.TrimMsPerGiB = trimMs
	p.Device.PoolOpsSerialize = serialize
	k := NewKernel(p, []int64{32 * gib}, gpu.DefaultPoolPolicy(), 1)
	return &poolRig{t: t, k: k, d: k.Devices()[0]}
}

// at makes op on stream s at time at; took, if not nil, gets how long the
// call took, r its result.
func (g *poolRig) at(at time.Duration, s gpu.Stream, op gpu.Op, took *time.Duration, r *gpu.Result) {
	g.k.At(at, func() {
		called := g.k.Now()
		op.Stream = s
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

func (g *poolRig) run() { g.k.RunUntil(time.Hour, func() bool { return false }) }

func kernelOf(d time.Duration, scratch int64) *gpu.Kernel {
	return &gpu.Kernel{Partition: "k", Size: int(d), Scratch: scratch}
}

// Two growths on two streams: with the pool's work serialized the second,
// made 1 ms into the first's 12 ms, starts when the first ends and returns
// 11 + 1 ms after it was made; without, it takes its own 1 ms.
func TestPoolGrowthsRunOneAtATime(t *testing.T) {
	for _, c := range []struct {
		serialize bool
		want      time.Duration
	}{{true, 12 * time.Millisecond}, {false, time.Millisecond}} {
		g := newPoolRig(t, c.serialize, 0)
		a, b := g.d.NewStream(), g.d.NewStream()
		var big, small time.Duration
		g.at(0, a, gpu.Op{Kind: gpu.OpMallocAsync, Bytes: 12 * gib}, &big, nil)
		g.at(time.Millisecond, b, gpu.Op{Kind: gpu.OpMallocAsync, Bytes: gib}, &small, nil)
		g.run()
		if !near(big, 12*time.Millisecond) || !near(small, c.want) {
			t.Errorf("serialized %v: the 12 GiB growth took %v, the 1 GiB one beside it %v; want 12 ms and %v", c.serialize, big, small, c.want)
		}
	}
}

// A kernel with scratch on one stream, another stream's trim and growth on
// the pool: the kernel's end (its scratch going back to the pool) waits for
// a trim in flight, and its start (its scratch's allocation) for a growth in
// flight, so that the stream sync behind it returns that much later. A
// kernel without scratch makes no pool call and is not held.
func TestKernelWaitsForThePoolsWork(t *testing.T) {
	const trimMs = 2
	run := func(serialize bool, scratch int64) (first, second time.Duration) {
		g := newPoolRig(t, serialize, trimMs)
		a, b := g.d.NewStream(), g.d.NewStream()
		var buf gpu.Result
		// 0–12 ms: b grows the pool by 10 GiB, frees them and syncs, so
		// that a trim can release them.
		g.at(0, b, gpu.Op{Kind: gpu.OpMallocAsync, Bytes: 10 * gib}, nil, &buf)
		g.k.At(11*time.Millisecond, func() {
			g.at(11*time.Millisecond, b, gpu.Op{Kind: gpu.OpFreeAsync, Buffer: buf.Buffer}, nil, nil)
		})
		g.at(12*time.Millisecond, b, gpu.Op{Kind: gpu.OpStreamSync}, nil, nil)
		// 20 ms: a 50 ms kernel; its scratch comes from b's freed block,
		// so it costs no growth and it would end at 70 ms.
		g.at(20*time.Millisecond, a, gpu.Op{Kind: gpu.OpCompute, Kernel: kernelOf(50*time.Millisecond, scratch), Async: true}, nil, nil)
		g.at(20*time.Millisecond, a, gpu.Op{Kind: gpu.OpStreamSync}, &first, nil)
		// 60 ms: b trims what is left of its block (10 GiB less the
		// scratch), trimMs a GiB.
		g.at(60*time.Millisecond, b, gpu.Op{Kind: gpu.OpTrimPool}, nil, nil)
		// 100 ms: b allocates 9 GiB: the 1 GiB block the first kernel's
		// scratch left in the pool and 8 GiB of growth (8 ms); 1 ms into
		// it, a launches a second 50 ms kernel, whose scratch then grows
		// the pool by 1 GiB (1 ms).
		g.at(100*time.Millisecond, b, gpu.Op{Kind: gpu.OpMallocAsync, Bytes: 9 * gib}, nil, nil)
		g.at(101*time.Millisecond, a, gpu.Op{Kind: gpu.OpCompute, Kernel: kernelOf(50*time.Millisecond, scratch), Async: true}, nil, nil)
		g.at(101*time.Millisecond, a, gpu.Op{Kind: gpu.OpStreamSync}, &second, nil)
		g.run()
		return first, second
	}
	trimEnd := 60*time.Millisecond + time.Duration(float64(10*gib-gib)/float64(gib)*trimMs*float64(time.Millisecond))
	for _, c := range []struct {
		what              string
		serialize         bool
		scratch           int64
		first, secondWant time.Duration
	}{
		{"serialized", true, gib, trimEnd - 20*time.Millisecond, (108 + 1 + 50 - 101) * time.Millisecond},
		// Unserialized, the scratch's growth is host time inside the
		// kernel's run.
		{"not serialized", false, gib, 50 * time.Millisecond, 51 * time.Millisecond},
		{"serialized, no scratch", true, 0, 50 * time.Millisecond, 50 * time.Millisecond},
	} {
		first, second := run(c.serialize, c.scratch)
		if !near(first, c.first) || !near(second, c.secondWant) {
			t.Errorf("%s: the kernel beside a trim took %v to its sync, want %v; beside a growth %v, want %v",
				c.what, first, c.first, second, c.secondWant)
		}
	}
}

// A cudaMalloc of the bytes a cudaFree has just given back waits for the
// free's copy-engine work (12 GiB at 2 ms a GiB: 24 ms) and then costs its
// own 1 ms; with malloc_free_wait_ms_per_gib it waits at the least that
// long after the free (3 ms a GiB: 36 ms, with or without copy-engine
// work), and the shorter of the two never shortens the other; an
// allocation that fits in memory no pending free gave back costs only its
// own; without the rule neither waits.
func TestMallocWaitsForAFreesWork(t *testing.T) {
	run := func(wait bool, total, bytes int64, work, freeWait float64) time.Duration {
		p := interferenceProfile(t, 0, 0)
		p.Device.ContextMiB = 0
		p.Device.FreeMsPerGiB, p.Device.FreeCopyWorkMsPerGiB, p.Device.MallocMs = 0, work, 1
		p.Device.MallocWaitsFreeWork, p.Device.MallocFreeWaitMsPerGiB = wait, freeWait
		k := NewKernel(p, []int64{total}, gpu.DefaultPoolPolicy(), 1)
		g := &poolRig{t: t, k: k, d: k.Devices()[0]}
		s := g.d.NewStream()
		held := g.d.m.Submit(gpu.Op{Kind: gpu.OpMalloc, Bytes: 12 * gib}, nil).Result.Buffer
		var took time.Duration
		g.at(0, s, gpu.Op{Kind: gpu.OpFree, Buffer: held}, nil, nil)
		g.at(time.Millisecond, s, gpu.Op{Kind: gpu.OpMalloc, Bytes: bytes}, &took, nil)
		g.run()
		return took
	}
	for _, c := range []struct {
		what           string
		wait           bool
		total, bytes   int64
		work, freeWait float64
		want           time.Duration
	}{
		{"16 GiB card, the freed 12 GiB again", true, 16 * gib, 12 * gib, 2, 0, 24 * time.Millisecond},
		{"16 GiB card, 2 GiB", true, 16 * gib, 2 * gib, 2, 0, time.Millisecond},
		{"32 GiB card, 12 GiB", true, 32 * gib, 12 * gib, 2, 0, time.Millisecond},
		{"16 GiB card, the freed 12 GiB, no rule", false, 16 * gib, 12 * gib, 2, 0, time.Millisecond},
		{"the freed 12 GiB, 3 ms a GiB after the free", true, 16 * gib, 12 * gib, 2, 3, 36 * time.Millisecond},
		{"the freed 12 GiB, 3 ms a GiB, no copy-engine work", true, 16 * gib, 12 * gib, 0, 3, 36 * time.Millisecond},
		{"the freed 12 GiB, 1 ms a GiB under 2 of work", true, 16 * gib, 12 * gib, 2, 1, 24 * time.Millisecond},
		{"2 GiB beside the freed 12, 3 ms a GiB", true, 16 * gib, 2 * gib, 2, 3, time.Millisecond},
		{"the freed 12 GiB, 3 ms a GiB, no rule", false, 16 * gib, 12 * gib, 2, 3, time.Millisecond},
	} {
		if got := run(c.wait, c.total, c.bytes, c.work, c.freeWait); !near(got, c.want) {
			t.Errorf("%s: the cudaMalloc took %v, want %v", c.what, got, c.want)
		}
	}
}

// With pool_slowdown_kernel 0.5, a growth and a trim made while another
// stream's kernel runs take 1.5 times their host time (4 GiB at 1 ms a
// GiB: 6 ms; 4 GiB at 2 ms: 12 ms); made after the kernel, their own (4
// and 8 ms); without the term, their own either way.
func TestPoolWorkSlowsBesideAKernel(t *testing.T) {
	for _, c := range []struct {
		slowdown     float64
		beside       bool
		grow, trimMs time.Duration
	}{
		{0.5, true, 6 * time.Millisecond, 12 * time.Millisecond},
		{0.5, false, 4 * time.Millisecond, 8 * time.Millisecond},
		{0, true, 4 * time.Millisecond, 8 * time.Millisecond},
	} {
		g := newPoolRig(t, false, 2)
		g.d.prof.PoolSlowdownKernel = c.slowdown
		a, b := g.d.NewStream(), g.d.NewStream()
		at := 10 * time.Millisecond // during the kernel (0-100 ms)
		if !c.beside {
			at = 200 * time.Millisecond
		}
		g.at(0, a, gpu.Op{Kind: gpu.OpCompute, Kernel: kernelOf(100*time.Millisecond, 0), Async: true}, nil, nil)
		var buf gpu.Result
		var grow, trim time.Duration
		g.at(at, b, gpu.Op{Kind: gpu.OpMallocAsync, Bytes: 4 * gib}, &grow, &buf)
		g.k.At(at+30*time.Millisecond, func() {
			g.at(at+30*time.Millisecond, b, gpu.Op{Kind: gpu.OpFreeAsync, Buffer: buf.Buffer}, nil, nil)
		})
		g.at(at+31*time.Millisecond, b, gpu.Op{Kind: gpu.OpStreamSync}, nil, nil)
		g.at(at+40*time.Millisecond, b, gpu.Op{Kind: gpu.OpTrimPool}, &trim, nil)
		g.run()
		if !near(grow, c.grow) || !near(trim, c.trimMs) {
			t.Errorf("slowdown %g, beside a kernel %v: growth %v, trim %v; want %v and %v", c.slowdown, c.beside, grow, trim, c.grow, c.trimMs)
		}
	}
}

// A trim made at the very instant another stream's kernel (with scratch,
// its pool work serialized) is launched runs beside that kernel, as a split
// design's pre-stage trim right after the other worker's launch does on the
// card: slowed by pool_slowdown_kernel. The kernel's start was once an event
// of its own at that instant, after the trim had looked for a kernel.
func TestPoolWorkAtALaunchIsBesideIt(t *testing.T) {
	for _, slowdown := range []float64{0, 0.5} {
		g := newPoolRig(t, true, 2)
		g.d.prof.PoolSlowdownKernel = slowdown
		a, b := g.d.NewStream(), g.d.NewStream()
		// b caches 4 GiB in the pool (grown at 0, freed, synced by 20 ms).
		var buf gpu.Result
		g.at(0, b, gpu.Op{Kind: gpu.OpMallocAsync, Bytes: 4 * gib}, nil, &buf)
		g.k.At(10*time.Millisecond, func() {
			g.at(10*time.Millisecond, b, gpu.Op{Kind: gpu.OpFreeAsync, Buffer: buf.Buffer}, nil, nil)
		})
		g.at(11*time.Millisecond, b, gpu.Op{Kind: gpu.OpStreamSync}, nil, nil)
		// At 50 ms a launches a 100 ms kernel with 1 GiB of scratch (taken
		// from the cached block), and b trims the rest in the same instant.
		var trim time.Duration
		var res gpu.Result
		g.k.At(50*time.Millisecond, func() {
			g.at(50*time.Millisecond, a, gpu.Op{Kind: gpu.OpCompute, Kernel: kernelOf(100*time.Millisecond, gib), Async: true}, nil, nil)
			g.at(50*time.Millisecond, b, gpu.Op{Kind: gpu.OpTrimPool}, &trim, &res)
		})
		g.run()
		want := time.Duration(float64(res.Released) / float64(gib) * 2 * (1 + slowdown) * float64(time.Millisecond))
		if res.Released <= 0 || !near(trim, want) {
			t.Errorf("slowdown %g: the trim at the launch released %d bytes in %v, want %v", slowdown, res.Released, trim, want)
		}
	}
}

// A kernel whose scratch does not fit, launched 10 ms into another stream's
// 50 ms copy: with scratch_oom_waits_copies its failure returns when the
// copy ends, 40 ms after the launch, as the H200's did; without, at once.
// With no copy in progress it returns at once either way. With
// scratch_oom_at_once_after_trim, a trim made before (at 5 ms) makes it
// return at once; without the trim it waits as before.
func TestScratchOOMWaitsCopies(t *testing.T) {
	for _, c := range []struct {
		wait, copying, atOnceAfterTrim, trim bool
		want                                 time.Duration
	}{{true, true, false, false, 40 * time.Millisecond}, {false, true, false, false, 0}, {true, false, false, false, 0},
		{true, true, true, false, 40 * time.Millisecond}, {true, true, true, true, 0}, {true, true, false, true, 40 * time.Millisecond}} {
		p := interferenceProfile(t, 0, 0)
		p.Device.ScratchOOMWaitsCopies = c.wait
		p.Device.ScratchOOMAtOnceAfterTrim = c.atOnceAfterTrim
		k := NewKernel(p, []int64{32 * gib}, gpu.DefaultPoolPolicy(), 1)
		d := k.Devices()[0]
		a, b := d.NewStream(), d.NewStream()
		var buf gpu.Buffer
		k.At(0, func() {
			d.Submit(gpu.Op{Kind: gpu.OpMalloc, Bytes: 31 * gib}, func(r gpu.Result) {
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				buf = r.Buffer
			})
		})
		if c.copying {
			k.At(time.Millisecond, func() {
				d.Submit(gpu.Op{Kind: gpu.OpCopyIn, Stream: a, Buffer: buf, Bytes: 49e6}, func(gpu.Result) {})
			})
		}
		if c.trim {
			k.At(5*time.Millisecond, func() {
				d.Submit(gpu.Op{Kind: gpu.OpTrimPool}, func(gpu.Result) {})
			})
		}
		var took time.Duration = -1
		var err error
		k.At(10*time.Millisecond, func() {
			called := k.Now()
			d.Submit(gpu.Op{Kind: gpu.OpCompute, Stream: b, Kernel: kernelOf(20*time.Millisecond, 4*gib)}, func(r gpu.Result) {
				took, err = k.Now()-called, r.Err
			})
		})
		k.RunUntil(time.Hour, func() bool { return false })
		if !errors.Is(err, gpu.ErrOutOfMemory) || !near(took, c.want) {
			t.Errorf("wait %v, copy in progress %v, at once after a trim %v, trimmed %v: the kernel returned %v after %v; want out of memory after %v",
				c.wait, c.copying, c.atOnceAfterTrim, c.trim, err, took, c.want)
		}
	}
}

// A stream sync made 2 ms into another thread's 8 ms trim (4 GiB at 2 ms a
// GiB, pool_ops_serialize; the pool grew and was freed long before): with
// stream_sync_waits_pool it returns when the trim ends, 6 ms after it was
// made, though its own stream is idle; without, at once. A sync made before
// the trim returns at once either way.
func TestStreamSyncWaitsPool(t *testing.T) {
	for _, c := range []struct {
		waits  bool
		syncAt time.Duration
		want   time.Duration
	}{{true, 202 * time.Millisecond, 6 * time.Millisecond}, {false, 202 * time.Millisecond, 0}, {true, 199 * time.Millisecond, 0}} {
		p := interferenceProfile(t, 0, 0)
		p.Device.PoolOpsSerialize = true
		p.Device.TrimMsPerGiB = 2
		p.Device.StreamSyncWaitsPool = c.waits
		k := NewKernel(p, []int64{32 * gib}, gpu.DefaultPoolPolicy(), 1)
		d := k.Devices()[0]
		a, b := d.NewStream(), d.NewStream()
		k.At(0, func() {
			d.Submit(gpu.Op{Kind: gpu.OpMallocAsync, Stream: a, Bytes: 4 * gib}, func(r gpu.Result) {
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				d.Submit(gpu.Op{Kind: gpu.OpFreeAsync, Stream: a, Buffer: r.Buffer}, func(gpu.Result) {})
				d.Submit(gpu.Op{Kind: gpu.OpStreamSync, Stream: a}, func(gpu.Result) {})
			})
		})
		var trimmed time.Duration
		k.At(200*time.Millisecond, func() {
			d.Submit(gpu.Op{Kind: gpu.OpTrimPool}, func(r gpu.Result) {
				if r.Released != 4*gib {
					t.Errorf("the trim released %d bytes, want %d", r.Released, 4*gib)
				}
				trimmed = k.Now()
			})
		})
		took := time.Duration(-1)
		k.At(c.syncAt, func() {
			called := k.Now()
			d.Submit(gpu.Op{Kind: gpu.OpStreamSync, Stream: b}, func(r gpu.Result) { took = k.Now() - called })
		})
		k.RunUntil(time.Hour, func() bool { return false })
		if trimmed != 208*time.Millisecond {
			t.Errorf("the trim returned at %v, want 208ms", trimmed)
		}
		if !near(took, c.want) {
			t.Errorf("stream_sync_waits_pool %v, sync made at %v: returned after %v, want %v", c.waits, c.syncAt, took, c.want)
		}
	}
}

// With kernel_slowdown_pool a kernel advances at 1/(1+s) of its rate while
// the pool's mapping work runs: another stream's trim of 4 GiB at 2 ms a
// GiB, 10 ms into a 100 ms kernel, stretches it by 8·s/(1+s) ms; a growth
// made before the launch does not; without the figure it is unchanged. A
// profile without it runs as before (TestPoolWorkAtALaunchIsBesideIt and
// the rest keep their times).
func TestKernelSlowdownPool(t *testing.T) {
	for _, s := range []float64{0, 0.25, 1} {
		p := interferenceProfile(t, 0, 0)
		p.Device.PoolGrowthMs, p.Device.PoolGrowthMsPerGiB = 0, 1
		p.Device.PoolRegrowthMs, p.Device.PoolRegrowthMsPerGiB = 0, 1
		p.Device.TrimMsPerGiB = 2
		p.Device.PoolOpsSerialize = true
		p.Device.PoolSlowdownKernel = 0
		p.Device.KernelSlowdownPool = s
		k := NewKernel(p, []int64{32 * gib}, gpu.DefaultPoolPolicy(), 1)
		g := &poolRig{t: t, k: k, d: k.Devices()[0]}
		a, b := g.d.NewStream(), g.d.NewStream()
		var buf gpu.Result
		g.at(0, b, gpu.Op{Kind: gpu.OpMallocAsync, Bytes: 4 * gib}, nil, &buf) // 4 ms of growth, before the launch
		g.k.At(10*time.Millisecond, func() {
			g.at(10*time.Millisecond, b, gpu.Op{Kind: gpu.OpFreeAsync, Buffer: buf.Buffer}, nil, nil)
		})
		g.at(11*time.Millisecond, b, gpu.Op{Kind: gpu.OpStreamSync}, nil, nil)
		g.at(20*time.Millisecond, a, gpu.Op{Kind: gpu.OpCompute, Kernel: kernelOf(100*time.Millisecond, 0), Async: true}, nil, nil)
		var ran time.Duration
		g.at(20*time.Millisecond, a, gpu.Op{Kind: gpu.OpStreamSync}, &ran, nil)
		var trim time.Duration
		var res gpu.Result
		g.at(30*time.Millisecond, b, gpu.Op{Kind: gpu.OpTrimPool}, &trim, &res)
		g.run()
		work := time.Duration(float64(res.Released) / float64(gib) * 2 * float64(time.Millisecond))
		want := 100*time.Millisecond + time.Duration(float64(work)*s/(1+s))
		if res.Released != 4*gib || !near(trim, work) || !near(ran, want) {
			t.Errorf("s %g: a trim of %d bytes in %v beside the kernel; the kernel ran %v, want %v", s, res.Released, trim, ran, want)
		}
	}
}
