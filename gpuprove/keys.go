package gpuprove

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/prover"
)

// resident is one proving key's points for one device, placed once and kept
// (as cuzk's SRS manager keeps its parameters): the G1 points, the G2 B
// points when b_g2 runs on the device, and the Pedersen bases of gnark's
// commitments when the circuit has any. Its plan says where: resident on the
// device when they fit beside the partitions, else on the host or (beyond
// the host budget for keys) on disk, streamed through the device's chunk
// buffers; the commitments' bases are always resident.
type resident struct {
	hash       string
	plan       Plan
	a, b, k, z pointSet
	g2         pointSet    // G2 B points (n 0 when b_g2 runs on the CPU)
	cm         commitBases // gnark commitments' Pedersen bases, resident
	// pinnedHeld and hostHeld are what the key set took of the host
	// budgets for keys; ownPoints the points file it opened itself.
	pinnedHeld, hostHeld int64
	ownPoints            *prover.Points
	lastUsed             time.Time
	users                int // computes in flight; a key in use is never evicted
}

// deviceKeys is the key cache, NTT tables and chunk buffers of one device.
type deviceKeys struct {
	cd     *cuda.Device
	stream cuda.Stream // uploads
	g2     bool        // keep G2 B points for b_g2
	// g2Beside: the G2 MSM runs beside the G1 MSMs, so both scratches are
	// needed at once.
	g2Beside bool
	split    bool // the wire MSMs split off their 0/1 scalars
	planOpt  planOptions
	// pinned and host are the host memory key sets' points may take, pinned
	// and in all, shared by the devices.
	pinned, host *budget

	// chunkG1 and chunkG2 carry streamed points to the MSMs.
	chunkG1, chunkG2 chunkPair
	// scratch is the kernels' scratch on the partition's stream (NTTs, the
	// G1 MSMs, and the G2 MSM when it runs after them); scratchG2 the G2
	// MSM's when it runs beside them.
	scratch, scratchG2 scratchBuf
	// commits is the commitment MSMs' buffer and stream, made when the
	// first key set with commitments is placed.
	commits commitDevice

	// estimate plans with the package's estimates of the kernels' scratch
	// (estimatedSizes), not the library's: for the stand-in library, which
	// has no sizing calls.
	estimate bool

	// computing counts the partitions in Compute on the device.
	computing atomic.Int32

	mu      sync.Mutex
	keys    map[string]*resident
	domains map[int]*cuda.Domain
	tables  int64 // bytes of NTT tables
	closed  bool
}

func newDeviceKeys(cd *cuda.Device, g2, g2Beside, split bool, po planOptions, pinned, host *budget) (*deviceKeys, error) {
	s, err := cd.NewStream()
	if err != nil {
		return nil, fmt.Errorf("device %d: upload stream: %w", cd.Index(), err)
	}
	return &deviceKeys{cd: cd, stream: s, g2: g2, g2Beside: g2Beside, split: split, planOpt: po, pinned: pinned, host: host,
		keys: map[string]*resident{}, domains: map[int]*cuda.Domain{}}, nil
}

// plan works out where k's points go on this device, against the memory
// free on it now (the VRAM limit's ballast is allocated already).
func (dk *deviceKeys) plan(k *prover.Keys) (Plan, error) { return dk.planTier(k, dk.planOpt.tier) }

func (dk *deviceKeys) sizes() sizes {
	if dk.estimate {
		return estimatedSizes{}
	}
	return &librarySizes{cd: dk.cd}
}

// planTier is plan with the tier forced ("" or "auto": chosen).
func (dk *deviceKeys) planTier(k *prover.Keys, tier string) (Plan, error) {
	free, _, err := dk.cd.MemInfo()
	if err != nil {
		return Plan{}, fmt.Errorf("device %d: %w", dk.cd.Index(), err)
	}
	o := dk.planOpt
	o.tier = tier
	o.pinnedFree, o.hostFree = dk.pinned.left(), dk.host.left()
	// The scratch buffers already made count as free: a plan replaces them.
	free += dk.scratch.size() + dk.scratchG2.size()
	sz := dk.sizes()
	p := planFor(shapeOf(k, dk.g2, dk.g2Beside, dk.split), free, o, sz)
	if err := sz.failed(); err != nil {
		return Plan{}, fmt.Errorf("device %d: size the kernels' scratch: %w", dk.cd.Index(), err)
	}
	if p.Tier == TierDisk {
		p.PointsPath = pointsPath(k)
	}
	return p, nil
}

