// Package gpuprove proves on GPUs: a prover.Backend whose stage and compute
// stages run on the device through the CUDA kernel library (package cuda),
// and a gpu.Device over the same GPU for the lock designs.
//
// Per partition, Stage copies a, b, c and the three wire vectors into one
// device buffer; Compute runs H on the device (three inverse NTTs, three
// coset NTTs, the quotient step and an inverse coset NTT, as prover.ComputeH
// does on the CPU), feeds H straight into the Z MSM, and runs the A, B and K
// MSMs against the proving key's G1 points, which are uploaded once per device
// and stay resident. b_g2, the G2 MSM of the B wires, runs on the CPU
// (prover.BG2, as cuzk does) or, with BackendOptions.BG2, in Compute on the
// device against resident G2 points, reusing the B wires already staged.
package gpuprove

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/prover"
)

// Backend is the GPU prover backend. It is safe for concurrent use.
type Backend struct {
	devs  map[int]*deviceKeys // by CUDA device index
	order []int
	bg2   bool // b_g2 on the device
	split bool // 0/1 wire scalars as batch additions
	// g2Beside runs b_g2's G2 MSM on a second stream beside the G1 work.
	g2Beside bool
	pinned   *pinnedPool // staging buffers; nil: Go memory

	zero, one, other atomic.Int64 // wire scalars seen by split MSMs

	mu sync.Mutex
	rr int // next device for calls that come without a placement
}

var (
	_ prover.Backend     = (*Backend)(nil)
	_ prover.KeyPlacer   = (*Backend)(nil)
	_ prover.Footprinter = (*Backend)(nil)
	_ prover.BG2Computer = (*Backend)(nil)
)

// BackendOptions configures a Backend.
type BackendOptions struct {
	// BG2 runs b_g2 on the device: Compute adds the G2 MSM of the B wires
	// (Computed.B2), and the key's G2 B points stay resident beside the G1
	// points. Off, b_g2 is left to the CPU (prover.BG2).
	BG2 bool
	// NoSplit runs the wire MSMs (A, B, K, and b_g2) on every scalar. By
	// default their 0 and 1 scalars are split off on the device: zeros are
	// dropped and the points of ones are summed by batch additions, so the
	// Pippenger MSM sees only the other scalars (cuda.MSMOptions.Split).
	NoSplit bool
	// SerialG2 runs the G2 MSM of b_g2 after the G1 MSMs on the partition's
	// stream. By default it runs beside H and the G1 MSMs, on a second
	// stream, so that each fills the device where the other leaves it idle
	// (sorting, bucket sums, the host's share); its scratch is then counted
	// beside the G1 MSM's in Reserved.
	SerialG2 bool
	// PinnedLimit bounds the pinned host memory kept for staging partitions
	// (prover.PrepAllocator); beyond it, or when negative, partitions are
	// prepared in Go memory and copied from there. Zero is DefaultPinnedLimit.
	PinnedLimit int64
	// KeyTier places the proving keys' points: "" or "auto" (resident on
	// the device when they fit beside PartitionsBeside partitions, else
	// streamed from the host), or one of TierDevice, TierPinned, TierHost.
	KeyTier string
	// KeysPinnedLimit bounds the pinned host memory of streamed keys; a key
	// set beyond it streams from the Go heap. Zero is DefaultKeysPinnedLimit;
	// negative pins none.
	KeysPinnedLimit int64
	// PartitionsBeside is how many partitions' buffers the plan keeps room
	// for beside each key set (at least one). Zero is 2: one computing, one
	// staging.
	PartitionsBeside int
	// ChunkPoints, when not zero, is the most points one MSM call sees (a
	// power of two); zero lets the plan choose.
	ChunkPoints int
}

// DefaultKeysPinnedLimit is the pinned host memory streamed keys may take
// by default.
const DefaultKeysPinnedLimit = 64 << 30

// DefaultPinnedLimit is the pinned staging memory a backend keeps by default.
const DefaultPinnedLimit = 32 << 30

