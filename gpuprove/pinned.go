package gpuprove

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/prover"
)

// pinnedPool keeps pinned host buffers for partitions' prepared vectors, laid
// out as the device buffer (layout), so that Stage moves a partition in one
// asynchronous copy at the link's full speed instead of six copies from
// pageable Go memory. cudaHostAlloc waits for the whole device and pins
// pages slowly, so buffers are kept and reused, never freed until Close.
type pinnedPool struct {
	cd   *cuda.Device // allocates (the buffers are portable: any device copies from them)
	max  int64        // bytes pinned at most; beyond it Prep uses Go memory
	mu   sync.Mutex
	free map[int64][]*cuda.HostBuffer // by size
	held int64                        // bytes pinned, free or lent
}

func newPinnedPool(cd *cuda.Device, max int64) *pinnedPool {
	return &pinnedPool{cd: cd, max: max, free: map[int64][]*cuda.HostBuffer{}}
}

// get lends a buffer of bytes, allocating one when none is free; nil when
// the pool is at its limit.
func (p *pinnedPool) get(bytes int64) (*cuda.HostBuffer, error) {
	p.mu.Lock()
	if l := p.free[bytes]; len(l) > 0 {
		h := l[len(l)-1]
		p.free[bytes] = l[:len(l)-1]
		p.mu.Unlock()
		return h, nil
	}
	if p.held+bytes > p.max {
		p.mu.Unlock()
		return nil, nil
	}
	p.held += bytes
	p.mu.Unlock()
	h, err := p.cd.HostAlloc(bytes)
	if err != nil {
		p.mu.Lock()
		p.held -= bytes
		p.mu.Unlock()
		return nil, err
	}
	return h, nil
}

func (p *pinnedPool) put(h *cuda.HostBuffer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free[h.Len()] = append(p.free[h.Len()], h)
}

// reserve allocates buffers of bytes until count are free.
func (p *pinnedPool) reserve(bytes int64, count int) error {
	var got []*cuda.HostBuffer
	defer func() {
		for _, h := range got {
			p.put(h)
		}
	}()
	p.mu.Lock()
	have := len(p.free[bytes])
	p.mu.Unlock()
	for range count - have {
		h, err := p.get(bytes)
		if err != nil || h == nil {
			return err
		}
		got = append(got, h)
	}
	return nil
}

// bytes is what the pool has pinned.
func (p *pinnedPool) bytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

func (p *pinnedPool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for size, l := range p.free {
		for _, h := range l {
			if err := p.cd.HostFree(h); err != nil {
				return fmt.Errorf("free pinned staging buffer: %w", err)
			}
			p.held -= size
		}
		delete(p.free, size)
	}
	return nil
}

// pinnedPrep is one partition's prepared vectors in a pinned buffer.
type pinnedPrep struct {
	pool *pinnedPool
	h    *cuda.HostBuffer
	l    layout
	once sync.Once
}

var _ prover.PrepMemory = (*pinnedPrep)(nil)

func (m *pinnedPrep) vec(off int64, n int) []fr.Element {
	if n == 0 {
		return []fr.Element{}
	}
	return unsafe.Slice((*fr.Element)(unsafe.Add(m.h.Pointer(), off)), n)
}

// Vectors implements prover.PrepMemory: views of the buffer at the layout's
// offsets.
func (m *pinnedPrep) Vectors() (a, b, c, wa, wb, wk []fr.Element) {
	l := m.l
	return m.vec(l.a, l.n), m.vec(l.b, l.n), m.vec(l.c, l.n), m.vec(l.wa, l.na), m.vec(l.wb, l.nb), m.vec(l.wk, l.nk)
}

// Wires implements prover.WireMemory: the wires' values in a layout that
// holds them (hostLayout), else nil.
func (m *pinnedPrep) Wires() []fr.Element {
	if m.l.nw == 0 {
		return nil
	}
	return m.vec(m.l.w, m.l.nw)
}

// Release implements prover.PrepMemory.
func (m *pinnedPrep) Release() { m.once.Do(func() { m.pool.put(m.h) }) }

// PrepMemory implements prover.PrepAllocator: a pinned buffer in the layout
// of the partition's device buffer, or nil (Go memory) when the backend's
// pinned memory is at its limit.
func (b *Backend) PrepMemory(k *prover.Keys) (prover.PrepMemory, error) {
	if b.pinned == nil {
		return nil, nil
	}
	l := hostLayout(k)
	h, err := b.pinned.get(l.total)
	if err != nil || h == nil {
		return nil, err
	}
	return &pinnedPrep{pool: b.pinned, h: h, l: l}, nil
}

// ReservePinned pins count staging buffers for partitions of k now, so that
// the first partitions do not wait for cudaHostAlloc (which also waits for
// the whole device).
func (b *Backend) ReservePinned(k *prover.Keys, count int) error {
	if b.pinned == nil {
		return nil
	}
	return b.pinned.reserve(hostLayout(k).total, count)
}

// LendsWires implements prover.WireLender: partitions of k prepared in the
// backend's pinned memory hold their wire values there (hostLayout).
func (b *Backend) LendsWires(k *prover.Keys) bool {
	return b.pinned != nil && hostLayout(k).nw > 0
}

// Pinned is the bytes of pinned host memory the backend holds for staging.
func (b *Backend) Pinned() int64 {
	if b.pinned == nil {
		return 0
	}
	return b.pinned.bytes()
}