// acquire returns k's points on the device and the NTT tables of its domain,
// uploading them on first use, and marks the key in use until release.
func (dk *deviceKeys) acquire(k *prover.Keys) (*resident, *cuda.Domain, error) {
	dk.mu.Lock()
	defer dk.mu.Unlock()
	r, err := dk.loadLocked(k)
	if err != nil {
		return nil, nil, err
	}
	logN := cuda.Log2(int(k.PK.Domain.Cardinality))
	dom, err := dk.domainLocked(logN)
	if err != nil {
		return nil, nil, err
	}
	r.users++
	r.lastUsed = time.Now()
	return r, dom, nil
}

func (dk *deviceKeys) release(r *resident) {
	dk.mu.Lock()
	defer dk.mu.Unlock()
	r.users--
	r.lastUsed = time.Now()
}

// placed is k's key set on the device, if it is placed there.
func (dk *deviceKeys) placed(k *prover.Keys) (*resident, bool) {
	dk.mu.Lock()
	defer dk.mu.Unlock()
	r, ok := dk.keys[k.Hash]
	return r, ok
}

func (dk *deviceKeys) loadLocked(k *prover.Keys) (*resident, error) {
	if k.Hash == "" {
		return nil, fmt.Errorf("keys of %s have no content hash: cannot cache them on the device", k.Circuit)
	}
	if r, ok := dk.keys[k.Hash]; ok {
		return r, nil
	}
	pk, counts := k.PK, k.Counts()
	r := &resident{hash: k.Hash}
	if dk.g2 && counts.G2B != counts.B {
		return nil, fmt.Errorf("keys of %s: %d G2 B points for %d G1 B points", k.Circuit, counts.G2B, counts.B)
	}
	var err error
	if r.plan, err = dk.plan(k); err != nil {
		return nil, err
	}
	if !r.plan.Fits() {
		return nil, fmt.Errorf("device %d: keys of %s: %w\n%s", dk.cd.Index(), k.Circuit, ErrDoesNotFit, r.plan)
	}
	if err := dk.takeBudgets(k, r); err != nil {
		return nil, err
	}
	tier := r.plan.Tier
	free := func() {
		for _, p := range r.all() {
			_ = p.free(dk.cd)
		}
		dk.giveBudgets(r)
	}
	// The points come from the proving key in memory, or from the points
	// file: the disk tier's source whatever the keys hold, and the only one
	// of keys loaded without their points.
	var pts *prover.Points
	if tier == TierDisk || !k.PointsInMemory() {
		if pts, err = dk.points(k, r); err != nil {
			free()
			return nil, err
		}
	}
	type source struct {
		dst  *pointSet
		name string
		mem  func() (pointSet, error) // from the proving key in memory
	}
	// Points the keys moved into pinned memory (prover.Keys.PinPoints) are
	// streamed from there: no second copy. Z is reordered into a copy of
	// its own unless the keys moved it in the device's order.
	borrow := tier == TierPinned && k.PointsPinned()
	place := func(name string, points []curve.G1Affine) func() (pointSet, error) {
		return func() (pointSet, error) {
			if borrow {
				return borrowedPointSet(name, points, pointBytes), nil
			}
			return newPointSet(dk.cd, name, points, pointBytes, tier, dk.stream)
		}
	}
	srcs := []source{
		{&r.a, "A", place("A", pk.G1.A)},
		{&r.b, "B", place("B", pk.G1.B)},
		{&r.k, "K", place("K", pk.G1.K)},
		{&r.z, "Z", func() (pointSet, error) {
			if k.ZInDeviceOrder() {
				// Moved in the device's order already (prover.Keys.PinPoints).
				return place("Z", pk.G1.Z)()
			}
			zNatural, err := naturalZ(pk.G1.Z, int(pk.Domain.Cardinality))
			if err != nil {
				return pointSet{name: "Z"}, fmt.Errorf("keys of %s: %w", k.Circuit, err)
			}
			return newPointSet(dk.cd, "Z", zNatural, pointBytes, tier, dk.stream)
		}},
	}
	if dk.g2 {
		srcs = append(srcs, source{&r.g2, "G2 B", func() (pointSet, error) {
			if borrow {
				return borrowedPointSet("G2 B", pk.G2.B, g2PointBytes), nil
			}
			return newPointSet(dk.cd, "G2 B", pk.G2.B, g2PointBytes, tier, dk.stream)
		}})
	}
	for _, src := range srcs {
		var err error
		// Keys loaded without their points may keep G2 B in memory (for
		// b_g2 on the CPU): placed from there unless streamed from disk.
		inMemory := k.PointsInMemory() || (src.name == "G2 B" && len(pk.G2.B) > 0)
		if tier == TierDisk || !inMemory {
			*src.dst, err = newPointSetFromFile(dk.cd, pts, src.name, tier, dk.stream)
		} else {
			*src.dst, err = src.mem()
		}
		if err != nil {
			free()
			return nil, fmt.Errorf("device %d: place key points %s of %s (%s): %w", dk.cd.Index(), src.name, k.Circuit, tier, err)
		}
	}
	if r.plan.MSMTables > 0 {
		dk.tabulate(r)
	}
	if tier != TierDisk && r.ownPoints != nil {
		// Read into memory: the file is not needed after placing.
		_ = r.ownPoints.Close()
		r.ownPoints = nil
	}
	// The scratch buffers grow to the largest plan's; a key set placed
	// before keeps what it had.
	if err := dk.scratch.ensure(dk.cd, r.plan.Scratch-r.plan.ScratchG2); err != nil {
		free()
		return nil, fmt.Errorf("device %d: kernel scratch: %w", dk.cd.Index(), err)
	}
	if err := dk.scratchG2.ensure(dk.cd, r.plan.ScratchG2); err != nil {
		free()
		return nil, fmt.Errorf("device %d: G2 kernel scratch: %w", dk.cd.Index(), err)
	}
	if err := dk.placeCommitments(k, r); err != nil {
		free()
		return nil, err
	}
	if tier != TierDevice {
		chunk := int64(r.plan.ChunkPoints)
		if err := dk.chunkG1.ensure(dk.cd, chunk*pointBytes); err != nil {
			free()
			return nil, fmt.Errorf("device %d: chunk buffers: %w", dk.cd.Index(), err)
		}
		if dk.g2 {
			if err := dk.chunkG2.ensure(dk.cd, min(chunk, int64(r.g2.n))*g2PointBytes); err != nil {
				free()
				return nil, fmt.Errorf("device %d: G2 chunk buffers: %w", dk.cd.Index(), err)
			}
		}
	}
	if tier == TierDisk {
		if err := dk.ensureStaging(r); err != nil {
			free()
			return nil, err
		}
	}
	dk.keys[k.Hash] = r
	return r, nil
}

