package model

import "sort"

// pool is the device's stream-ordered memory pool (cudaMallocAsync), with the
// behaviour docs/cuda-facts.md records:
//
//   - The pool reserves device memory as it grows and keeps it: a freed block
//     stays in the pool for reuse. Memory goes back to the device only when a
//     synchronization has observed the free and either the release threshold
//     is exceeded at that synchronization or TrimPool asks for it.
//   - A free (FreeAsync) is pending until its stream reaches it, then
//     completed; it becomes observed when a stream, event or device
//     synchronization that covers it returns. TrimPool releases observed
//     blocks only.
//   - An allocation takes, in order: blocks freed on its own stream (stream
//     order makes them safe), blocks whose free has completed on any stream
//     (CUDA's opportunistic reuse), new memory from the device (growth, which
//     costs host time per GiB) when the device has room for the rest, and
//     otherwise — with ReuseAcrossStreams — blocks whose free is still pending
//     on another stream, in which case the allocating stream is made to wait
//     for that stream.
//
// Pool memory is treated as fungible: fragmentation is not modelled.
type pool struct {
	reserved int64 // device memory the pool holds
	inUse    int64 // of which allocated
	free     []*poolBlock
}

type blockState uint8

const (
	blockPending blockState = iota + 1
	blockCompleted
	blockObserved
)

type poolBlock struct {
	bytes  int64
	stream *stream
	seq    uint64 // the free's place in its stream
	state  blockState
}

func (p *pool) release(bytes int64, s *stream, seq uint64) *poolBlock {
	p.inUse -= bytes
	b := &poolBlock{bytes: bytes, stream: s, seq: seq, state: blockPending}
	p.free = append(p.free, b)
	return b
}

func (p *pool) complete(b *poolBlock) {
	if b.state == blockPending {
		b.state = blockCompleted
	}
}

// observe marks as observed the completed frees of s up to seq, as a stream or
// event synchronization does, then applies the release threshold.
func (p *pool) observe(s *stream, seq uint64, threshold int64) {
	for _, b := range p.free {
		if b.stream == s && b.seq <= seq && b.state == blockCompleted {
			b.state = blockObserved
		}
	}
	p.applyThreshold(threshold)
}

// observeAll is observe for a device-wide synchronization.
func (p *pool) observeAll(threshold int64) {
	for _, b := range p.free {
		if b.state == blockCompleted {
			b.state = blockObserved
		}
	}
	p.applyThreshold(threshold)
}

func (p *pool) applyThreshold(threshold int64) {
	var observed int64
	for _, b := range p.free {
		if b.state == blockObserved {
			observed += b.bytes
		}
	}
	if observed > threshold {
		p.releaseObserved(observed - threshold)
	}
}

// trim is cudaMemPoolTrimTo(keep): release observed free memory until the pool
// holds at most keep bytes.
// trim releases observed free blocks until the pool holds keep bytes, and
// returns how many bytes it released.
func (p *pool) trim(keep int64) int64 {
	if keep < 0 {
		keep = 0
	}
	before := p.reserved
	if p.reserved > keep {
		p.releaseObserved(p.reserved - keep)
	}
	return before - p.reserved
}

func (p *pool) releaseObserved(n int64) {
	for _, b := range p.free {
		if n == 0 {
			break
		}
		if b.state != blockObserved {
			continue
		}
		t := min(n, b.bytes)
		b.bytes -= t
		p.reserved -= t
		n -= t
	}
	p.compact()
}

func (p *pool) compact() {
	kept := p.free[:0]
	for _, b := range p.free {
		if b.bytes > 0 {
			kept = append(kept, b)
		}
	}
	for i := len(kept); i < len(p.free); i++ {
		p.free[i] = nil
	}
	p.free = kept
}

// reusable says whether an allocation on s may take b without waiting.
func reusable(b *poolBlock, s *stream) bool {
	return b.stream == s || b.state != blockPending
}

// allocate finds bytes for an allocation on s when devFree bytes of device
// memory are free. It returns how much the pool grew and the streams the
// allocation must wait for; ok is false when nothing can satisfy it (OOM), in
// which case the pool is unchanged.
func (p *pool) allocate(bytes int64, s *stream, devFree int64, acrossStreams bool) (grow int64, deps []target, ok bool) {
	var now, later int64
	for _, b := range p.free {
		if reusable(b, s) {
			now += b.bytes
		} else if acrossStreams {
			later += b.bytes
		}
	}
	// Growth and waiting are alternatives, never mixed: the driver grows the
	// pool when the device has room, and only otherwise hands out blocks
	// whose free is still pending elsewhere.
	need := bytes
	fromNow := min(need, now)
	need -= fromNow
	switch {
	case need == 0:
	case need <= devFree:
		grow, need = need, 0
	case need > later:
		return 0, nil, false
	}
	take := func(n int64, pred func(*poolBlock) bool, onTake func(*poolBlock)) {
		for _, b := range p.free {
			if n == 0 {
				return
			}
			if !pred(b) || b.bytes == 0 {
				continue
			}
			t := min(n, b.bytes)
			b.bytes -= t
			n -= t
			if onTake != nil {
				onTake(b)
			}
		}
	}
	take(fromNow, func(b *poolBlock) bool { return reusable(b, s) }, nil)
	waitFor := map[*stream]uint64{}
	take(need, func(b *poolBlock) bool { return !reusable(b, s) }, func(b *poolBlock) {
		if b.seq > waitFor[b.stream] {
			waitFor[b.stream] = b.seq
		}
	})
	for st, seq := range waitFor {
		deps = append(deps, target{st, seq})
	}
	sort.Slice(deps, func(i, j int) bool { return deps[i].s.id < deps[j].s.id })
	p.compact()
	p.reserved += grow
	p.inUse += bytes
	return grow, deps, true
}

// observedFree is the pool's free memory that TrimPool could release now.
func (p *pool) observedFree() int64 {
	var n int64
	for _, b := range p.free {
		if b.state == blockObserved {
			n += b.bytes
		}
	}
	return n
}

// pending is the pool's freed bytes that no synchronization has observed yet
// (pending or completed frees).
func (p *pool) pending() int64 {
	var n int64
	for _, b := range p.free {
		if b.state != blockObserved {
			n += b.bytes
		}
	}
	return n
}

// freeBytes is every byte of the pool not allocated.
func (p *pool) freeBytes() int64 {
	var n int64
	for _, b := range p.free {
		n += b.bytes
	}
	return n
}
