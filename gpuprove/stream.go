package gpuprove

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"

	"github.com/cuzk/cuzk/cuda"
)

// pointSet is one vector of a key's points: resident on the device, or on
// the host (pinned or in the Go heap) to be streamed through a chunk pair.
type pointSet struct {
	name string
	n    int
	size int64            // bytes a point
	dev  cuda.Ptr         // TierDevice
	pin  *cuda.HostBuffer // TierPinned
	heap unsafe.Pointer   // TierHost: the first point of src
	src  any              // keeps the Go slice of heap alive
}

func (p *pointSet) bytes() int64 { return int64(p.n) * p.size }

// newPointSet places points as the tier says: uploaded, copied into pinned
// memory, or left where they are.
func newPointSet[T any](cd *cuda.Device, name string, points []T, size int64, tier string, s cuda.Stream) (pointSet, error) {
	ps := pointSet{name: name, n: len(points), size: size}
	if len(points) == 0 {
		return ps, nil
	}
	var err error
	switch tier {
	case TierDevice:
		ps.dev, err = cuda.Upload(cd, points, s)
	case TierPinned:
		if ps.pin, err = cd.HostAlloc(ps.bytes()); err == nil {
			copy(unsafe.Slice((*T)(ps.pin.Pointer()), len(points)), points)
		}
	case TierHost:
		ps.heap, ps.src = unsafe.Pointer(&points[0]), points
	default:
		err = fmt.Errorf("unknown key tier %q", tier)
	}
	return ps, err
}

// free releases what the set holds (cudaFree and cudaFreeHost wait for the
// whole device).
func (p *pointSet) free(cd *cuda.Device) error {
	var errs []error
	if p.dev != 0 {
		errs = append(errs, cd.Free(p.dev))
		p.dev = 0
	}
	if p.pin != nil {
		errs = append(errs, cd.HostFree(p.pin))
		p.pin = nil
	}
	p.heap, p.src = nil, nil
	return errors.Join(errs...)
}

// chunkPair is two device buffers that streamed points pass through: a copy
// stream fills one while the MSM reads the other. One MSM streams through a
// pair at a time.
type chunkPair struct {
	mu     sync.Mutex
	bufs   [2]cuda.Ptr
	events [2]cuda.Event
	copy   cuda.Stream
	bytes  int64        // of each buffer
	held   atomic.Int64 // bytes, for readers that must not wait for an MSM
}

// size is the bytes of each buffer, read without the pair's lock.
func (c *chunkPair) size() int64 { return c.held.Load() }

// ensure makes both buffers at least bytes large. It is called when a key
// set is loaded, not during an MSM.
func (c *chunkPair) ensure(cd *cuda.Device, bytes int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes >= bytes {
		return nil
	}
	if err := c.freeLocked(cd); err != nil {
		return err
	}
	var err error
	if c.copy, err = cd.NewStream(); err != nil {
		return err
	}
	for i := range c.bufs {
		if c.bufs[i], err = cd.Malloc(bytes); err != nil {
			_ = c.freeLocked(cd)
			return err
		}
		if c.events[i], err = cd.NewEvent(); err != nil {
			_ = c.freeLocked(cd)
			return err
		}
	}
	c.bytes = bytes
	c.held.Store(bytes)
	return nil
}

func (c *chunkPair) free(cd *cuda.Device) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.freeLocked(cd)
}

func (c *chunkPair) freeLocked(cd *cuda.Device) error {
	var errs []error
	for i := range c.bufs {
		if c.bufs[i] != 0 {
			errs = append(errs, cd.Free(c.bufs[i]))
			c.bufs[i] = 0
		}
		if c.events[i] != 0 {
			errs = append(errs, cd.DestroyEvent(c.events[i]))
			c.events[i] = 0
		}
	}
	if c.copy != 0 {
		errs = append(errs, cd.DestroyStream(c.copy))
		c.copy = 0
	}
	c.bytes = 0
	c.held.Store(0)
	return errors.Join(errs...)
}

// scratchBuf is a device buffer the kernels take their temporaries from
// (cuda.Scratch), allocated when a key set is placed, so that it is in the
// device's ledger rather than in the pool. Its user holds mu until the
// stream has run the work that uses it.
type scratchBuf struct {
	mu    sync.Mutex
	ptr   cuda.Ptr
	bytes int64
	held  atomic.Int64
}

// size is the buffer's bytes, read without its lock.
func (b *scratchBuf) size() int64 { return b.held.Load() }