// tabulate replaces the resident G1 point sets of r by precomputed MSM
// tables of them (cuda.MSMTable, r.plan.TableCopies copies), built on the
// device. A set whose table cannot be made keeps its points, which the
// plan's scratch also serves, and the plan gives its table's bytes back,
// saying why in TableError.
func (dk *deviceKeys) tabulate(r *resident) {
	var built int64
	var errs []error
	sets := 0
	for _, ps := range []*pointSet{&r.a, &r.b, &r.k, &r.z} {
		if ps.dev == 0 || ps.n < minTablePoints {
			continue
		}
		if err := dk.tabulateSet(ps, r.plan.TableCopies); err != nil {
			errs = append(errs, fmt.Errorf("%s kept its points: %w", ps.name, err))
			continue
		}
		built += ps.table.Bytes - ps.bytes()
		sets++
	}
	r.plan.MSMTables, r.plan.TableSets = built, sets
	if err := errors.Join(errs...); err != nil {
		r.plan.TableError = err.Error()
	}
}

// tabulateSet builds ps's table in memory of its own, from a copy of the
// points in its first row, and frees the points; on a failure ps is as it
// was.
func (dk *deviceKeys) tabulateSet(ps *pointSet, ask int) error {
	cd := dk.cd
	tab, err := cd.NewMSMTable(ps.n, false, 0, ask, func(rows cuda.Ptr) error { return cd.CopyDevice(rows, ps.dev, ps.bytes(), dk.stream) }, dk.stream)
	if err != nil {
		return err
	}
	if err := cd.Free(ps.dev); err != nil {
		return errors.Join(err, cd.Free(tab.Ptr))
	}
	ps.dev, ps.table = tab.Ptr, tab
	return nil
}

