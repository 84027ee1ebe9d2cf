package gpuprove

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/prover"
)

// pointSet is one vector of a key's points: resident on the device, on
// the host (pinned or in the Go heap), or on disk, to be streamed through a
// chunk pair.
type pointSet struct {
	name string
	n    int
	size int64               // bytes a point
	dev  cuda.Ptr            // TierDevice
	pin  *cuda.HostBuffer    // TierPinned
	heap unsafe.Pointer      // TierHost: the first point of src
	src  any                 // keeps the Go slice of heap alive
	disk *prover.PointStream // TierDisk
	// table, with Copies > 1, is the precomputed MSM table dev points to
	// (TierDevice): its first row is the points.
	table cuda.MSMTable
}

// filePiece is the points placeFromFile reads at a time for the device
// tier: a checksum block of the points file.
const filePiece = 1 << 16

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

// borrowedPointSet is points already in pinned memory that someone else
// owns (prover.Keys.PinPoints): streamed from there, never freed here.
func borrowedPointSet[T any](name string, points []T, size int64) pointSet {
	ps := pointSet{name: name, n: len(points), size: size}
	if len(points) > 0 {
		ps.pin = cuda.BorrowHost(unsafe.Pointer(&points[0]), ps.bytes())
	}
	return ps
}

// newPointSetFromFile places the section name of the points file pts as
// the tier says: uploaded (through a Go buffer of filePiece points), read
// into pinned memory or into the Go heap, or left on disk to be streamed.
// On an error the set is returned with what it holds, for free.
func newPointSetFromFile(cd *cuda.Device, pts *prover.Points, name, tier string, s cuda.Stream) (pointSet, error) {
	st, err := pts.Stream(name)
	if err != nil {
		return pointSet{name: name}, err
	}
	sec := st.Section()
	ps := pointSet{name: name, n: sec.N, size: int64(sec.Size)}
	if ps.n == 0 {
		return ps, nil
	}
	switch tier {
	case TierDisk:
		ps.disk = st
	case TierDevice:
		if ps.dev, err = cd.Malloc(ps.bytes()); err != nil {
			return ps, err
		}
		buf := make([]byte, int64(min(ps.n, filePiece))*ps.size)
		for from := 0; from < ps.n; from += filePiece {
			to := min(from+filePiece, ps.n)
			bytes := int64(to-from) * ps.size
			if err := st.Read(buf, from, to); err != nil {
				return ps, err
			}
			if err := cd.CopyToDevice(ps.dev.Add(int64(from)*ps.size), unsafe.Pointer(&buf[0]), bytes, s); err != nil {
				return ps, err
			}
		}
	case TierPinned:
		if ps.pin, err = cd.HostAlloc(ps.bytes()); err != nil {
			return ps, err
		}
		err = st.Read(unsafe.Slice((*byte)(ps.pin.Pointer()), ps.bytes()), 0, ps.n)
	case TierHost:
		buf := make([]byte, ps.bytes())
		if err = st.Read(buf, 0, ps.n); err == nil {
			ps.heap, ps.src = unsafe.Pointer(&buf[0]), buf
		}
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
	p.table = cuda.MSMTable{}
	if p.pin != nil {
		errs = append(errs, cd.HostFree(p.pin))
		p.pin = nil
	}
	p.heap, p.src, p.disk = nil, nil, nil
	return errors.Join(errs...)
}

// chunkPair is two device buffers that streamed points pass through: a copy
// stream fills one while the MSM reads the other. One MSM streams through a
// pair at a time. Points streamed from disk are read first into one of
// two host staging buffers of the same size.
type chunkPair struct {
	mu     sync.Mutex
	bufs   [2]cuda.Ptr
	events [2]cuda.Event
	copy   cuda.Stream
	bytes  int64        // of each buffer
	held   atomic.Int64 // bytes, for readers that must not wait for an MSM
	stage  [2]stagingBuf
	// stagePinned is what the staging took of the pinned budget; staged
	// the bytes of both buffers, read without the lock.
	stagePinned int64
	staged      atomic.Int64
}

// stagingBuf is host memory that a chunk of points is read into from disk:
// pinned, copied to the device asynchronously, or (the pinned budget
// spent) Go memory, copied through the driver's own staging.
type stagingBuf struct {
	pin  *cuda.HostBuffer
	heap []byte
}

func (s *stagingBuf) size() int64 {
	if s.pin != nil {
		return s.pin.Len()
	}
	return int64(len(s.heap))
}

func (s *stagingBuf) bytes() []byte {
	if s.pin != nil {
		return unsafe.Slice((*byte)(s.pin.Pointer()), s.pin.Len())
	}
	return s.heap
}

// stagingSize is the bytes of both staging buffers, read without the
// pair's lock.
func (c *chunkPair) stagingSize() int64 { return c.staged.Load() }

// ensureStaging makes both staging buffers at least bytes large: pinned,
// taken from the budget b, when pinned and b has room, else Go memory. It
// is called when a key set is placed, not during an MSM.
func (c *chunkPair) ensureStaging(cd *cuda.Device, bytes int64, pinned bool, b *budget) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stage[0].size() >= bytes && (c.stagePinned > 0 || !pinned) {
		return nil
	}
	if err := c.freeStagingLocked(cd, b); err != nil {
		return err
	}
	if pinned && b.take(2*bytes) {
		c.stagePinned = 2 * bytes
		for i := range c.stage {
			h, err := cd.HostAlloc(bytes)
			if err != nil {
				_ = c.freeStagingLocked(cd, b)
				return err
			}
			c.stage[i].pin = h
		}
	} else {
		for i := range c.stage {
			c.stage[i].heap = make([]byte, bytes)
		}
	}
	c.staged.Store(2 * bytes)
	return nil
}

