package sim

import "math/rand/v2"

// handoff is the simulator's dispatcher when the profile orders handoffs
// (host.handoff): the production runtime's order of the actors that handlers
// wake, at one virtual instant.
//
// In production each actor with mail runs on a goroutine that protoactor
// starts when the mail arrives. What is already runnable runs on the other
// processors meanwhile, and Go puts the goroutine made last in its
// processor's runnext slot, ahead of those made before it, which wait in the
// processor's queue unless an idle processor steals one. So here:
//
//   - the actors a handler wakes run after the handler, as an event of the
//     timeline at the same instant, behind what was already due then (a
//     completion another device call delivered at that instant runs first);
//   - of the actors one handler woke, the one woken last runs first with the
//     share newest_first, else the one woken first, and so on.
//
// Split-devsync met this step by step while every lease went through its
// lock actor (actors.Config.LockHops):
//  1. A's copy ends under mem_mtx; compute_mtx is free.
//  2. A's handler releases mem_mtx (waking the mem lock), then asks for
//     compute_mtx (waking the compute lock).
//  3. The compute lock runs first and grants A, whose launch reaches the
//     device; the mem lock then grants B, whose cudaDeviceSynchronize
//     finds A's new kernel on the card and waits for all of it.
//
// By default A takes the free compute_mtx in place and launches in that
// handler, before the mem lock runs, whatever the order here.
//
// And when a kernel ends, the stream sync of the worker that launched it and
// another worker's device sync return together: the second worker's trim
// (one handler away) reaches the pool before the next kernel's scratch
// allocation (three: the first worker, the compute lock, the next worker).
// Run depth first, as the synchronized dispatcher does, both came the other
// way round.
//
// Actors that different handlers woke at one instant race too: in
// production each is a goroutine made runnable a few microseconds after the
// other, and on the H200, with lock hops, the worker granted later reached
// the device first in about one tie in twenty between a launch and another
// worker's cudaDeviceSynchronize (runs/h200-2026-12-04d r2, f10: 5 of 97
// ties; one in fourteen while the trace was written under a lock the
// handlers took). With later_first set, a handler's wake-ups go ahead of
// those another handler woke just before at the same instant, not yet run,
// with that share. In the step above, with lock hops, the mem lock's grant
// to B then runs before A's launch; a compute_mtx taken in place leaves
// that tie nothing to decide.
//
// The draws come from the dispatcher's own seeded source, so that a run
// replays from its seed and a profile without a handoff order draws nothing.
type handoff struct {
	newestFirst float64
	laterFirst  float64
	rng         *rand.Rand
	at          func(func()) // schedules on the timeline, at the current instant
	running     bool
	woken       []func()   // by the handler running, in order
	due         [][]func() // what handlers woke at this instant, not yet run, in the order it will run
}

func newHandoff(h HandoffProfile, seed uint64, at func(func())) *handoff {
	return &handoff{newestFirst: h.NewestFirst, laterFirst: h.LaterFirst,
		rng: rand.New(rand.NewPCG(seed, 0x6375_7a6b_6861_6e64)), at: at}
}

// Schedule implements actor.Dispatcher: called from a handler it records fn
// as woken by it; otherwise it runs fn now.
func (h *handoff) Schedule(fn func()) {
	if h.running {
		h.woken = append(h.woken, fn)
		return
	}
	h.run(fn)
}

// run runs one handler and schedules what it woke.
func (h *handoff) run(fn func()) {
	h.running = true
	fn()
	h.running = false
	woken := h.woken
	h.woken = nil
	if len(woken) == 0 {
		return
	}
	// One timeline event per handler's wake-ups, as before; which wake-ups
	// each runs is the order of due.
	if n := len(h.due); n > 0 && h.laterFirst > 0 && h.rng.Float64() < h.laterFirst {
		h.due = append(h.due[:n-1], woken, h.due[n-1])
	} else {
		h.due = append(h.due, woken)
	}
	h.at(h.runDue)
}

// runDue runs the wake-ups first in line.
func (h *handoff) runDue() {
	woken := h.due[0]
	h.due = h.due[1:]
	h.runWoken(woken)
}

// runWoken runs the actors one handler woke, in the runtime's order.
func (h *handoff) runWoken(woken []func()) {
	for len(woken) > 0 {
		i := 0
		if len(woken) == 1 || h.rng.Float64() < h.newestFirst {
			i = len(woken) - 1
		}
		fn := woken[i]
		woken = append(woken[:i], woken[i+1:]...)
		h.run(fn)
	}
}

// reset drops what an ended process incarnation left to run (its events
// are dropped by the timeline).
func (h *handoff) reset() { h.woken, h.due = nil, nil }

// Throughput implements actor.Dispatcher.
func (h *handoff) Throughput() int { return mailboxThroughput }