// points opens k's points file for r: the one the keys were loaded with,
// else the key directory's, written from its proving key when there is
// none (prover.EnsurePoints), which r then owns.
func (dk *deviceKeys) points(k *prover.Keys, r *resident) (*prover.Points, error) {
	if k.Points != nil {
		if k.Points.Hash != k.Hash {
			return nil, fmt.Errorf("keys of %s: points file %s is of key set %s, not %s", k.Circuit, k.Points.Path, short(k.Points.Hash), short(k.Hash))
		}
		return k.Points, nil
	}
	if k.Dir == "" {
		return nil, fmt.Errorf("device %d: keys of %s: the disk tier streams the points file of a key directory, and these keys were not saved to one", dk.cd.Index(), k.Circuit)
	}
	p, err := prover.EnsurePoints(k.Dir)
	if err != nil {
		return nil, fmt.Errorf("device %d: keys of %s: %w", dk.cd.Index(), k.Circuit, err)
	}
	if p.Hash != k.Hash || p.Counts() != k.Counts() {
		p.Close()
		return nil, fmt.Errorf("device %d: keys of %s: %s is of key set %s (%+v points), the keys are %s (%+v)",
			dk.cd.Index(), k.Circuit, p.Path, short(p.Hash), p.Counts(), short(k.Hash), k.Counts())
	}
	r.ownPoints = p
	return p, nil
}

// takeBudgets takes from the host budgets what r's plan places in host
// memory: a pinned copy of the points (from the pinned budget and the
// host's), a copy in the Go heap of points read from disk (the host's).
// Points in memory already, streamed from there, take nothing. A budget
// that another device took from since the plan was made moves the key set
// down a tier: pinned to the heap, the heap to the disk.
func (dk *deviceKeys) takeBudgets(k *prover.Keys, r *resident) error {
	p := &r.plan
	bytes := p.HostKeys
	if p.Tier == TierPinned && k.PointsPinned() {
		// Only Z's reordered copy is made (the other sets are where the
		// keys moved them), and none when the keys moved Z too.
		bytes = int64(k.Counts().Z) * pointBytes
		if k.ZInDeviceOrder() {
			bytes = 0
		}
	}
	if p.Tier == TierPinned {
		if dk.host.take(bytes) {
			if dk.pinned.take(bytes) {
				r.pinnedHeld, r.hostHeld = bytes, bytes
				return nil
			}
			dk.host.give(bytes)
		}
		p.Tier = TierHost
	}
	if p.Tier == TierHost && !k.PointsInMemory() {
		if dk.host.take(bytes) {
			r.hostHeld = bytes
			return nil
		}
		if dk.planOpt.tier == TierHost {
			return fmt.Errorf("device %d: keys of %s: %s of points to read into memory beyond the host budget for keys (%s left)",
				dk.cd.Index(), k.Circuit, gpu.FormatBytes(bytes), gpu.FormatBytes(dk.host.left()))
		}
		np, err := dk.planTier(k, TierDisk)
		if err != nil {
			return err
		}
		if !np.Fits() {
			return fmt.Errorf("device %d: keys of %s: %w\n%s", dk.cd.Index(), k.Circuit, ErrDoesNotFit, np)
		}
		*p = np
	}
	return nil
}

