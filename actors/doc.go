// Package actors is the proving engine as protoactor-go actors, with no I/O
// and no clock of its own: a Scheduler (jobs, the partition queue,
// priorities, retries, cancellation), one Device actor per GPU (its VRAM
// ledger and the budget design's reservations), the Lock actors of the
// device's lock design, and the Workers (N per device) that walk a partition
// through its stages.
//
// The lock design — how workers share one GPU — is a swappable part: each
// design is a protocol of its own (design_single.go, design_budget.go, and
// Phase 10's three versions in design_split.go with their notes in
// design_split_first.go and design_split_devsync.go), registered in
// design.go, and LookupDesign tells tools its lock names. The designs launch
// kernels asynchronously, as cuzk does, and observe their end with a sync.
//
// Everything the actors take from the world comes through a Runtime: the
// clock, a seeded random source, timers (After), and Start, which begins a
// stage or a device operation whose completion comes back as a WorkDone
// message. Package runner drives the actors on the wall clock over real or
// emulated devices; package sim drives the same actors on a virtual clock
// over a model of the GPU, so that a design can be judged before hardware
// runs it. TestActorsUseOnlyTheRuntime keeps this package free of time,
// goroutines and global randomness.
//
// What happens is reported as one stream of Events to an Observer (metrics,
// traces, progress, the simulator's report); what must survive a crash is
// recorded through a Journal before the actors act on it. Invariants — one
// lease per worker and lock, a ledger within the device, each partition
// settled once — are checked where they hold, and a broken one panics with
// the state that broke it.
package actors
