package cli

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpuprove"
)

// gpuContention is the real device: the copy moves --copy bytes from pinned
// host memory into the partition's buffer on its stream, and the kernel is
// a train of memsets over that buffer (full occupancy, holding the stream)
// sized to --kernel, which takes --scratch bytes from the stream-ordered pool
// on its stream first and frees them behind itself, as the MSM does.
type gpuContention struct {
	cd    *cuda.Device
	d     *gpuprove.Device
	spec  contentionSpec
	host  *cuda.HostBuffer
	perGB time.Duration // one memset of a GiB, alone
	hostCalls
}

func openGPUContention(spec contentionSpec, index int) (contentionDevice, error) {
	lib, err := cuda.Load("")
	if err != nil {
		return nil, fmt.Errorf("bench contention --backend gpu: %w", err)
	}
	cd, err := lib.Device(index)
	if err != nil {
		return nil, fmt.Errorf("bench contention --backend gpu: %w", err)
	}
	g := &gpuContention{cd: cd, spec: spec}
	if spec.copy > 0 {
		if g.host, err = cd.HostAlloc(spec.copy); err != nil {
			return nil, err
		}
	}
	if g.perGB, err = memsetRateOnce(cd, index, min(spec.staged, 1<<30)); err != nil {
		g.Close()
		return nil, err
	}
	// The pinned buffer and the rate come before the device, so that the
	// limit's ballast is measured against what is left.
	g.d, err = gpuprove.NewDevice(cd, gpuprove.DeviceOptions{VRAMLimit: spec.limit, Reserved: func() int64 { return spec.headroom }})
	if err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// memsetRates keeps each device's memset rate for the process: timed anew
// for every run, the rate varied by up to 10 % between runs of one bench on
// the H200 (F6's kernel of 120 ms ran 105-122 ms by run), which the
// simulator, given one kernel time, then counted as its own error.
var memsetRates struct {
	sync.Mutex
	m map[[2]int64]time.Duration // by device index and bytes
}

// memsetRateOnce is memsetRate of device index's n bytes, timed once a
// process.
func memsetRateOnce(cd *cuda.Device, index int, n int64) (time.Duration, error) {
	memsetRates.Lock()
	defer memsetRates.Unlock()
	key := [2]int64{int64(index), n}
	if r, ok := memsetRates.m[key]; ok {
		return r, nil
	}
	r, err := memsetRate(cd, n)
	if err != nil {
		return 0, err
	}
	if memsetRates.m == nil {
		memsetRates.m = map[[2]int64]time.Duration{}
	}
	memsetRates.m[key] = r
	return r, nil
}

// memsetRate times memsets of n bytes on a stream of their own: the kernel's
// unit of work, the median of five rounds after one that warms up.
func memsetRate(cd *cuda.Device, n int64) (time.Duration, error) {
	buf, err := cd.Malloc(n)
	if err != nil {
		return 0, fmt.Errorf("time the synthetic kernel: %w", err)
	}
	defer cd.Free(buf)
	st, err := cd.NewStream()
	if err != nil {
		return 0, err
	}
	defer cd.DestroyStream(st)
	const reps, rounds = 20, 5
	var times []time.Duration
	for round := range rounds + 1 { // the first warms up
		start := time.Now()
		for range reps {
			if err := cd.Memset(buf, 0, n, st); err != nil {
				return 0, err
			}
		}
		if err := cd.StreamSync(st); err != nil {
			return 0, err
		}
		if round > 0 {
			times = append(times, time.Since(start)/reps)
		}
	}
	slices.Sort(times)
	per := times[len(times)/2]
	if per <= 0 {
		return 0, errors.New("time the synthetic kernel: a memset took no measurable time")
	}
	return time.Duration(float64(per) * float64(1<<30) / float64(n)), nil
}

func (g *gpuContention) Device() gpu.Device { return g.d }

func (g *gpuContention) Kernel(p actors.PartitionID) *gpu.Kernel {
	return &gpu.Kernel{Partition: p.String(), Work: gpuprove.WorkFuncs{
		StageFunc: func(pl gpuprove.Placement) error {
			if pl.Buffer == 0 || pl.Bytes < g.spec.copy {
				return fmt.Errorf("%s: copy of %s without a device buffer that large", p, gpu.FormatBytes(g.spec.copy))
			}
			if g.host == nil {
				return nil
			}
			return g.cd.CopyInAsync(pl.Buffer, g.host, 0, g.spec.copy, pl.Stream)
		},
		ComputeFunc: func(pl gpuprove.Placement) (err error) {
			// The host code runs on the device's goroutine for the
			// stream, after the launch has returned to the worker: its
			// span begins where it began, and its scratch allocation
			// is a span of its own.
			began := g.clock()
			defer func() { g.reportCall("kernel_host", p.String(), began, pl.Bytes, err) }()
			if pl.Buffer == 0 {
				return fmt.Errorf("%s: synthetic kernel without its buffer (placed on stream %#x, buffer %#x of %d bytes)", p, pl.Stream, pl.Buffer, pl.Bytes)
			}
			var scratch cuda.Ptr
			if g.spec.scratch > 0 {
				at := g.clock()
				scratch, err = g.cd.MallocAsync(g.spec.scratch, pl.Stream)
				g.reportCall("scratch_malloc", p.String(), at, g.spec.scratch, err)
				if err != nil {
					return fmt.Errorf("%s: kernel scratch: %w", p, err)
				}
			}
			per := time.Duration(float64(g.perGB) * float64(pl.Bytes) / float64(1<<30))
			n := 1
			if per > 0 {
				n = max(1, int(g.spec.kernel/per))
			}
			for range n {
				if err = g.cd.Memset(pl.Buffer, 0, pl.Bytes, pl.Stream); err != nil {
					break
				}
			}
			if scratch != 0 {
				at := g.clock()
				ferr := g.cd.FreeAsync(scratch, pl.Stream)
				g.reportCall("scratch_free_async", p.String(), at, g.spec.scratch, ferr)
				err = errors.Join(err, ferr)
			}
			return err
		}}}
}

func (g *gpuContention) Close() error {
	var errs []error
	if g.d != nil {
		errs = append(errs, g.d.Close())
	}
	if g.host != nil {
		errs = append(errs, g.cd.HostFree(g.host))
	}
	return errors.Join(errs...)
}