func (dk *deviceKeys) giveBudgets(r *resident) {
	dk.pinned.give(r.pinnedHeld)
	dk.host.give(r.hostHeld)
	r.pinnedHeld, r.hostHeld = 0, 0
	if r.ownPoints != nil {
		_ = r.ownPoints.Close()
		r.ownPoints = nil
	}
}

// ensureStaging makes the chunk pairs' host staging for r's disk tier:
// pinned when the plan says so and the pinned budget still has room (taken
// from it until the device closes), else in the Go heap.
func (dk *deviceKeys) ensureStaging(r *resident) error {
	pinned := r.plan.StagingPinned
	pairs := []struct {
		c     *chunkPair
		bytes int64
	}{{&dk.chunkG1, dk.chunkG1.size()}}
	if dk.g2 {
		pairs = append(pairs, struct {
			c     *chunkPair
			bytes int64
		}{&dk.chunkG2, dk.chunkG2.size()})
	}
	for _, p := range pairs {
		if err := p.c.ensureStaging(dk.cd, p.bytes, pinned, dk.pinned); err != nil {
			return fmt.Errorf("device %d: staging for points streamed from disk: %w", dk.cd.Index(), err)
		}
	}
	return nil
}

// pointsPath is where k's points file is, or will be written.
func pointsPath(k *prover.Keys) string {
	if k.Points != nil {
		return k.Points.Path
	}
	if k.Dir == "" {
		return "no key directory"
	}
	return filepath.Join(k.Dir, prover.PointsFileName)
}

// sets are the key's point vectors, as its tier places them.
func (r *resident) sets() []*pointSet { return []*pointSet{&r.a, &r.b, &r.k, &r.z, &r.g2} }

// all are sets and the commitments' bases: everything the key set holds.
func (r *resident) all() []*pointSet { return append(r.sets(), &r.cm.basis, &r.cm.sigma) }

// msmTables is the bytes of the key's precomputed MSM tables beyond the
// points they hold.
func (r *resident) msmTables() int64 {
	var n int64
	for _, p := range r.sets() {
		if p.table.Copies > 1 {
			n += p.table.Bytes - p.bytes()
		}
	}
	return n
}

// onDevice is the bytes of the key's points resident on the device.
func (r *resident) onDevice() int64 {
	var n int64
	for _, p := range r.sets() {
		if p.dev != 0 {
			n += p.bytes()
		}
	}
	return n
}

// ErrDoesNotFit: one partition of a key set cannot fit on a device even
// alone, with the key's points streamed and its MSMs in the smallest chunks.
var ErrDoesNotFit = errors.New("a partition does not fit on the device")

// naturalZ puts the Z points in the order of H's coefficients as the device
// computes them. gnark's setup stores Z bit-reversed, because its CPU prover
// leaves H bit-reversed (its last inverse FFT is decimation in frequency),
// while the device's NTTs give natural order. Z has n−1 points: the one
// dropped, at n−1, is its own bit reversal, so the others stay in [0, n−1).
func naturalZ(z []curve.G1Affine, n int) ([]curve.G1Affine, error) {
	logN := cuda.Log2(n)
	if logN < 1 || len(z) != n-1 {
		return nil, fmt.Errorf("%d Z points for a domain of %d: want n−1", len(z), n)
	}
	out := make([]curve.G1Affine, len(z))
	prover.ToDeviceOrder(out, z, n)
	return out, nil
}

func (dk *deviceKeys) domainLocked(logN int) (*cuda.Domain, error) {
	if logN < 0 {
		return nil, fmt.Errorf("FFT domain is not a power of two")
	}
	if d, ok := dk.domains[logN]; ok {
		return d, nil
	}
	tables, err := dk.cd.DomainBytes(logN)
	if err != nil {
		return nil, fmt.Errorf("device %d: %w", dk.cd.Index(), err)
	}
	d, err := dk.cd.NewDomain(logN, dk.stream)
	if err != nil {
		return nil, fmt.Errorf("device %d: %w", dk.cd.Index(), err)
	}
	dk.domains[logN] = d
	dk.tables += tables
	return d, nil
}

