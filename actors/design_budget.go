package actors

import "github.com/cuzk/cuzk/gpu"

// budgetProto is this project's design: device memory is reserved from the
// device actor's ledger before anything touches the device, so allocation can
// neither fail nor wait on another stream, and no device-wide operation is on
// the hot path.
//
//	reserve budget(VRAM, kernel scratch) → MallocAsync → CopyIn
//	lock compute → launch → FreeAsync → RecordEvent → EventSync → unlock compute
//	return budget(VRAM)
//
// The launch returns at once and the free is enqueued right behind the
// kernel on the same stream, as in cuzk; the event recorded after the free
// is synchronized under compute_mtx, since that is where the kernel is seen
// to end.
//
// The hazards it is built against, step by step:
//
// Reservation before allocation (the split design's OOM):
//  1. A computes holding 12 GiB; B pre-staged 12 GiB; the card has 32 GiB.
//  2. C wants 12 GiB. Under split it would ask the pool, fail, and fall back.
//  3. Here C asks the ledger first: 24 GiB are reserved, 12 more do not fit,
//     so C waits, in FIFO order, without holding any lock and without
//     touching the device. No OOM is ever produced, so none needs handling.
//
// Returning a reservation only after the free is observed (the pending-free
// hazard):
//  1. A's FreeAsync is queued behind its kernel on A's stream. Until a sync
//     observes it, the pool cannot give the block to anyone else except by
//     making the taker's stream wait for A's stream (hidden serialization),
//     and TrimPool cannot return it.
//  2. If A returned its 12 GiB to the ledger right after FreeAsync, C's
//     reservation would succeed, and C's MallocAsync would find neither free
//     device memory nor an observed block: it would OOM, or silently wait on
//     A's stream.
//  3. So A records an event after the free and returns the reservation only
//     when EventSync on that event completes: the block is then observed and
//     cached in the pool, and any stream's next MallocAsync takes it at once.
//     The event sync waits only for A's own stream, never for B's kernel.
//
// With the ledger never above the device's memory, what the pool holds
// (live, pending and cached blocks) stays within it too, and an allocation
// always finds cached blocks or free device memory: the pool grows only while
// there is room, and cross-stream reuse is never needed.
//
// Overlap: staging needs only a reservation, so B copies its inputs while A
// computes; compute_mtx alone orders kernels, which share the compute engine
// anyway.
//
// Room for a kernel's scratch (a kernel that allocates its work space from
// the pool while it runs, JobSpec.Scratch): the reservations hold the
// partitions' buffers, and beside their sum the ledger keeps room for the
// largest scratch among the partitions holding them. Kernels run one at a
// time under compute_mtx, and the one running holds a reservation, so its
// scratch always fits; counting every partition's scratch would reserve
// memory no kernel can use at once and stage fewer partitions ahead.
//
// What it assumes: the ledger's capacity (gpu.Info.Total) is memory the pool
// can actually have — nothing else on the device allocates behind its back
// beyond the scratch the jobs declare.
type budgetProto struct {
	step  int
	buf   gpu.Buffer
	event gpu.Event
}

const (
	budgetWaitReserve = iota
	budgetAlloc
	budgetCopy
	budgetWaitCompute
	budgetCompute
	budgetFree
	budgetRecord
	budgetSync
)

func (s *budgetProto) start(w *worker) {
	s.step = budgetWaitReserve
	w.reserve("budget", w.cur.vram, w.cur.scratch)
}

func (s *budgetProto) granted(w *worker, lock string) {
	switch s.step {
	case budgetWaitReserve:
		w.beginStage(StageStage)
		s.step = budgetAlloc
		w.submit(gpu.Op{Kind: gpu.OpMallocAsync, Bytes: w.cur.vram})
	case budgetWaitCompute:
		w.beginStage(StageCompute)
		s.step = budgetCompute
		w.submit(gpu.Op{Kind: gpu.OpCompute, Kernel: w.kernel(), Async: true})
	}
}

func (s *budgetProto) done(w *worker, op gpu.Op, r gpu.Result) {
	if r.Err != nil {
		w.fail(opErr(w, op, r.Err))
		return
	}
	switch s.step {
	case budgetAlloc:
		s.buf = r.Buffer
		w.vramChange(w.cur.vram)
		s.step = budgetCopy
		w.submit(gpu.Op{Kind: gpu.OpCopyIn, Buffer: s.buf, Bytes: w.cur.copy})
	case budgetCopy:
		w.endStage(nil)
		s.step = budgetWaitCompute
		w.acquire("compute", 0)
	case budgetCompute:
		s.step = budgetFree
		w.submit(gpu.Op{Kind: gpu.OpFreeAsync, Buffer: s.buf})
	case budgetFree:
		s.step = budgetRecord
		w.submit(gpu.Op{Kind: gpu.OpRecordEvent})
	case budgetRecord:
		s.event = r.Event
		s.step = budgetSync
		w.submit(gpu.Op{Kind: gpu.OpEventSync, Event: s.event})
	case budgetSync:
		w.endStage(nil)
		w.vramChange(-w.cur.vram)
		w.release("compute")
		w.release("budget")
		w.finish()
	}
}