// ensure makes the buffer at least bytes large (cudaFree and cudaMalloc:
// called when a key set is placed, waiting for a compute that uses it).
func (b *scratchBuf) ensure(cd *cuda.Device, bytes int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bytes >= bytes {
		return nil
	}
	if err := b.freeLocked(cd); err != nil {
		return err
	}
	p, err := cd.Malloc(bytes)
	if err != nil {
		return err
	}
	b.ptr, b.bytes = p, bytes
	b.held.Store(bytes)
	return nil
}

// lock takes the buffer for one partition's kernels.
func (b *scratchBuf) lock() cuda.Scratch {
	b.mu.Lock()
	return cuda.Scratch{Ptr: b.ptr, Bytes: b.bytes}
}

func (b *scratchBuf) unlock() { b.mu.Unlock() }

func (b *scratchBuf) free(cd *cuda.Device) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.freeLocked(cd)
}

func (b *scratchBuf) freeLocked(cd *cuda.Device) error {
	if b.ptr == 0 {
		return nil
	}
	err := cd.Free(b.ptr)
	b.ptr, b.bytes = 0, 0
	b.held.Store(0)
	return err
}

// msmFunc runs one MSM call over points and scalars on the device.
type msmFunc[J any] func(points, scalars cuda.Ptr, n int) (J, cuda.MSMStats, error)

// chunkedMSM sums an MSM over the points of ps and n scalars at scalars (32
// bytes each), at most chunk points a call: in place for resident points,
// else streamed through pair. With two buffers, the copy of chunk i+1 runs
// on the pair's copy stream while the MSM of chunk i runs: the MSM call
// returns only once its result is on the host, so the buffer the next copy
// fills has been read by then.
func chunkedMSM[J any](cd *cuda.Device, ps *pointSet, scalars cuda.Ptr, chunk int, pair *chunkPair,
	run msmFunc[J], add func(acc *J, x *J)) (J, cuda.MSMStats, error) {
	var sum J
	var stats cuda.MSMStats
	ranges := chunkRanges(ps.n, chunk)
	at := func(i int) cuda.Ptr { return scalars.Add(int64(ranges[i][0]) * scalarBytes) }
	count := func(i int) int { return ranges[i][1] - ranges[i][0] }
	addStats := func(s cuda.MSMStats) {
		stats.Zero += s.Zero
		stats.One += s.One
		stats.Other += s.Other
	}
	if ps.dev != 0 || ps.n == 0 {
		for i := range ranges {
			part, st, err := run(ps.dev.Add(int64(ranges[i][0])*ps.size), at(i), count(i))
			if err != nil {
				return sum, stats, err
			}
			add(&sum, &part)
			addStats(st)
		}
		return sum, stats, nil
	}
	if pair == nil {
		return sum, stats, fmt.Errorf("points %s on the host but no chunk buffers", ps.name)
	}
	pair.mu.Lock()
	defer pair.mu.Unlock()
	if need := int64(count(0)) * ps.size; pair.bytes < need {
		return sum, stats, fmt.Errorf("chunk buffers of %d bytes for chunks of %d bytes of %s", pair.bytes, need, ps.name)
	}
	fill := func(i int) error {
		buf := pair.bufs[i%2]
		off, bytes := int64(ranges[i][0])*ps.size, int64(count(i))*ps.size
		var err error
		if ps.pin != nil {
			err = cd.CopyInAsync(buf, ps.pin, off, bytes, pair.copy)
		} else {
			err = cd.CopyToDevice(buf, unsafe.Add(ps.heap, off), bytes, pair.copy)
		}
		if err != nil {
			return fmt.Errorf("stream %s chunk %d: %w", ps.name, i, err)
		}
		return cd.RecordEvent(pair.events[i%2], pair.copy)
	}
	if err := fill(0); err != nil {
		return sum, stats, err
	}
	for i := range ranges {
		if i+1 < len(ranges) {
			if err := fill(i + 1); err != nil {
				return sum, stats, err
			}
		}
		if err := cd.EventSync(pair.events[i%2]); err != nil {
			return sum, stats, fmt.Errorf("stream %s chunk %d: %w", ps.name, i, err)
		}
		part, st, err := run(pair.bufs[i%2], at(i), count(i))
		if err != nil {
			// The copy of the next chunk may still be running into the
			// other buffer: wait for it before the pair is used again.
			_ = cd.StreamSync(pair.copy)
			return sum, stats, err
		}
		add(&sum, &part)
		addStats(st)
	}
	return sum, stats, nil
}

func addG1(acc, x *curve.G1Jac) { acc.AddAssign(x) }
func addG2(acc, x *curve.G2Jac) { acc.AddAssign(x) }