// reserved is what lives on the device outside the designs' buffers: the
// resident keys, the NTT tables, the chunk buffers of streamed keys, the
// kernels' scratch buffers (one partition's compute at a time uses them:
// only the holder of the compute lock computes, in every design), and the
// commitments' bases and their MSMs' buffer.
func (dk *deviceKeys) reserved() int64 {
	u := dk.usage()
	return u.Keys + u.Tables + u.Chunks + u.Scratch + u.Commitments + u.MSMTables
}

func (dk *deviceKeys) usage() prover.Held {
	dk.mu.Lock()
	defer dk.mu.Unlock()
	u := prover.Held{Tables: dk.tables}
	for _, r := range dk.keys {
		u.Keys += r.onDevice()
		u.MSMTables += r.msmTables()
		u.Commitments += r.cm.bytes()
		u.Host += r.plan.HostKeys
		u.Disk += r.plan.DiskKeys
	}
	// Read without the buffers' locks, which a running MSM holds: the
	// designs ask for the device's memory while a partition computes.
	u.Chunks = 2 * (dk.chunkG1.size() + dk.chunkG2.size())
	u.Staging = dk.chunkG1.stagingSize() + dk.chunkG2.stagingSize()
	u.Scratch = dk.scratch.size() + dk.scratchG2.size() + dk.commits.buf.size()
	return u
}

// evictIdle frees the keys unused for at least idle and returns the bytes
// freed. cudaFree waits for the device, so call it between jobs.
func (dk *deviceKeys) evictIdle(idle time.Duration) (int64, error) {
	dk.mu.Lock()
	defer dk.mu.Unlock()
	var freed int64
	for h, r := range dk.keys {
		if r.users > 0 || time.Since(r.lastUsed) < idle {
			continue
		}
		for _, p := range r.all() {
			if err := p.free(dk.cd); err != nil {
				return freed, fmt.Errorf("device %d: evict keys %s: %w", dk.cd.Index(), short(h), err)
			}
		}
		dk.giveBudgets(r)
		delete(dk.keys, h)
		freed += r.plan.Keys + r.plan.Commitments + r.plan.MSMTables
	}
	return freed, nil
}

func (dk *deviceKeys) close() error {
	if _, err := dk.evictIdle(0); err != nil {
		return err
	}
	dk.mu.Lock()
	defer dk.mu.Unlock()
	if dk.closed {
		return nil
	}
	dk.closed = true
	for n, d := range dk.domains {
		if err := d.Close(); err != nil {
			return fmt.Errorf("device %d: close NTT domain 2^%d: %w", dk.cd.Index(), n, err)
		}
		delete(dk.domains, n)
	}
	dk.tables = 0
	return errors.Join(dk.chunkG1.free(dk.cd, dk.pinned), dk.chunkG2.free(dk.cd, dk.pinned), dk.scratch.free(dk.cd), dk.scratchG2.free(dk.cd),
		dk.commits.close(dk.cd), dk.cd.DestroyStream(dk.stream))
}

// budget bounds the host memory that key sets take: pinned, or in all.
type budget struct {
	mu   sync.Mutex
	max  int64
	held int64
}

// unlimited is a budget's max when there is none.
const unlimited = math.MaxInt64

func (p *budget) left() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.max - p.held
}

func (p *budget) take(n int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n > p.max-p.held {
		return false
	}
	p.held += n
	return true
}

