package sim

import "math/rand/v2"

// handoff is the simulator's dispatcher when the profile orders handoffs
// (host.handoff): the production runtime's order of the actors one handler
// wakes, at one virtual instant.
//
// In production each actor with mail runs on a goroutine that protoactor
// starts when the mail arrives, and Go puts the goroutine made last in its
// processor's runnext slot, ahead of those made before it, which wait in the
// processor's queue unless an idle processor steals one. So of two actors one
// handler wakes, the one woken last usually runs first. Split-devsync meets
// this step by step:
//  1. A's copy ends under mem_mtx; compute_mtx is free.
//  2. A's handler releases mem_mtx (waking the mem lock), then asks for
//     compute_mtx (waking the compute lock).
//  3. The compute lock runs first and grants A, whose launch reaches the
//     device; the mem lock then grants B, whose cudaDeviceSynchronize
//     finds A's new kernel on the card and waits for all of it.
//
// Run depth first, as the synchronized dispatcher does, the mem lock's
// message is handled first and B's sync finds the card idle.
//
// Each choice between the actor woken last and the one waiting longest is
// drawn from the dispatcher's own seeded source: newest first with the
// profile's share, so that a run replays from its seed and a profile without
// a handoff order draws nothing.
type handoff struct {
	newestFirst float64
	rng         *rand.Rand
	running     bool
	next        func()   // the runnext slot
	queue       []func() // woken before next, oldest first
}

func newHandoff(h HandoffProfile, seed uint64) *handoff {
	return &handoff{newestFirst: h.NewestFirst, rng: rand.New(rand.NewPCG(seed, 0x6375_7a6b_6861_6e64))}
}

// Schedule implements actor.Dispatcher. Called from outside any handler (an
// event of the kernel's timeline) it runs fn and everything fn wakes, to
// quiescence, as the synchronized dispatcher does; called from a handler it
// puts fn in the runnext slot.
func (h *handoff) Schedule(fn func()) {
	if h.running {
		if h.next != nil {
			h.queue = append(h.queue, h.next)
		}
		h.next = fn
		return
	}
	h.running = true
	defer func() { h.running = false }()
	for fn != nil {
		fn()
		fn = h.pick()
	}
}

// pick takes what runs next: the runnext slot or the oldest in the queue.
func (h *handoff) pick() func() {
	switch {
	case h.next == nil && len(h.queue) == 0:
		return nil
	case h.next != nil && (len(h.queue) == 0 || h.rng.Float64() < h.newestFirst):
		fn := h.next
		h.next = nil
		return fn
	}
	fn := h.queue[0]
	h.queue[0] = nil
	h.queue = h.queue[1:]
	return fn
}

// reset drops what an ended process incarnation left to run.
func (h *handoff) reset() {
	h.next, h.queue = nil, nil
}

// Throughput implements actor.Dispatcher.
func (h *handoff) Throughput() int { return mailboxThroughput }
