package gpuprove

import (
	"fmt"
	"math/bits"
	"sync"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/prover"
)

// resident is one proving key's points on one device, uploaded once and
// kept (as cuzk's SRS manager keeps its parameters): the G1 points, and the
// G2 B points when b_g2 runs on the device.
type resident struct {
	hash       string
	a, b, k, z cuda.Ptr
	g2         cuda.Ptr // G2 B points, or 0
	na, nb, nk int
	nz         int
	bytes      int64
	scratch    int64 // MSM scratch of this key's largest MSM
	lastUsed   time.Time
	users      int // computes in flight; a key in use is never evicted
}

// deviceKeys is the key cache and NTT tables of one device.
type deviceKeys struct {
	cd     *cuda.Device
	stream cuda.Stream // uploads
	g2     bool        // keep G2 B points resident for b_g2
	// g2Beside: the G2 MSM runs beside the G1 MSMs, so both scratches are
	// needed at once.
	g2Beside bool

	mu      sync.Mutex
	keys    map[string]*resident
	domains map[int]*cuda.Domain
	tables  int64 // bytes of NTT tables
	closed  bool
}

func newDeviceKeys(cd *cuda.Device, g2, g2Beside bool) (*deviceKeys, error) {
	s, err := cd.NewStream()
	if err != nil {
		return nil, fmt.Errorf("device %d: upload stream: %w", cd.Index(), err)
	}
	return &deviceKeys{cd: cd, stream: s, g2: g2, g2Beside: g2Beside, keys: map[string]*resident{}, domains: map[int]*cuda.Domain{}}, nil
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

func (dk *deviceKeys) loadLocked(k *prover.Keys) (*resident, error) {
	if k.Hash == "" {
		return nil, fmt.Errorf("keys of %s have no content hash: cannot cache them on the device", k.Circuit)
	}
	if r, ok := dk.keys[k.Hash]; ok {
		return r, nil
	}
	pk := k.PK
	r := &resident{hash: k.Hash, na: len(pk.G1.A), nb: len(pk.G1.B), nk: len(pk.G1.K), nz: len(pk.G1.Z)}
	zNatural, err := naturalZ(pk.G1.Z, int(pk.Domain.Cardinality))
	if err != nil {
		return nil, fmt.Errorf("keys of %s: %w", k.Circuit, err)
	}
	free := func() {
		for _, p := range r.ptrs() {
			_ = dk.cd.Free(p)
		}
	}
	type upload struct {
		dst    *cuda.Ptr
		name   string
		n      int
		size   int64
		upload func() (cuda.Ptr, error)
	}
	ups := []upload{
		{&r.a, "A", r.na, pointBytes, func() (cuda.Ptr, error) { return cuda.Upload(dk.cd, pk.G1.A, dk.stream) }},
		{&r.b, "B", r.nb, pointBytes, func() (cuda.Ptr, error) { return cuda.Upload(dk.cd, pk.G1.B, dk.stream) }},
		{&r.k, "K", r.nk, pointBytes, func() (cuda.Ptr, error) { return cuda.Upload(dk.cd, pk.G1.K, dk.stream) }},
		{&r.z, "Z", r.nz, pointBytes, func() (cuda.Ptr, error) { return cuda.Upload(dk.cd, zNatural, dk.stream) }},
	}
	if dk.g2 {
		if len(pk.G2.B) != r.nb {
			return nil, fmt.Errorf("keys of %s: %d G2 B points for %d G1 B points", k.Circuit, len(pk.G2.B), r.nb)
		}
		ups = append(ups, upload{&r.g2, "G2 B", r.nb, g2PointBytes, func() (cuda.Ptr, error) { return cuda.Upload(dk.cd, pk.G2.B, dk.stream) }})
	}
	for _, up := range ups {
		if *up.dst, err = up.upload(); err != nil {
			free()
			return nil, fmt.Errorf("device %d: upload %d key points %s of %s: %w", dk.cd.Index(), up.n, up.name, k.Circuit, err)
		}
		r.bytes += int64(max(up.n, 1)) * up.size
	}
	r.scratch = MSMScratch(max(r.na, r.nb, r.nk, r.nz))
	switch {
	case dk.g2Beside:
		r.scratch += MSMScratchG2(r.nb)
	case dk.g2:
		r.scratch = max(r.scratch, MSMScratchG2(r.nb))
	}
	dk.keys[k.Hash] = r
	return r, nil
}

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
	for j := range z {
		out[bits.Reverse64(uint64(j))>>(64-logN)] = z[j]
	}
	return out, nil
}

