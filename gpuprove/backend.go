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
// The MSMs of gnark's commitments run on the device too, called from
// synthesis and finalize (prover.CommitmentMSMer), against bases placed with
// the key set and without a lease of the lock design (commit.go).
package gpuprove

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

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
	// ahead: compact partitions stage a alone and compute copies each
	// further vector beside kernels that do not read its place (unless
	// BackendOptions.CopiesInOrder).
	ahead  bool
	pinned *pinnedPool // staging buffers; nil: Go memory

	zero, one, other atomic.Int64 // wire scalars seen by split MSMs
	commitMSMs       atomic.Int64 // commitment MSMs computed (CommitmentMSMs)
	stagedAlone      atomic.Int64 // whole-layout partitions staged with a alone

	mu       sync.Mutex
	rr       int // next device for calls that come without a placement
	commitRR int // next device for a commitment MSM of a key set placed nowhere
}

var (
	_ prover.Backend     = (*Backend)(nil)
	_ prover.KeyPlacer   = (*Backend)(nil)
	_ prover.Footprinter = (*Backend)(nil)
	_ prover.BG2Computer = (*Backend)(nil)
	_ prover.StagedSizer = (*Backend)(nil)
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
	// streamed from the host, or from disk beyond KeysHostLimit), or one of
	// TierDevice, TierPinned, TierHost, TierDisk.
	KeyTier string
	// KeysPinnedLimit bounds the pinned host memory of streamed keys (and
	// of the disk tier's staging); a key set beyond it streams from the Go
	// heap. Zero is DefaultKeysPinnedLimit; negative pins none.
	KeysPinnedLimit int64
	// KeysHostLimit bounds the host memory, pinned or not, that placing key
	// sets' points may take: a pinned copy, or points read from the points
	// file into the Go heap. Keys loaded without their points
	// (prover.LoadOptions.PointsOnDisk) beyond it stream from disk
	// (TierDisk); points in memory already take nothing more to stream from
	// the heap. Zero is no limit; negative is none.
	KeysHostLimit int64
	// PartitionsBeside is how many partitions' buffers the plan keeps room
	// for beside each key set (at least one). Zero is 2: one computing, one
	// staging.
	PartitionsBeside int
	// ChunkPoints, when not zero, is the most points one MSM call sees (a
	// power of two); zero lets the plan choose.
	ChunkPoints int
	// Layout is the partitions' layout on the device: "" or "auto" (the
	// plan's choice: whole when it fits, else compact), LayoutWhole or
	// LayoutCompact.
	Layout string
	// NTTInPlace runs the NTTs in place (a bit-reversal pass instead of a
	// scratch vector) whatever the plan would choose.
	NTTInPlace bool
	// MSMTables: "" or "auto" gives resident G1 point sets precomputed MSM
	// tables (Plan.MSMTables) when the MSMs are whole and the tables fit
	// beside PartitionsBeside partitions, the most copies that fit of one
	// per window, 6 and 3; "off" never does.
	MSMTables string
	// CopiesInOrder copies a compact partition's vectors in order on the
	// partition's stream, between the kernels: Stage copies a and b, and
	// Compute c and the wires. By default (the copies ahead) Stage copies a
	// alone, and Compute copies b and each wire vector on a copy stream of
	// its own once what read the vector's place has run, beside the kernels
	// that do not read it (b beside a's NTTs, the A wires beside H's
	// inverse NTT, the rest beside the MSMs): at porep-sha's 2^27 under
	// 16 GiB, 26.95 s a 10-partition job against 29.55 s in order
	// (docs/benchmarks.md). CUZK_COPIES_AHEAD=off in the environment sets
	// it too.
	CopiesInOrder bool
}

// CheckMSMTables says whether v is an MSMTables setting.
func CheckMSMTables(v string) error {
	switch v {
	case "", "auto", "off":
		return nil
	}
	return fmt.Errorf("want auto or off")
}

// DefaultKeysPinnedLimit is the pinned host memory streamed keys may take
// by default.
const DefaultKeysPinnedLimit = 64 << 30

// DefaultPinnedLimit is the pinned staging memory a backend keeps by default.
const DefaultPinnedLimit = 32 << 30

// CheckKeyTier says whether tier names a key tier: "" or "auto" (the
// planner's choice), TierDevice, TierPinned, TierHost or TierDisk.
func CheckKeyTier(tier string) error {
	switch tier {
	case "", "auto", TierDevice, TierPinned, TierHost, TierDisk:
		return nil
	}
	return fmt.Errorf("want auto, %s, %s, %s or %s", TierDevice, TierPinned, TierHost, TierDisk)
}