func (p *budget) give(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held -= n
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

const (
	pointBytes   = 96  // bls12381.G1Affine
	g2PointBytes = 192 // bls12381.G2Affine
	scalarBytes  = 32  // fr.Element
	// msmBatchEntries and msmChunk are the MSM kernel's batch of sorted
	// entries and its accumulation chunk (cuda/src/msm/pippenger.cuh).
	msmBatchEntries = 1 << 28
	msmChunk        = 32
	xyzzBytes       = 192 // G1; G2's are twice as wide
)

// domainTableBytes is an estimate of one NTT domain's device tables (the n/2
// roots of unity, their inverses and the coset-shift tables, with room to
// spare), for
// planning without the library, whose cuzk_ntt_domain_bytes is exact.
func domainTableBytes(logN int) int64 {
	return int64(1)<<logN*scalarBytes + 2*4096*scalarBytes + 1<<20 // n/2 roots and n/2 inverse roots
}

// msmWindow is the window size the MSM kernel picks for n points (fewest
// additions, as in cuda/src/msm/pippenger.cuh).
func msmWindow(n int) int {
	best, bestCost := 4, 1e300
	for c := 4; c <= 22; c++ {
		nw := 255/c + 1
		cost := float64(nw) * (float64(n) + 1.4*float64(uint64(1)<<c))
		if cost < bestCost {
			best, bestCost = c, cost
		}
	}
	return best
}

// MSMScratch is an upper bound of the scratch the MSM kernel takes for n
// points, for planning without the library (whose cuzk_msm_scratch_bytes
// the backend asks): sort keys and values (in and out), chunk slots
// (counted at the smallest chunk the kernel has used, 32 entries), buckets
// and their reduction; a quarter is added for the radix sort's storage and
// the fixup levels.
func MSMScratch(n int) int64 { return msmScratch(n, xyzzBytes) }

// MSMScratchG2 is MSMScratch for the G2 MSM, whose bucket sums are twice
// as wide.
func MSMScratchG2(n int) int64 { return msmScratch(n, 2*xyzzBytes) }

func msmScratch(n int, xyzzBytes int64) int64 {
	if n <= 0 {
		return 0
	}
	c := msmWindow(n)
	return pipScratch(n, int64(n), c, 255/c+1, xyzzBytes)
}

// pipScratch is msmScratch's count for n scalars whose Pippenger sorts e
// entries a window over nw windows of c bits: e = n and nw = 255/c + 1 on
// the points themselves, e = t·n and fewer windows over a table of t copies.
func pipScratch(n int, e int64, c, nw int, xyzzBytes int64) int64 {
	wb := max(min(int64(msmBatchEntries)/e, int64(nw)), 1)
	m := wb * e
	slots := 2 * ((m + msmChunk - 1) / msmChunk)
	buckets := int64(nw) * (int64(1)<<(c-1) + 1)
	segs := int64(nw) * max(int64(1)<<(c-1-min(c-1, 5)), 1)
	b := 16*m + slots*(4+xyzzBytes) + (buckets+2*segs)*xyzzBytes
	// The 0/1 split: a class byte and an index per scalar, and CUB's
	// partition storage.
	b += 5*int64(n) + 1<<20
	return b + b/4 + 8<<20
}

// maxTableCopies is the library's MAX_COPIES (cuda/src/msm/pippenger.cuh).
const maxTableCopies = 32

// tableCopies, copyWindows and tableWindow are the library's table_copies,
// copy_windows and table_window (cuda/src/msm/pippenger.cuh): the copies a
// table of window c has when ask (0: one per window) asks for them, the
// virtual windows of t copies, and the cost model's window for a table of n
// points.
func tableCopies(c, ask int) int {
	want := ask
	if ask <= 0 {
		want = 255/c + 1
	}
	return min(want, maxTableCopies)
}

func copyWindows(c, t int) int { return (255/c + 1 + t - 1) / t }

func tableWindow(n, ask int) int {
	best, bestCost := 4, 1e300
	for c := 4; c <= 24; c++ {
		t := tableCopies(c, ask)
		g := copyWindows(c, t)
		cost := float64(g) * (float64(t)*float64(n) + 1.4*float64(uint64(1)<<c))
		if cost < bestCost {
			best, bestCost = c, cost
		}
	}
	return best
}

// msmTableEstimate is the device memory of a table of n G1 points for ask
// and an upper bound of the scratch of an MSM over it, for planning without
// the library: its count of the points' copies, and msmScratch's over the
// table's entries and virtual windows.
func msmTableEstimate(n, ask int) (table, scratch int64) {
	if n <= 0 {
		return 0, 0
	}
	c := tableWindow(n, ask)
	t := tableCopies(c, ask)
	g := copyWindows(c, t)
	return int64(t) * int64(n) * pointBytes, pipScratch(n, int64(t)*int64(n), c, g, xyzzBytes)
}