// NewBackend returns a backend on the given devices.
func NewBackend(devices []*cuda.Device, opt BackendOptions) (*Backend, error) {
	if len(devices) == 0 {
		return nil, errors.New("gpu backend: no devices")
	}
	switch opt.KeyTier {
	case "", "auto", TierDevice, TierPinned, TierHost:
	default:
		return nil, fmt.Errorf("gpu backend: key tier %q: want auto, %s, %s or %s", opt.KeyTier, TierDevice, TierPinned, TierHost)
	}
	if c := opt.ChunkPoints; c < 0 || c&(c-1) != 0 {
		return nil, fmt.Errorf("gpu backend: chunk of %d points: want a power of two", c)
	}
	b := &Backend{devs: map[int]*deviceKeys{}, bg2: opt.BG2, split: !opt.NoSplit, g2Beside: opt.BG2 && !opt.SerialG2}
	po := planOptions{tier: opt.KeyTier, beside: cmp.Or(opt.PartitionsBeside, 2), chunkPoints: opt.ChunkPoints}
	pinnedKeys := &pinnedBudget{max: cmp.Or(opt.KeysPinnedLimit, DefaultKeysPinnedLimit)}
	if opt.PinnedLimit >= 0 {
		b.pinned = newPinnedPool(devices[0], cmp.Or(opt.PinnedLimit, DefaultPinnedLimit))
	}
	for _, d := range devices {
		if _, dup := b.devs[d.Index()]; dup {
			return nil, fmt.Errorf("gpu backend: device %d given twice", d.Index())
		}
		dk, err := newDeviceKeys(d, opt.BG2, b.g2Beside, b.split, po, pinnedKeys)
		if err != nil {
			b.Close()
			return nil, err
		}
		b.devs[d.Index()] = dk
		b.order = append(b.order, d.Index())
	}
	return b, nil
}

// Name implements prover.Backend.
func (b *Backend) Name() string { return "gpu" }

// ComputesBG2 implements prover.BG2Computer.
func (b *Backend) ComputesBG2() bool { return b.bg2 }

// Preload uploads k's points and NTT tables to every device now, rather
// than in the first partition's compute, so that the devices' Info reports
// the memory left for partitions.
func (b *Backend) Preload(k *prover.Keys) error {
	for _, i := range b.order {
		r, _, err := b.devs[i].acquire(k)
		if err != nil {
			return err
		}
		b.devs[i].release(r)
	}
	return nil
}

// Reserved is the memory of device i that partitions' buffers cannot have:
// resident keys, NTT tables and one MSM's scratch.
func (b *Backend) Reserved(i int) int64 {
	if dk, ok := b.devs[i]; ok {
		return dk.reserved()
	}
	return 0
}

// Plan is how one partition of k uses device i: the key's plan once it is
// placed there, else the plan it would get now.
func (b *Backend) Plan(i int, k *prover.Keys) (Plan, error) {
	dk, ok := b.devs[i]
	if !ok {
		return Plan{}, fmt.Errorf("gpu backend: no device %d", i)
	}
	dk.mu.Lock()
	r, placed := dk.keys[k.Hash]
	dk.mu.Unlock()
	if placed {
		return r.plan, nil
	}
	return dk.plan(k, keyLayout(k).total)
}

// Held implements prover.KeyPlacer: what the backend holds on device i, by
// kind.
func (b *Backend) Held(i int) prover.Held {
	if dk, ok := b.devs[i]; ok {
		return dk.usage()
	}
	return prover.Held{}
}