func (c *chunkPair) freeStagingLocked(cd *cuda.Device, b *budget) error {
	var errs []error
	for i := range c.stage {
		if c.stage[i].pin != nil {
			errs = append(errs, cd.HostFree(c.stage[i].pin))
		}
		c.stage[i] = stagingBuf{}
	}
	b.give(c.stagePinned)
	c.stagePinned = 0
	c.staged.Store(0)
	return errors.Join(errs...)
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

// free releases the buffers, the staging too, whose pinned bytes go back
// to b.
func (c *chunkPair) free(cd *cuda.Device, b *budget) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.freeLocked(cd), c.freeStagingLocked(cd, b))
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
	if ps.table.Copies > 1 && len(ranges) > 1 {
		// A table's rows are of all n points: the plan makes tables for
		// whole MSMs only.
		return sum, stats, fmt.Errorf("points %s: an MSM table in chunks of %d points", ps.name, chunk)
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
	if ps.disk != nil {
		return diskMSM(cd, ps, pair, ranges, at, run, add)
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
	// Where a streamed MSM's time goes, for the Debug log: waiting for a
	// chunk's copy (the link is the bound) or in the MSM calls (the device
	// is).
	start := time.Now()
	var copyWait, msms time.Duration
	if err := fill(0); err != nil {
		return sum, stats, err
	}
	for i := range ranges {
		if i+1 < len(ranges) {
			if err := fill(i + 1); err != nil {
				return sum, stats, err
			}
		}
		t := time.Now()
		if err := cd.EventSync(pair.events[i%2]); err != nil {
			return sum, stats, fmt.Errorf("stream %s chunk %d: %w", ps.name, i, err)
		}
		copyWait += time.Since(t)
		t = time.Now()
		part, st, err := run(pair.bufs[i%2], at(i), count(i))
		if err != nil {
			// The copy of the next chunk may still be running into the
			// other buffer: wait for it before the pair is used again.
			_ = cd.StreamSync(pair.copy)
			return sum, stats, err
		}
		msms += time.Since(t)
		add(&sum, &part)
		addStats(st)
	}
	took := time.Since(start)
	slog.Debug("streamed msm", "points", ps.name, "chunks", len(ranges), "bytes", ps.bytes(), "took", took,
		"copy_wait", copyWait, "msm", msms, "gbps", float64(ps.bytes())/took.Seconds()/1e9)
	return sum, stats, nil
}

func addG1(acc, x *curve.G1Jac) { acc.AddAssign(x) }
func addG2(acc, x *curve.G2Jac) { acc.AddAssign(x) }

// diskMSM is chunkedMSM for points on disk, with pair locked. Chunk i goes
// from disk into staging buffer i%2 (a read of the points file, checksums
// checked), then by the copy stream into chunk buffer i%2, then to the MSM.
// The read of chunk i+2 starts once the copy of chunk i is done (its
// staging buffer is free), and runs with the MSM of chunk i and the copy of
// chunk i+1:
//
//	read    i+1 | i+2 | i+3
//	copy      i | i+1 | i+2
//	MSM     i−1 |  i  | i+1
//
// so the disk, the link and the device each work on a chunk of their own.
// The copy of chunk i+1 is queued only once the MSM of chunk i−1 has
// returned: it overwrites the buffer that MSM read. One read is in flight
// at a time, in the order of the chunks, as the points file's checksums of
// blocks that span chunks require; it is waited for before any return, as it
// writes a staging buffer that the next MSM of the pair may use.
func diskMSM[J any](cd *cuda.Device, ps *pointSet, pair *chunkPair, ranges [][2]int, at func(i int) cuda.Ptr,
	run msmFunc[J], add func(acc *J, x *J)) (sum J, stats cuda.MSMStats, err error) {
	count := func(i int) int { return ranges[i][1] - ranges[i][0] }
	if need := int64(count(0)) * ps.size; pair.stage[0].size() < need {
		return sum, stats, fmt.Errorf("staging buffers of %d bytes for chunks of %d bytes of %s", pair.stage[0].size(), need, ps.name)
	}
	read := func(i int) error {
		return ps.disk.Read(pair.stage[i%2].bytes(), ranges[i][0], ranges[i][1])
	}
	upload := func(i int) error {
		st, buf, bytes := &pair.stage[i%2], pair.bufs[i%2], int64(count(i))*ps.size
		var err error
		if st.pin != nil {
			err = cd.CopyInAsync(buf, st.pin, 0, bytes, pair.copy)
		} else {
			err = cd.CopyToDevice(buf, unsafe.Pointer(&st.heap[0]), bytes, pair.copy)
		}
		if err != nil {
			return fmt.Errorf("stream %s chunk %d: %w", ps.name, i, err)
		}
		return cd.RecordEvent(pair.events[i%2], pair.copy)
	}
	var reading chan error // the read in flight
	start := func(i int) {
		reading = make(chan error, 1)
		go func() { reading <- read(i) }()
	}
	wait := func() error {
		err := <-reading
		reading = nil
		return err
	}
	defer func() {
		if reading != nil {
			err = errors.Join(err, wait())
		}
		if err != nil {
			// A copy may still be running into a chunk buffer.
			err = errors.Join(err, cd.StreamSync(pair.copy))
		}
	}()
	if err := read(0); err != nil {
		return sum, stats, err
	}
	if err := upload(0); err != nil {
		return sum, stats, err
	}
	if len(ranges) > 1 {
		start(1)
	}
	for i := range ranges {
		if i+1 < len(ranges) {
			if err := wait(); err != nil {
				return sum, stats, err
			}
			if err := upload(i + 1); err != nil {
				return sum, stats, err
			}
		}
		if err := cd.EventSync(pair.events[i%2]); err != nil {
			return sum, stats, fmt.Errorf("stream %s chunk %d: %w", ps.name, i, err)
		}
		if i+2 < len(ranges) {
			start(i + 2)
		}
		part, st, err := run(pair.bufs[i%2], at(i), count(i))
		if err != nil {
			return sum, stats, err
		}
		add(&sum, &part)
		stats.Zero += st.Zero
		stats.One += st.One
		stats.Other += st.Other
	}
	return sum, stats, nil
}
