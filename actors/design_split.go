package actors

import "github.com/cuzk/cuzk/gpu"

// splitProto is cuzk's Phase 10 design in the three versions it went
// through, which differ only where its protocol did:
//
//	split-first    lock mem → TrimPool(0) → MemInfo → MallocAsync → CopyIn → unlock mem
//	               on too little free: unlock mem → lock compute → MemInfo → MallocAsync → CopyIn
//	split-devsync  lock mem → DeviceSync → TrimPool(0) → MemInfo → MallocAsync → CopyIn → unlock mem
//	               on too little free: unlock mem → lock compute → MallocAsync → CopyIn
//	split          lock mem → TrimPool(0) → MemInfo → MallocAsync → CopyIn → unlock mem
//	               on too little free: unlock mem → lock compute → MallocAsync → CopyIn
//
//	then, all three: (lock compute →) launch → FreeAsync → StreamSync → unlock compute
//
// cuzk pre-stages only when cudaMemGetInfo finds room for the partition
// ("worker 1 found ~5.5 GiB free"); the trim before it returns what the pool
// caches, which cudaMemGetInfo does not count as free. The kernel launch
// returns at once and the cudaFreeAsync of the partition's buffer is
// enqueued right behind it on the same stream, so the free is pending for as
// long as the kernel runs; the stream sync that reads the results back,
// still under compute_mtx, observes it.
//
// Nothing below names an outcome; each follows from the device's semantics.
// See design_split_first.go, design_split_devsync.go and the final split's
// notes in docs/lock-designs.md for what each version met.
type splitProto struct {
	v        splitVariant
	step     int
	buf      gpu.Buffer
	fellBack bool
}

// splitVariant is what distinguishes the three versions of Phase 10.
type splitVariant struct {
	// deviceSync puts a cudaDeviceSynchronize before the trim under
	// mem_mtx, so that the trim can release every free (Phase 10's second
	// try).
	deviceSync bool
	// fallbackCheck makes the fallback ask cudaMemGetInfo too, without a
	// trim, and give up when it finds too little (Phase 10 as first
	// written); otherwise the fallback allocates from the pool directly.
	fallbackCheck bool
}

const (
	splitWaitMem = iota
	splitSync
	splitTrim
	splitInfo
	splitAlloc
	splitCopy
	splitWaitCompute
	splitFallbackInfo
	splitFallbackAlloc
	splitFallbackCopy
	splitLaunch
	splitFree
	splitStreamSync
)

func (s *splitProto) start(w *worker) {
	s.step = splitWaitMem
	w.acquire("mem", 0)
}

func (s *splitProto) granted(w *worker, lock string) {
	switch s.step {
	case splitWaitMem:
		w.beginStage(StageStage)
		if s.v.deviceSync {
			s.step = splitSync
			w.submit(gpu.Op{Kind: gpu.OpDeviceSync})
			return
		}
		s.step = splitTrim
		w.submit(gpu.Op{Kind: gpu.OpTrimPool, Bytes: 0})
	case splitWaitCompute:
		if !s.fellBack {
			s.launch(w)
			return
		}
		w.beginStage(StageStage)
		if s.v.fallbackCheck {
			s.step = splitFallbackInfo
			w.submit(gpu.Op{Kind: gpu.OpMemInfo})
			return
		}
		s.step = splitFallbackAlloc
		w.submit(gpu.Op{Kind: gpu.OpMallocAsync, Bytes: w.cur.vram})
	}
}

func (s *splitProto) launch(w *worker) {
	w.beginStage(StageCompute)
	s.step = splitLaunch
	w.submit(gpu.Op{Kind: gpu.OpCompute, Kernel: w.kernel(), Async: true})
}

// preStageOOM ends the pre-stage for want of memory: mem_mtx is released at
// once and the partition waits for compute_mtx to allocate there.
func (s *splitProto) preStageOOM(w *worker, err error) {
	w.release("mem")
	w.endStage(err)
	w.fallback(err)
	s.fellBack = true
	s.step = splitWaitCompute
	w.acquire("compute", 0)
}

func (s *splitProto) done(w *worker, op gpu.Op, r gpu.Result) {
	if r.Err != nil && s.step == splitAlloc && isOOM(r.Err) {
		s.preStageOOM(w, opErr(w, op, r.Err))
		return
	}
	if r.Err != nil {
		w.fail(opErr(w, op, r.Err))
		return
	}
	switch s.step {
	case splitSync:
		s.step = splitTrim
		w.submit(gpu.Op{Kind: gpu.OpTrimPool, Bytes: 0})
	case splitTrim:
		s.step = splitInfo
		w.submit(gpu.Op{Kind: gpu.OpMemInfo})
	case splitInfo:
		if r.Free < w.cur.vram {
			s.preStageOOM(w, w.oom(op, r.Free))
			return
		}
		s.step = splitAlloc
		w.submit(gpu.Op{Kind: gpu.OpMallocAsync, Bytes: w.cur.vram})
	case splitFallbackInfo:
		if r.Free < w.cur.vram {
			w.fail(w.oom(op, r.Free))
			return
		}
		s.step = splitFallbackAlloc
		w.submit(gpu.Op{Kind: gpu.OpMallocAsync, Bytes: w.cur.vram})
	case splitAlloc, splitFallbackAlloc:
		s.buf = r.Buffer
		w.vramChange(w.cur.vram)
		if s.step == splitAlloc {
			s.step = splitCopy
		} else {
			s.step = splitFallbackCopy
		}
		w.submit(gpu.Op{Kind: gpu.OpCopyIn, Buffer: s.buf, Bytes: w.cur.copy})
	case splitCopy:
		w.release("mem")
		w.endStage(nil)
		s.step = splitWaitCompute
		w.acquire("compute", 0)
	case splitFallbackCopy:
		w.endStage(nil)
		s.launch(w)
	case splitLaunch:
		s.step = splitFree
		w.submit(gpu.Op{Kind: gpu.OpFreeAsync, Buffer: s.buf})
	case splitFree:
		s.step = splitStreamSync
		w.submit(gpu.Op{Kind: gpu.OpStreamSync})
	case splitStreamSync:
		w.endStage(nil)
		w.vramChange(-w.cur.vram)
		w.release("compute")
		w.finish()
	}
}

// splitFinal is cuzk's Phase 10 final design: the device-wide sync dropped
// from mem_mtx, the trim kept, and a fallback that allocates under
// compute_mtx straight from the pool.
//
// Why the fallback works, step by step:
//  1. A holds compute_mtx and 12 GiB; its free is pending behind its kernel.
//  2. B takes mem_mtx, trims (nothing observed to release) and finds too
//     little free: it releases mem_mtx at once and waits for compute_mtx.
//  3. A's stream sync observes its free; A releases compute_mtx.
//  4. B's cudaMallocAsync under compute_mtx takes A's block from the pool
//     at once: it is cached there, observed, and no kernel uses it.
//
// What it accepts: while A's kernel runs, a pre-stage finds room only when
// the card holds two partitions, so on a small card staging rarely overlaps
// compute; and the fallback depends on the pool keeping A's block (the
// release threshold), which another allocation between A's sync and B's may
// take first.
var splitFinal = splitVariant{}
