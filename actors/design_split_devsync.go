package actors

import "github.com/cuzk/cuzk/gpu"

// devsyncProto is cuzk's Phase 10 second attempt: the gpu lock split into
// mem_mtx and compute_mtx, with a device-wide sync and a pool trim inside
// mem_mtx so that the pool gives memory back before the next allocation.
//
//	lock mem → MallocAsync → CopyIn → DeviceSync → TrimPool(0) → unlock mem
//	lock compute → Compute → FreeAsync → unlock compute
//
// The hazard it walked into, step by step:
//  1. Worker A holds compute_mtx; its kernel runs for ~1.8 s.
//  2. Worker B takes mem_mtx, allocates and copies its inputs (~18 ms).
//  3. B calls DeviceSync to make A's earlier frees observable, so that
//     TrimPool can return them to the device.
//  4. DeviceSync is device-global: it returns only when A's kernel is done.
//  5. So B holds mem_mtx for as long as A computes, and worker C, which
//     only wants to pre-stage, waits behind B: the two locks are serialized
//     again and the split buys nothing.
//
// Nothing here names that outcome: it follows from the device's DeviceSync
// semantics (emulated device, simulator model, or the real GPU).
type devsyncProto struct {
	step int
	buf  gpu.Buffer
}

const (
	devsyncWaitMem = iota
	devsyncAlloc
	devsyncCopy
	devsyncSync
	devsyncTrim
	devsyncWaitCompute
	devsyncCompute
	devsyncFree
)

func (s *devsyncProto) start(w *worker) {
	s.step = devsyncWaitMem
	w.acquire("mem", 0)
}

func (s *devsyncProto) granted(w *worker, lock string) {
	switch s.step {
	case devsyncWaitMem:
		w.beginStage(StageStage)
		s.step = devsyncAlloc
		w.submit(gpu.Op{Kind: gpu.OpMallocAsync, Bytes: w.cur.vram})
	case devsyncWaitCompute:
		w.beginStage(StageCompute)
		s.step = devsyncCompute
		w.submit(gpu.Op{Kind: gpu.OpCompute, Kernel: w.kernel()})
	}
}

func (s *devsyncProto) done(w *worker, op gpu.Op, r gpu.Result) {
	if r.Err != nil {
		// An OOM here has no fallback in this design: the attempt fails and
		// the scheduler retries the partition.
		w.fail(opErr(w, op, r.Err))
		return
	}
	switch s.step {
	case devsyncAlloc:
		s.buf = r.Buffer
		w.vramChange(w.cur.vram)
		s.step = devsyncCopy
		w.submit(gpu.Op{Kind: gpu.OpCopyIn, Buffer: s.buf, Bytes: w.cur.vram})
	case devsyncCopy:
		s.step = devsyncSync
		w.submit(gpu.Op{Kind: gpu.OpDeviceSync})
	case devsyncSync:
		s.step = devsyncTrim
		w.submit(gpu.Op{Kind: gpu.OpTrimPool, Bytes: 0})
	case devsyncTrim:
		w.release("mem")
		w.endStage(nil)
		s.step = devsyncWaitCompute
		w.acquire("compute", 0)
	case devsyncCompute:
		w.endStage(nil)
		s.step = devsyncFree
		w.submit(gpu.Op{Kind: gpu.OpFreeAsync, Buffer: s.buf})
	case devsyncFree:
		w.vramChange(-w.cur.vram)
		w.release("compute")
		w.finish()
	}
}