// NewBackend returns a backend on the given devices.
func NewBackend(devices []*cuda.Device, opt BackendOptions) (*Backend, error) {
	if len(devices) == 0 {
		return nil, errors.New("gpu backend: no devices")
	}
	if err := CheckKeyTier(opt.KeyTier); err != nil {
		return nil, fmt.Errorf("gpu backend: key tier %q: %w", opt.KeyTier, err)
	}
	if c := opt.ChunkPoints; c < 0 || c&(c-1) != 0 {
		return nil, fmt.Errorf("gpu backend: chunk of %d points: want a power of two", c)
	}
	switch opt.Layout {
	case "", "auto", LayoutWhole, LayoutCompact:
	default:
		return nil, fmt.Errorf("gpu backend: layout %q: want auto, %s or %s", opt.Layout, LayoutWhole, LayoutCompact)
	}
	if err := CheckMSMTables(opt.MSMTables); err != nil {
		return nil, fmt.Errorf("gpu backend: MSM tables %q: %w", opt.MSMTables, err)
	}
	b := &Backend{devs: map[int]*deviceKeys{}, bg2: opt.BG2, split: !opt.NoSplit, g2Beside: opt.BG2 && !opt.SerialG2,
		ahead: !opt.CopiesInOrder && os.Getenv("CUZK_COPIES_AHEAD") != "off"}
	po := planOptions{tier: opt.KeyTier, beside: cmp.Or(opt.PartitionsBeside, 2), chunkPoints: opt.ChunkPoints,
		layout: opt.Layout, nttInPlace: opt.NTTInPlace, tables: cmp.Or(opt.MSMTables, "auto")}
	pinnedKeys := &budget{max: cmp.Or(opt.KeysPinnedLimit, DefaultKeysPinnedLimit)}
	hostKeys := &budget{max: cmp.Or(opt.KeysHostLimit, unlimited)}
	if opt.PinnedLimit >= 0 {
		b.pinned = newPinnedPool(devices[0], cmp.Or(opt.PinnedLimit, DefaultPinnedLimit))
	}
	for _, d := range devices {
		if _, dup := b.devs[d.Index()]; dup {
			return nil, fmt.Errorf("gpu backend: device %d given twice", d.Index())
		}
		dk, err := newDeviceKeys(d, opt.BG2, b.g2Beside, b.split, po, pinnedKeys, hostKeys)
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
	if r, placed := dk.placed(k); placed {
		return r.plan, nil
	}
	return dk.plan(k)
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

// PinKeys moves keys' A, B, K and G2 B points into pinned host memory of
// the backend's first device (prover.Keys.PinPoints), for keys that live as
// long as the process: a plan that streams them from pinned memory then uses
// them where they are, with no second copy (at 2^26 porep-sha's are 22 GiB).
// The memory is never freed.
func (b *Backend) PinKeys(k *prover.Keys) error {
	if len(b.order) == 0 {
		return fmt.Errorf("pin keys: no device")
	}
	cd := b.devs[b.order[0]].cd
	return k.PinPoints(func(bytes int64) (unsafe.Pointer, error) {
		h, err := cd.HostAlloc(bytes)
		if err != nil {
			return nil, err
		}
		return h.Pointer(), nil
	})
}

// PinKeysIfStreamed is PinKeys where the plan on the first device streams
// k's points from pinned memory (and they are in memory, not moved yet); it
// says whether it moved them.
func (b *Backend) PinKeysIfStreamed(k *prover.Keys) (bool, error) {
	if len(b.order) == 0 || !k.PointsInMemory() || k.PointsPinned() {
		return false, nil
	}
	p, err := b.Plan(b.order[0], k)
	if err != nil || p.Tier != TierPinned {
		return false, nil
	}
	return true, b.PinKeys(k)
}

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
// boundary: a, b, c (the domain) and the A, B, K wire vectors, the B wires
// at the A wires' place when they are the same vector (shared); or,
// compact, two vectors (vec bytes each, a and b at first) that compute
// refills.
type layout struct {
	n, na, nb, nk       int
	a, b, c, wa, wb, wk int64 // offsets (compact: a and b only)
	total               int64
	compact             bool
	vec                 int64 // compact: bytes of each of the two vectors
	// nw > 0: a host layout that holds all the wires' values at w, the K
	// wires being their tail past the public ones (wk inside it): the
	// solver writes them there (hostLayout).
	w  int64
	nw int
}

func newLayout(n, na, nb, nk int, shared bool) layout {
	l := layout{n: n, na: na, nb: nb, nk: nk}
	off := int64(0)
	place := func(elems int) int64 {
		at := off
		off += (int64(elems)*scalarBytes + 255) &^ 255
		return at
	}
	l.a, l.b, l.c = place(n), place(n), place(n)
	l.wa = place(na)
	if l.wb = l.wa; !shared || nb != na {
		l.wb = place(nb)
	}
	l.wk = place(nk)
	l.total = max(off, 256)
	return l
}

// oneWireVector says whether l holds the A and B wires as one vector (the B
// wires at the A wires' place): not merely two empty vectors at one offset.
func (l layout) oneWireVector() bool { return l.wb == l.wa && l.na == l.nb }

// newCompactLayout is LayoutCompact's: two vectors, each large enough for the
// domain and for every wire vector.
func newCompactLayout(n, na, nb, nk int) layout {
	vec := (int64(max(n, na, nb, nk, 1))*scalarBytes + 255) &^ 255
	return layout{n: n, na: na, nb: nb, nk: nk, a: 0, b: vec, total: 2 * vec, compact: true, vec: vec}
}

// keyLayout is the whole layout of k's partitions: the device's, and always
// the host's (the prepared vectors, pinned or not).
func keyLayout(k *prover.Keys) layout {
	c := k.Counts()
	return newLayout(int(k.PK.Domain.Cardinality), c.A, c.B, c.K, k.SharedWires())
}

// hostLayout is the layout of k's partitions in pinned host memory: the
// device's whole layout, or, where the keys' K points are every private
// wire's (no commitments), one in which the K wires are the tail of all the
// wires' values, which the solver writes there (prover.WireMemory): the
// solution then holds no wire vector of its own (2.9 GiB a partition at
// porep-sha's 2^27).
func hostLayout(k *prover.Keys) layout {
	c := k.Counts()
	n, wires, pub := int(k.PK.Domain.Cardinality), len(k.PK.InfinityA), k.CS.GetNbPublicVariables()
	if len(k.PK.CommitmentKeys) > 0 || c.K != wires-pub || pub < 1 {
		return keyLayout(k)
	}
	l := newLayout(n, c.A, c.B, 0, k.SharedWires())
	l.w, l.nw, l.nk = l.wk, wires, c.K
	l.wk = l.w + int64(pub)*scalarBytes
	l.total = max(l.w+(int64(wires)*scalarBytes+255)&^255, 256)
	return l
}

func compactLayout(k *prover.Keys) layout {
	c := k.Counts()
	return newCompactLayout(int(k.PK.Domain.Cardinality), c.A, c.B, c.K)
}

// Footprint is the device buffer one partition of k needs in the layout of
// its plan: the plan of a device the key is placed on, else the plan it would
// get on the first device now. MSM scratch and the key are counted once per
// device (Reserved), since only the compute lock's holder runs MSMs.
func (b *Backend) Footprint(k *prover.Keys) int64 {
	for _, i := range b.order {
		if r, placed := b.devs[i].placed(k); placed && r.plan.Partition > 0 {
			return r.plan.Partition
		}
	}
	if len(b.order) > 0 {
		if p, err := b.Plan(b.order[0], k); err == nil && p.Partition > 0 {
			return p.Partition
		}
	}
	return keyLayout(k).total
}

// StagedBytes implements prover.StagedSizer: what Stage copies of one
// partition of k. The whole layout is copied at stage; a compact partition
// stages a and b (a alone with the copies ahead), and Compute copies c and
// the wires itself. A whole-layout partition staged while nothing computes
// on the device copies a alone (stagesAlone); the figure is the whole
// layout's, what every partition but a job's first copies.
func (b *Backend) StagedBytes(k *prover.Keys) int64 { return stagedBytes(k, b.Footprint(k), b.ahead) }

// stagedBytes is what Stage copies of a partition of k whose device buffer
// has footprint bytes (smaller than the whole layout: compact).
func stagedBytes(k *prover.Keys, footprint int64, ahead bool) int64 {
	whole := keyLayout(k)
	if footprint >= whole.total {
		return whole.total
	}
	if ahead {
		return int64(whole.n) * scalarBytes
	}
	return 2 * int64(whole.n) * scalarBytes
}

// staged is a partition on the device.
type staged struct {
	dk        *deviceKeys
	res       *resident
	dom       *cuda.Domain
	s         cuda.Stream
	base      cuda.Ptr
	l         layout           // on the device
	host      layout           // of the prepared vectors (the whole layout)
	prep      *prover.Prepared // the host vectors: a compact layout's compute copies from them
	ahead     bool             // compact, a staged alone: compute copies the rest ahead (Backend.ahead)
	alone     bool             // whole, a staged alone: compute copies the rest ahead (stagesAlone)
	copied    int64            // bytes Stage copied
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
	host := hostLayout(k)
	if len(p.A) != host.n || len(p.B) != host.n || len(p.C) != host.n {
		return nil, fmt.Errorf("gpu stage: a, b, c of %d, %d, %d elements for a domain of %d", len(p.A), len(p.B), len(p.C), host.n)
	}
	if len(p.WiresA) != host.na || len(p.WiresB) != host.nb || len(p.WiresK) != host.nk {
		return nil, fmt.Errorf("gpu stage: wire vectors of %d, %d, %d for %d, %d, %d key points: keys are for another circuit",
			len(p.WiresA), len(p.WiresB), len(p.WiresK), host.na, host.nb, host.nk)
	}
	st := &staged{host: host, prep: p}
	if pl != nil && pl.Device != nil {
		dk, ok := b.devs[pl.Device.index]
		if !ok {
			return nil, fmt.Errorf("gpu stage: device %d is not one of the backend's", pl.Device.index)
		}
		st.dk, st.s = dk, pl.Stream
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
	// The device layout is the plan's; a design's buffer that the whole
	// layout would overflow takes the compact one if it can. The host's may
	// differ from the whole one (hostLayout): then each vector is copied.
	st.l = keyLayout(k)
	if st.res.plan.Layout == LayoutCompact || (pl != nil && pl.Buffer != 0 && pl.Bytes < st.l.total) {
		st.l = compactLayout(k)
	}
	if pl != nil && pl.Buffer != 0 {
		if pl.Bytes < st.l.total {
			st.Release()
			return nil, fmt.Errorf("gpu stage: the design's buffer has %d bytes, the partition needs %d", pl.Bytes, st.l.total)
		}
		st.base = pl.Buffer
	}
	if st.base == 0 {
		if st.base, err = cd.MallocAsync(st.l.total, st.s); err != nil {
			st.Release()
			return nil, fmt.Errorf("gpu stage: %w", err)
		}
		st.ownBuf = true
	}
	if err := b.stageCopies(st, p); err != nil {
		st.Release()
		return nil, fmt.Errorf("gpu stage: %w", err)
	}
	return st, nil
}

// stageCopies copies the part of p that Stage copies into st's buffer, on
// st's stream, and waits for it: from a pinned buffer in the device's
// layout in one copy, else vector by vector; everything but what Compute
// copies itself (a compact layout's rest, or a whole one's when a is
// staged alone: stagesAlone).
func (b *Backend) stageCopies(st *staged, p *prover.Prepared) error {
	cd := st.dk.cd
	m, pinned := p.Memory.(*pinnedPrep)
	pinned = pinned && m.l == st.host
	if st.alone = b.stagesAlone(st, pinned); st.alone {
		b.stagedAlone.Add(1)
	}
	if pinned && st.host == st.l {
		// Prepared in pinned memory in the device buffer's layout: one copy,
		// of a alone when compute brings the rest.
		bytes := st.host.total
		if st.alone {
			bytes = st.host.b
		}
		if err := cd.CopyInAsync(st.base, m.h, 0, bytes, st.s); err != nil {
			return fmt.Errorf("copy: %w", err)
		}
		if err := cd.StreamSync(st.s); err != nil {
			return fmt.Errorf("copy: %w", err)
		}
		st.copied = bytes
		return nil
	}
	vectors := []hostVector{vecA, vecB, vecC, vecWiresA, vecWiresB, vecWiresK}
	if st.alone {
		vectors = vectors[:1]
	}
	if st.l.compact {
		vectors = vectors[:2] // compute brings the rest
		if b.ahead {
			vectors, st.ahead = vectors[:1], true // and b, beside a's NTTs
		}
	}
	var err error
	if st.copied, err = st.copyVectors(vectors, st.s); err != nil {
		return err
	}
	if err := cd.StreamSync(st.s); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	return nil
}

// stagesAlone says whether st, in the whole layout, stages a alone and
// leaves b, c and the wires to Compute, which copies them on a copy stream
// beside a's and b's NTTs (restAhead): when the copies ahead are on, the
// vectors are in pinned memory (asynchronous copies) and nothing computes
// on the device. The GPU then waits for this partition: at porep-sha's 2^22
// the whole layout's 600 MB took 11 ms to copy, a's 134 MB 2.5 ms, and two
// NTTs of a take longer than b's copy, two of b than c's. While another
// partition computes, Stage copies everything beside it, as before.
func (b *Backend) stagesAlone(st *staged, pinned bool) bool {
	return b.ahead && pinned && !st.l.compact && st.dk.computing.Load() == 0
}

// restAhead is the copies of a partition staged with a alone (staged.alone):
// b, c and the wires on a copy stream, each followed by an event that the
// steps reading it wait for.
type restAhead struct {
	cd   *cuda.Device
	cs   cuda.Stream
	ev   []cuda.Event // after b, after c, after the wires
	made bool
}

const (
	restB = iota
	restC
	restWires
)

// copyRest issues the rest's copies; the caller closes what it returns,
// which waits for them.
func (st *staged) copyRest() (r *restAhead, err error) {
	cd := st.dk.cd
	r = &restAhead{cd: cd}
	if r.cs, err = cd.NewStream(); err != nil {
		return nil, fmt.Errorf("copy stream: %w", err)
	}
	r.made = true
	defer func() {
		if err != nil {
			err = errors.Join(err, r.close())
		}
	}()
	for _, group := range [][]hostVector{{vecB}, {vecC}, {vecWiresA, vecWiresB, vecWiresK}} {
		if _, err := st.copyVectors(group, r.cs); err != nil {
			return nil, err
		}
		e, err := cd.NewEvent()
		if err != nil {
			return nil, err
		}
		r.ev = append(r.ev, e)
		if err := cd.RecordEvent(e, r.cs); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// wait waits for copy i (restB, restC, restWires); nil waits for none.
func (r *restAhead) wait(i int) error {
	if r == nil {
		return nil
	}
	return r.cd.EventSync(r.ev[i])
}

// close waits for the copies and releases the stream and events; nil
// closes nothing.
func (r *restAhead) close() error {
	if r == nil || !r.made {
		return nil
	}
	r.made = false
	err := r.cd.StreamSync(r.cs)
	for _, e := range r.ev {
		err = errors.Join(err, r.cd.DestroyEvent(e))
	}
	return errors.Join(err, r.cd.DestroyStream(r.cs))
}

// hostVector names one of a prepared partition's six vectors.
type hostVector int

const (
	vecA hostVector = iota
	vecB
	vecC
	vecWiresA
	vecWiresB
	vecWiresK
)

var vectorNames = [...]string{"a", "b", "c", "wires A", "wires B", "wires K"}

// offset is v's place in layout l (the whole layout: every vector has one).
func (v hostVector) offset(l layout) int64 {
	return [...]int64{l.a, l.b, l.c, l.wa, l.wb, l.wk}[v]
}

func (v hostVector) of(p *prover.Prepared) []fr.Element {
	return [...][]fr.Element{p.A, p.B, p.C, p.WiresA, p.WiresB, p.WiresK}[v]
}

// copyVectors copies the partition's vectors vs to their places in its
// layout on stream on, the B wires not where they are the A wires' vector,
// and returns the bytes it copied.
func (s *staged) copyVectors(vs []hostVector, on cuda.Stream) (int64, error) {
	var bytes int64
	for _, v := range vs {
		if v == vecWiresB && s.l.oneWireVector() {
			continue // the A wires' copy
		}
		if err := s.copyInOn(v, s.ptr(v.offset(s.l)), on); err != nil {
			return bytes, err
		}
		bytes += int64(len(v.of(s.prep))) * scalarBytes
	}
	return bytes, nil
}

// copyIn copies host vector v of the partition to dst on the partition's
// stream: from the pinned buffer it was prepared in (asynchronous), else from
// Go memory.
func (s *staged) copyIn(v hostVector, dst cuda.Ptr) error { return s.copyInOn(v, dst, s.s) }

// copyInOn is copyIn on stream cs.
func (s *staged) copyInOn(v hostVector, dst cuda.Ptr, cs cuda.Stream) error {
	cd, elems := s.dk.cd, v.of(s.prep)
	if m, ok := s.prep.Memory.(*pinnedPrep); ok && m.l == s.host {
		if err := cd.CopyInAsync(dst, m.h, v.offset(s.host), int64(len(elems))*scalarBytes, cs); err != nil {
			return fmt.Errorf("copy %s: %w", vectorNames[v], err)
		}
		return nil
	}
	if err := cuda.CopyIn(cd, dst, elems, cs); err != nil {
		return fmt.Errorf("copy %s: %w", vectorNames[v], err)
	}
	return nil
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
	st.dk.computing.Add(1)
	defer st.dk.computing.Add(-1)
	var out prover.Computed
	// H's coefficients are random: only the wire MSMs are split.
	wires := cuda.MSMOptions{Split: b.split}
	if l.compact {
		if err := b.computeCompact(ctx, st, &out, wires); err != nil {
			return nil, err
		}
		return &out, nil
	}
	var rest *restAhead
	if st.alone {
		var err error
		if rest, err = st.copyRest(); err != nil {
			return nil, fmt.Errorf("gpu compute: %w", err)
		}
	}
	if b.bg2 && b.g2Beside {
		// Once the B wires are on the device (staged, or copied ahead) the
		// G2 MSM can start: nothing below writes them. It is waited for on
		// every return, as the buffer it reads may be freed after Compute.
		s2, err := cd.NewStream()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("gpu compute: second stream: %w", err), rest.close())
		}
		var done chan error
		startG2 := func() {
			done = make(chan error, 1)
			go func() { done <- b.g2MSMIn(&st.dk.scratchG2, st, st.ptr(l.wb), s2, &out) }()
		}
		// Left to right: the G1 work, then the wait for the G2 MSM.
		err = b.computeG1(ctx, st, &out, wires, rest, startG2)
		if done != nil {
			err = errors.Join(err, <-done)
		}
		if err := errors.Join(err, cd.DestroyStream(s2), rest.close()); err != nil {
			return nil, err
		}
		return &out, nil
	}
	if err := errors.Join(b.computeG1(ctx, st, &out, wires, rest, nil), rest.close()); err != nil {
		return nil, err
	}
	if b.bg2 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := b.g2MSMIn(&st.dk.scratch, st, st.ptr(l.wb), st.s, &out); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// g2MSMIn is g2MSM in the scratch of buf, whose lock it holds meanwhile.
func (b *Backend) g2MSMIn(buf *scratchBuf, st *staged, bw cuda.Ptr, s cuda.Stream, out *prover.Computed) error {
	scratch := buf.lock()
	defer buf.unlock()
	return b.g2MSM(st, bw, s, scratch, out)
}

// g2MSM runs b_g2's G2 MSM over the B wires at bw on stream s into out.B2,
// in scratch. The MSM calls return with their stream drained.
func (b *Backend) g2MSM(st *staged, bw cuda.Ptr, s cuda.Stream, scratch cuda.Scratch, out *prover.Computed) error {
	cd, r := st.dk.cd, st.res
	opt := cuda.MSMOptions{Split: b.split, Scratch: scratch}
	sum, _, err := chunkedMSM(cd, &r.g2, bw, r.plan.ChunkPoints, &st.dk.chunkG2,
		func(points, scalars cuda.Ptr, n int) (curve.G2Jac, cuda.MSMStats, error) {
			return cd.MSMG2WithStats(points, scalars, n, cuda.Montgomery, opt, s)
		}, addG2)
	if err != nil {
		return fmt.Errorf("gpu compute: g2 msm B of %d points: %w", r.g2.n, err)
	}
	out.B2 = &sum
	return nil
}

// g1MSM sums one of the partition's G1 MSMs (points against the scalars at
// scalars, on the partition's stream) into dst.
func (b *Backend) g1MSM(ctx context.Context, st *staged, name string, dst *curve.G1Jac, points *pointSet, scalars cuda.Ptr, opt cuda.MSMOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cd := st.dk.cd
	if points.table.Copies > 1 {
		opt = points.table.Options(opt)
	}
	sum, stats, err := chunkedMSM(cd, points, scalars, st.res.plan.ChunkPoints, &st.dk.chunkG1,
		func(points, scalars cuda.Ptr, n int) (curve.G1Jac, cuda.MSMStats, error) {
			return cd.MSMWithStats(points, scalars, n, cuda.Montgomery, opt, st.s)
		}, addG1)
	if err != nil {
		return fmt.Errorf("gpu compute: msm %s of %d points: %w", name, points.n, err)
	}
	*dst = sum
	if opt.Split {
		b.count(stats)
	}
	return nil
}

type step struct {
	name string
	run  func() error
}

func runSteps(steps []step) error {
	for _, s := range steps {
		if err := s.run(); err != nil {
			return fmt.Errorf("gpu compute: %s: %w", s.name, err)
		}
	}
	return nil
}

// nttScratch is the scratch the partition's NTTs take: none when the plan
// runs them in place.
func (st *staged) nttScratch(scratch cuda.Scratch) cuda.Scratch {
	if st.res.plan.NTTInPlace {
		return cuda.Scratch{}
	}
	return scratch
}

// computeG1 runs H and the four G1 MSMs on the partition's stream into out,
// in the device's scratch buffer, which it holds until the stream has run
// them. With rest (a staged alone), each vector's steps wait for its copy
// ahead. startG2, if not nil, is called once the B wires are on the device:
// at once, or after their copy.
func (b *Backend) computeG1(ctx context.Context, st *staged, out *prover.Computed, wires cuda.MSMOptions, rest *restAhead, startG2 func()) (err error) {
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
	ntt := st.nttScratch(scratch)
	if startG2 != nil && rest == nil {
		startG2()
	}
	// H = (A·B − C)/Z as prover.ComputeH: interpolate, evaluate on the coset,
	// divide pointwise, interpolate back. All in place, ordered on the
	// stream, a vector at a time, each after its copy ahead.
	if err := runSteps([]step{
		{"intt a", func() error { return dom.NTTIn(a, ntt, true, false, st.s) }},
		{"coset ntt a", func() error { return dom.NTTIn(a, ntt, false, true, st.s) }},
		{"wait for b", func() error { return rest.wait(restB) }},
		{"intt b", func() error { return dom.NTTIn(bb, ntt, true, false, st.s) }},
		{"coset ntt b", func() error { return dom.NTTIn(bb, ntt, false, true, st.s) }},
		{"wait for c", func() error { return rest.wait(restC) }},
		{"intt c", func() error { return dom.NTTIn(c, ntt, true, false, st.s) }},
		{"coset ntt c", func() error { return dom.NTTIn(c, ntt, false, true, st.s) }},
		{"quotient", func() error { return dom.GrothH(a, bb, c, st.s) }},
		{"coset intt h", func() error { return dom.NTTIn(a, ntt, true, true, st.s) }},
		{"wait for the wires", func() error {
			if rest == nil {
				return nil
			}
			if err := rest.wait(restWires); err != nil {
				return err
			}
			if startG2 != nil {
				startG2()
			}
			return nil
		}},
	}); err != nil {
		return err
	}
	// H stays on the device for Z. deg H = n−2: its last coefficient is
	// zero and Z has n−1 points.
	return runSteps([]step{
		{"Z", func() error { return b.g1MSM(ctx, st, "Z", &out.Z, &r.z, a, cuda.MSMOptions{Scratch: scratch}) }},
		{"A", func() error { return b.g1MSM(ctx, st, "A", &out.A, &r.a, st.ptr(l.wa), wires) }},
		{"B1", func() error { return b.g1MSM(ctx, st, "B1", &out.B1, &r.b, st.ptr(l.wb), wires) }},
		{"K", func() error { return b.g1MSM(ctx, st, "K", &out.K, &r.k, st.ptr(l.wk), wires) }},
	})
}

// computeCompact is Compute for the compact layout: two vectors v0 and v1
// on the device, a (and b, unless copied ahead) staged in them. A copy into
// a vector is made only once the kernels before it that read the vector
// have run:
//
//	v0: a → A's coset values → A·B → H (Z's MSM) → B wires (B₁, b_g2), or
//	    with the A and B wires one vector, the K wires
//	v1: b → B's coset values → c → C's coset values → A wires (A, and with
//	    the wires one vector B₁ and b_g2) → K wires
//
// In order, every copy is on the partition's stream between the kernels.
// Ahead (staged.ahead), each copy but c's is issued on a copy stream once
// the partition's stream has run what read its place, and the kernels that
// follow and do not read it run meanwhile: b beside a's NTTs, the A wires
// beside H's inverse NTT (and Z's MSM unless the wires are one vector), the
// B wires beside A's MSM and the K wires beside B₁'s (beside A's and B₁'s
// with the wires one vector); the step that reads a vector waits for its
// copy. At porep-sha's 2^27 each copy is about 60 ms on the partition's
// stream, b's 80 ms.
//
// The G2 MSM, beside the G1 work in the whole layout, starts here once the B
// wires are on the device, on a second stream with its own scratch: with the
// wires one vector, beside Z's MSM.
func (b *Backend) computeCompact(ctx context.Context, st *staged, out *prover.Computed, wires cuda.MSMOptions) (err error) {
	cd, dom, r := st.dk.cd, st.dom, st.res
	v0, v1 := st.ptr(0), st.ptr(st.l.vec)
	ahead, shared := st.ahead, st.host.oneWireVector()
	scratch := st.dk.scratch.lock()
	var s2, cs cuda.Stream
	var g2done chan error
	defer func() {
		if g2done != nil {
			err = errors.Join(err, <-g2done, cd.DestroyStream(s2))
		}
		if cs != 0 {
			err = errors.Join(err, cd.StreamSync(cs), cd.DestroyStream(cs))
		}
		if err != nil {
			err = errors.Join(err, cd.StreamSync(st.s))
		}
		st.dk.scratch.unlock()
	}()
	if ahead {
		if cs, err = cd.NewStream(); err != nil {
			return fmt.Errorf("gpu compute: copy stream: %w", err)
		}
	}
	// copyTo copies host vector v into dst: in order on the partition's
	// stream, or ahead on the copy stream once the partition's stream has
	// run the kernels issued before it (those that read dst).
	copyTo := func(v hostVector, dst cuda.Ptr) step {
		return step{"stage " + vectorNames[v], func() error {
			if !ahead {
				return st.copyIn(v, dst)
			}
			if err := cd.StreamSync(st.s); err != nil {
				return err
			}
			return st.copyInOn(v, dst, cs)
		}}
	}
	// waitFor makes the steps after it wait for the copy ahead of v.
	waitFor := func(v hostVector) step {
		return step{"wait for " + vectorNames[v], func() error {
			if !ahead {
				return nil
			}
			return cd.StreamSync(cs)
		}}
	}
	// startG2 starts b_g2's G2 MSM beside the G1 work once the B wires at
	// bw are on the device (the partition's stream has run their copy).
	startG2 := func(bw cuda.Ptr) step {
		return step{"start b_g2", func() error {
			if err := cd.StreamSync(st.s); err != nil {
				return err
			}
			var err error
			if s2, err = cd.NewStream(); err != nil {
				return fmt.Errorf("second stream: %w", err)
			}
			g2done = make(chan error, 1)
			go func() { g2done <- b.g2MSMIn(&st.dk.scratchG2, st, bw, s2, out) }()
			return nil
		}}
	}
	msm := func(name string, dst *curve.G1Jac, points *pointSet, scalars cuda.Ptr) step {
		return step{name, func() error { return b.g1MSM(ctx, st, name, dst, points, scalars, wires) }}
	}
	wires.Scratch = scratch
	ntt := st.nttScratch(scratch)
	nttOf := func(name string, v cuda.Ptr, inverse, coset bool) step {
		return step{name, func() error { return dom.NTTIn(v, ntt, inverse, coset, st.s) }}
	}
	var steps []step
	if ahead {
		steps = append(steps, copyTo(vecB, v1))
	}
	steps = append(steps,
		nttOf("intt a", v0, true, false),
		nttOf("coset ntt a", v0, false, true),
		waitFor(vecB),
		nttOf("intt b", v1, true, false),
		nttOf("coset ntt b", v1, false, true),
		step{"a·b", func() error { return dom.GrothMul(v0, v1, st.s) }},
		step{"stage c", func() error { return st.copyIn(vecC, v1) }},
		nttOf("intt c", v1, true, false),
		nttOf("coset ntt c", v1, false, true),
		step{"quotient", func() error { return dom.GrothSubDiv(v0, v1, st.s) }},
	)
	// H stays in v0 for Z's MSM. deg H = n−2: its last coefficient is zero
	// and Z has n−1 points.
	hInverse := nttOf("coset intt h", v0, true, true)
	z := step{"Z", func() error { return b.g1MSM(ctx, st, "Z", &out.Z, &r.z, v0, cuda.MSMOptions{Scratch: scratch}) }}
	g2Beside, g2Serial := b.bg2 && b.g2Beside, b.bg2 && !b.g2Beside
	g2 := func(bw cuda.Ptr) step {
		return step{"b_g2", func() error { return b.g2MSM(st, bw, st.s, scratch, out) }}
	}
	if shared {
		// The B wires are the A wires, in v1: the G2 MSM starts once they
		// are there, beside Z's MSM (random scalars: the device's compute,
		// where the G2 MSM of 0/1 scalars is mostly its points' copies).
		// The K wires go into v0 once Z's MSM has read H.
		if ahead {
			steps = append(steps, copyTo(vecWiresA, v1), hInverse, waitFor(vecWiresA))
		} else {
			steps = append(steps, hInverse, copyTo(vecWiresA, v1))
		}
		if g2Beside {
			steps = append(steps, startG2(v1))
		}
		steps = append(steps, z)
		if ahead {
			steps = append(steps, copyTo(vecWiresK, v0))
		}
		steps = append(steps, msm("A", &out.A, &r.a, v1), msm("B1", &out.B1, &r.b, v1))
		if g2Serial {
			steps = append(steps, g2(v1))
		}
		if !ahead {
			steps = append(steps, copyTo(vecWiresK, v0))
		}
		steps = append(steps, waitFor(vecWiresK), msm("K", &out.K, &r.k, v0))
		return runSteps(steps)
	}
	if ahead {
		steps = append(steps, copyTo(vecWiresA, v1), hInverse, z, waitFor(vecWiresA))
	} else {
		steps = append(steps, hInverse, copyTo(vecWiresA, v1), z)
	}
	// The B wires go into v0 once Z's MSM has read H, the K wires into v1
	// once A's MSM has read the A wires.
	if ahead {
		steps = append(steps, copyTo(vecWiresB, v0), msm("A", &out.A, &r.a, v1), waitFor(vecWiresB))
	} else {
		steps = append(steps, msm("A", &out.A, &r.a, v1), copyTo(vecWiresB, v0))
	}
	if g2Beside {
		steps = append(steps, startG2(v0))
	}
	if ahead {
		steps = append(steps, copyTo(vecWiresK, v1))
	}
	steps = append(steps, msm("B1", &out.B1, &r.b, v0))
	if g2Serial {
		steps = append(steps, g2(v0))
	}
	if !ahead {
		steps = append(steps, copyTo(vecWiresK, v1))
	}
	return runSteps(append(steps, waitFor(vecWiresK), msm("K", &out.K, &r.k, v1)))
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