// DevicePlan implements prover.KeyPlacer: Plan as a prover.DevicePlan.
func (b *Backend) DevicePlan(i int, k *prover.Keys) (prover.DevicePlan, error) {
	p, err := b.Plan(i, k)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Devices are the CUDA indices of the backend's devices.
func (b *Backend) Devices() []int { return slices.Clone(b.order) }

// EvictIdleOn frees the keys no partition has used for idle on device i and
// returns the bytes freed. cudaFree waits for the whole device.
func (b *Backend) EvictIdleOn(i int, idle time.Duration) (int64, error) {
	dk, ok := b.devs[i]
	if !ok {
		return 0, fmt.Errorf("gpu backend: no device %d", i)
	}
	return dk.evictIdle(idle)
}

// EvictIdle frees the keys no partition has used for idle, on every device,
// and returns the bytes freed.
func (b *Backend) EvictIdle(idle time.Duration) (int64, error) {
	var total int64
	for _, i := range b.order {
		n, err := b.devs[i].evictIdle(idle)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Close frees the resident keys and tables of every device.
func (b *Backend) Close() error {
	var errs []error
	for _, i := range b.order {
		errs = append(errs, b.devs[i].close())
	}
	if b.pinned != nil {
		errs = append(errs, b.pinned.close())
	}
	return errors.Join(errs...)
}

// layout places a partition's vectors in one buffer, each on a 256-byte
// boundary: a, b, c (the domain) and the A, B, K wire vectors.
type layout struct {
	n, na, nb, nk       int
	a, b, c, wa, wb, wk int64 // offsets
	total               int64
}

func newLayout(n, na, nb, nk int) layout {
	l := layout{n: n, na: na, nb: nb, nk: nk}
	off := int64(0)
	place := func(elems int) int64 {
		at := off
		off += (int64(elems)*scalarBytes + 255) &^ 255
		return at
	}
	l.a, l.b, l.c = place(n), place(n), place(n)
	l.wa, l.wb, l.wk = place(na), place(nb), place(nk)
	l.total = max(off, 256)
	return l
}

func keyLayout(k *prover.Keys) layout {
	pk := k.PK
	return newLayout(int(pk.Domain.Cardinality), len(pk.G1.A), len(pk.G1.B), len(pk.G1.K))
}

// Footprint is the device buffer one partition of k needs: its staged
// vectors. MSM scratch and the key are counted once per device (Reserved),
// since only the compute lock's holder runs MSMs.
func (b *Backend) Footprint(k *prover.Keys) int64 { return keyLayout(k).total }

// staged is a partition on the device.
type staged struct {
	dk        *deviceKeys
	res       *resident
	dom       *cuda.Domain
	s         cuda.Stream
	base      cuda.Ptr
	l         layout
	ownBuf    bool
	ownStream bool
	once      sync.Once
}

func (s *staged) ptr(off int64) cuda.Ptr { return s.base.Add(off) }

// Release frees what Stage allocated itself (not a design's buffer).
func (s *staged) Release() {
	s.once.Do(func() {
		cd := s.dk.cd
		if s.ownBuf {
			_ = cd.FreeAsync(s.base, s.s)
			_ = cd.StreamSync(s.s)
		}
		if s.ownStream {
			_ = cd.DestroyStream(s.s)
		}
		s.dk.release(s.res)
	})
}

// Stage implements prover.Backend: it copies the partition's vectors to the
// device, picking a device, a stream of its own and a buffer from the pool.
// A Device running a partition's prover.Work stages it where the design
// placed it instead (stage with a Placement).
func (b *Backend) Stage(ctx context.Context, k *prover.Keys, p *prover.Prepared) (prover.Staged, error) {
	return b.stage(ctx, nil, k, p)
}

// stage copies the partition's vectors to the device: with pl, on the
// partition's stream and into the buffer its design allocated (from the
// pool when the design named none); without, as Stage says.
func (b *Backend) stage(ctx context.Context, pl *Placement, k *prover.Keys, p *prover.Prepared) (prover.Staged, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l := keyLayout(k)
	if len(p.A) != l.n || len(p.B) != l.n || len(p.C) != l.n {
		return nil, fmt.Errorf("gpu stage: a, b, c of %d, %d, %d elements for a domain of %d", len(p.A), len(p.B), len(p.C), l.n)
	}
	if len(p.WiresA) != l.na || len(p.WiresB) != l.nb || len(p.WiresK) != l.nk {
		return nil, fmt.Errorf("gpu stage: wire vectors of %d, %d, %d for %d, %d, %d key points: keys are for another circuit",
			len(p.WiresA), len(p.WiresB), len(p.WiresK), l.na, l.nb, l.nk)
	}
	st := &staged{l: l}
	if pl != nil && pl.Device != nil {
		dk, ok := b.devs[pl.Device.index]
		if !ok {
			return nil, fmt.Errorf("gpu stage: device %d is not one of the backend's", pl.Device.index)
		}
		st.dk, st.s = dk, pl.Stream
		if pl.Buffer != 0 {
			if pl.Bytes < l.total {
				return nil, fmt.Errorf("gpu stage: the design's buffer has %d bytes, the partition needs %d", pl.Bytes, l.total)
			}
			st.base = pl.Buffer
		}
	} else {
		b.mu.Lock()
		st.dk = b.devs[b.order[b.rr%len(b.order)]]
		b.rr++
		b.mu.Unlock()
		s, err := st.dk.cd.NewStream()
		if err != nil {
			return nil, fmt.Errorf("gpu stage: %w", err)
		}
		st.s, st.ownStream = s, true
	}
	cd := st.dk.cd
	var err error
	st.res, st.dom, err = st.dk.acquire(k)
	if err != nil {
		if st.ownStream {
			_ = cd.DestroyStream(st.s)
		}
		return nil, err
	}
	if st.base == 0 {
		if st.base, err = cd.MallocAsync(l.total, st.s); err != nil {
			st.Release()
			return nil, fmt.Errorf("gpu stage: %w", err)
		}
		st.ownBuf = true
	}
	if m, ok := p.Memory.(*pinnedPrep); ok && m.l == l {
		// Prepared in pinned memory in the device buffer's layout: one copy.
		if err := cd.CopyInAsync(st.base, m.h, 0, l.total, st.s); err != nil {
			st.Release()
			return nil, fmt.Errorf("gpu stage: copy: %w", err)
		}
		if err := cd.StreamSync(st.s); err != nil {
			st.Release()
			return nil, fmt.Errorf("gpu stage: copy: %w", err)
		}
		return st, nil
	}
	for _, c := range []struct {
		name string
		off  int64
		v    []fr.Element
	}{{"a", l.a, p.A}, {"b", l.b, p.B}, {"c", l.c, p.C}, {"wires A", l.wa, p.WiresA}, {"wires B", l.wb, p.WiresB}, {"wires K", l.wk, p.WiresK}} {
		if err := cuda.CopyIn(cd, st.ptr(c.off), c.v, st.s); err != nil {
			st.Release()
			return nil, fmt.Errorf("gpu stage: copy %s: %w", c.name, err)
		}
	}
	return st, nil
}

// Compute implements prover.Backend: H on the device, then the four G1 MSMs
// and, when the backend runs b_g2, the G2 MSM of the B wires.
func (b *Backend) Compute(ctx context.Context, k *prover.Keys, s prover.Staged) (*prover.Computed, error) {
	st, ok := s.(*staged)
	if !ok {
		return nil, fmt.Errorf("gpu backend: staged data of type %T", s)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if st.res.hash != k.Hash {
		return nil, fmt.Errorf("gpu compute: staged with keys %s, computing with %s", short(st.res.hash), short(k.Hash))
	}
	cd, l := st.dk.cd, st.l
	var out prover.Computed
	r := st.res
	// H's coefficients are random: only the wire MSMs are split.
	wires := cuda.MSMOptions{Split: b.split}
	// g2 runs the G2 MSM on stream s in scratch buf (whose lock it takes;
	// the MSM calls return with their stream drained).
	g2 := func(s cuda.Stream, buf *scratchBuf) error {
		opt := wires
		opt.Scratch = buf.lock()
		defer buf.unlock()
		sum, _, err := chunkedMSM(cd, &r.g2, st.ptr(l.wb), r.plan.ChunkPoints, &st.dk.chunkG2,
			func(points, scalars cuda.Ptr, n int) (curve.G2Jac, cuda.MSMStats, error) {
				return cd.MSMG2WithStats(points, scalars, n, cuda.Montgomery, opt, s)
			}, addG2)
		if err != nil {
			return fmt.Errorf("gpu compute: g2 msm B of %d points: %w", r.g2.n, err)
		}
		out.B2 = &sum
		return nil
	}
	if b.bg2 && b.g2Beside {
		// The B wires are on the device since staging synced its stream,
		// and nothing below writes them: the G2 MSM can start now. It is
		// waited for on every return, as the buffer it reads may be freed
		// after Compute.
		s2, err := cd.NewStream()
		if err != nil {
			return nil, fmt.Errorf("gpu compute: second stream: %w", err)
		}
		done := make(chan error, 1)
		go func() { done <- g2(s2, &st.dk.scratchG2) }()
		// Left to right: the G1 work, then the wait for the G2 MSM.
		if err := errors.Join(b.computeG1(ctx, st, &out, wires), <-done, cd.DestroyStream(s2)); err != nil {
			return nil, err
		}
		return &out, nil
	}
	if err := b.computeG1(ctx, st, &out, wires); err != nil {
		return nil, err
	}
	if b.bg2 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := g2(st.s, &st.dk.scratch); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// computeG1 runs H and the four G1 MSMs on the partition's stream into out,
// in the device's scratch buffer, which it holds until the stream has run
// them.
func (b *Backend) computeG1(ctx context.Context, st *staged, out *prover.Computed, wires cuda.MSMOptions) (err error) {
	cd, l, dom, r := st.dk.cd, st.l, st.dom, st.res
	a, bb, c := st.ptr(l.a), st.ptr(l.b), st.ptr(l.c)
	scratch := st.dk.scratch.lock()
	defer func() {
		if err != nil {
			// An NTT returns once queued: nothing may still use the
			// scratch when another partition takes it.
			err = errors.Join(err, cd.StreamSync(st.s))
		}
		st.dk.scratch.unlock()
	}()
	wires.Scratch = scratch
	// H = (A·B − C)/Z as prover.ComputeH: interpolate, evaluate on the coset,
	// divide pointwise, interpolate back. All in place, ordered on the stream.
	steps := []struct {
		name string
		run  func() error
	}{
		{"intt a", func() error { return dom.NTTIn(a, scratch, true, false, st.s) }},
		{"intt b", func() error { return dom.NTTIn(bb, scratch, true, false, st.s) }},
		{"intt c", func() error { return dom.NTTIn(c, scratch, true, false, st.s) }},
		{"coset ntt a", func() error { return dom.NTTIn(a, scratch, false, true, st.s) }},
		{"coset ntt b", func() error { return dom.NTTIn(bb, scratch, false, true, st.s) }},
		{"coset ntt c", func() error { return dom.NTTIn(c, scratch, false, true, st.s) }},
		{"quotient", func() error { return dom.GrothH(a, bb, c, st.s) }},
		{"coset intt h", func() error { return dom.NTTIn(a, scratch, true, true, st.s) }},
	}
	for _, step := range steps {
		if err := step.run(); err != nil {
			return fmt.Errorf("gpu compute: %s: %w", step.name, err)
		}
	}
	for _, m := range []struct {
		name    string
		dst     *curve.G1Jac
		points  *pointSet
		scalars cuda.Ptr
		opt     cuda.MSMOptions
	}{
		// H stays on the device for Z. deg H = n−2: its last coefficient is
		// zero and Z has n−1 points.
		{"Z", &out.Z, &r.z, a, cuda.MSMOptions{Scratch: scratch}},
		{"A", &out.A, &r.a, st.ptr(l.wa), wires},
		{"B1", &out.B1, &r.b, st.ptr(l.wb), wires},
		{"K", &out.K, &r.k, st.ptr(l.wk), wires},
	} {
		if err := ctx.Err(); err != nil {
			return err
		}
		opt := m.opt
		sum, stats, err := chunkedMSM(cd, m.points, m.scalars, r.plan.ChunkPoints, &st.dk.chunkG1,
			func(points, scalars cuda.Ptr, n int) (curve.G1Jac, cuda.MSMStats, error) {
				return cd.MSMWithStats(points, scalars, n, cuda.Montgomery, opt, st.s)
			}, addG1)
		if err != nil {
			return fmt.Errorf("gpu compute: msm %s of %d points: %w", m.name, m.points.n, err)
		}
		*m.dst = sum
		if m.opt.Split {
			b.count(stats)
		}
	}
	return nil
}

func (b *Backend) count(s cuda.MSMStats) {
	b.zero.Add(int64(s.Zero))
	b.one.Add(int64(s.One))
	b.other.Add(int64(s.Other))
}

// SplitStats counts the wire scalars the split MSMs have seen: zeros
// (dropped), ones (summed by batch additions) and the others (Pippenger).
func (b *Backend) SplitStats() (zero, one, other int64) {
	return b.zero.Load(), b.one.Load(), b.other.Load()
}
