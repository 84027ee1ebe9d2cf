package actors

import "github.com/cuzk/cuzk/gpu"

// splitProto is cuzk's Phase 10 final design: mem_mtx without any
// device-wide sync, and a fallback that allocates under compute_mtx when
// pre-staging finds too little free memory.
//
//	lock mem → MallocAsync → CopyIn → unlock mem
//	lock compute → Compute → FreeAsync → unlock compute
//
//	on OOM under mem:
//	unlock mem → lock compute → MallocAsync → CopyIn → Compute → FreeAsync → unlock compute
//
// Why the fallback works, step by step:
//  1. Worker A holds compute_mtx and 12 GiB; B has pre-staged another 12 GiB
//     and waits for compute_mtx.
//  2. C takes mem_mtx and asks the pool for 12 GiB: the device has less
//     free, and no freed block is pending: OOM. C releases mem_mtx at once,
//     so it never holds mem_mtx while waiting.
//  3. C waits for compute_mtx behind B. By the time it holds it, A has
//     finished and freed its block with FreeAsync; only the compute_mtx
//     holder computes, so that block's stream is idle.
//  4. C's allocation reuses A's block (pending on A's stream; the pool makes
//     C's stream wait for A's, which has already run past the free).
//
// The hazard it accepts: step 4 depends on the pool's cross-stream reuse. With
// reuse off, nothing observes A's free (no sync anywhere in the design), and
// the fallback OOMs too; that attempt fails and the partition is retried.
// And a successful pre-stage may itself have reused a pending block of a
// stream whose kernel still runs: the copy then silently waits behind that
// kernel while C holds mem_mtx.
type splitProto struct {
	step     int
	buf      gpu.Buffer
	fellBack bool
}

const (
	splitWaitMem = iota
	splitAlloc
	splitCopy
	splitWaitCompute
	splitFallbackAlloc
	splitFallbackCopy
	splitCompute
	splitFree
)

func (s *splitProto) start(w *worker) {
	s.step = splitWaitMem
	w.acquire("mem", 0)
}

func (s *splitProto) granted(w *worker, lock string) {
	switch s.step {
	case splitWaitMem:
		w.beginStage(StageStage)
		s.step = splitAlloc
		w.submit(gpu.Op{Kind: gpu.OpMallocAsync, Bytes: w.cur.vram})
	case splitWaitCompute:
		if s.fellBack {
			w.beginStage(StageStage)
			s.step = splitFallbackAlloc
			w.submit(gpu.Op{Kind: gpu.OpMallocAsync, Bytes: w.cur.vram})
			return
		}
		s.compute(w)
	}
}

func (s *splitProto) compute(w *worker) {
	w.beginStage(StageCompute)
	s.step = splitCompute
	w.submit(gpu.Op{Kind: gpu.OpCompute, Kernel: w.kernel()})
}

func (s *splitProto) done(w *worker, op gpu.Op, r gpu.Result) {
	if r.Err != nil && s.step == splitAlloc && isOOM(r.Err) {
		err := opErr(w, op, r.Err)
		w.release("mem")
		w.endStage(err)
		w.fallback(err)
		s.fellBack = true
		s.step = splitWaitCompute
		w.acquire("compute", 0)
		return
	}
	if r.Err != nil {
		w.fail(opErr(w, op, r.Err))
		return
	}
	switch s.step {
	case splitAlloc, splitFallbackAlloc:
		s.buf = r.Buffer
		w.vramChange(w.cur.vram)
		if s.step == splitAlloc {
			s.step = splitCopy
		} else {
			s.step = splitFallbackCopy
		}
		w.submit(gpu.Op{Kind: gpu.OpCopyIn, Buffer: s.buf, Bytes: w.cur.vram})
	case splitCopy:
		w.release("mem")
		w.endStage(nil)
		s.step = splitWaitCompute
		w.acquire("compute", 0)
	case splitFallbackCopy:
		w.endStage(nil)
		s.compute(w)
	case splitCompute:
		w.endStage(nil)
		s.step = splitFree
		w.submit(gpu.Op{Kind: gpu.OpFreeAsync, Buffer: s.buf})
	case splitFree:
		w.vramChange(-w.cur.vram)
		w.release("compute")
		w.finish()
	}
}