func (dk *deviceKeys) domainLocked(logN int) (*cuda.Domain, error) {
	if logN < 0 {
		return nil, fmt.Errorf("FFT domain is not a power of two")
	}
	if d, ok := dk.domains[logN]; ok {
		return d, nil
	}
	d, err := dk.cd.NewDomain(logN, dk.stream)
	if err != nil {
		return nil, fmt.Errorf("device %d: %w", dk.cd.Index(), err)
	}
	dk.domains[logN] = d
	dk.tables += domainTableBytes(logN)
	return d, nil
}

// reserved is what lives on the device outside the designs' buffers: the
// resident keys, the NTT tables, and room for one MSM's scratch (only the
// holder of the compute lock runs MSMs, in every design).
func (dk *deviceKeys) reserved() int64 {
	dk.mu.Lock()
	defer dk.mu.Unlock()
	var total, scratch int64
	for _, r := range dk.keys {
		total += r.bytes
		scratch = max(scratch, r.scratch)
	}
	return total + dk.tables + scratch
}

func (dk *deviceKeys) resident() int64 {
	dk.mu.Lock()
	defer dk.mu.Unlock()
	var total int64
	for _, r := range dk.keys {
		total += r.bytes
	}
	return total
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
		for _, p := range r.ptrs() {
			if err := dk.cd.Free(p); err != nil {
				return freed, fmt.Errorf("device %d: evict keys %s: %w", dk.cd.Index(), short(h), err)
			}
		}
		delete(dk.keys, h)
		freed += r.bytes
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
	return dk.cd.DestroyStream(dk.stream)
}

// ptrs are the device allocations of the key.
func (r *resident) ptrs() []cuda.Ptr {
	var out []cuda.Ptr
	for _, p := range []cuda.Ptr{r.a, r.b, r.k, r.z, r.g2} {
		if p != 0 {
			out = append(out, p)
		}
	}
	return out
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

// domainTableBytes is an estimate of one NTT domain's device tables: the n/2
// roots of unity and the coset-shift tables, with room to spare.
func domainTableBytes(logN int) int64 {
	return int64(1)<<logN/2*scalarBytes + 2*4096*scalarBytes + 1<<20
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

// MSMScratch bounds the device memory the MSM kernel draws from the pool for
// n points: sort keys and values (in and out), chunk slots (counted at the
// smallest chunk the kernel has used, 32 entries), buckets and their
// reduction; a quarter is added for the radix sort's storage, the fixup
// levels and the pool's rounding.
func MSMScratch(n int) int64 { return msmScratch(n, xyzzBytes) }

// MSMScratchG2 is MSMScratch for the G2 MSM, whose bucket sums are twice
// as wide.
func MSMScratchG2(n int) int64 { return msmScratch(n, 2*xyzzBytes) }

func msmScratch(n int, xyzzBytes int64) int64 {
	if n <= 0 {
		return 0
	}
	c := msmWindow(n)
	nw := int64(255/c + 1)
	wb := max(min(int64(msmBatchEntries)/int64(n), nw), 1)
	m := wb * int64(n)
	slots := 2 * ((m + msmChunk - 1) / msmChunk)
	buckets := nw * (int64(1)<<(c-1) + 1)
	segs := nw * max(int64(1)<<(c-1-min(c-1, 5)), 1)
	b := 16*m + slots*(4+xyzzBytes) + (buckets+2*segs)*xyzzBytes
	// The 0/1 split: a class byte and an index per scalar, and CUB's
	// partition storage.
	b += 5*int64(n) + 1<<20
	return b + b/4 + 8<<20
}
