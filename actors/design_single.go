package actors

import "github.com/cuzk/cuzk/gpu"

// singleProto is cuzk's Phase 8/9 design: one "gpu" lock per device, held
// from allocation to free.
//
//	lock gpu → Malloc → CopyIn → launch → StreamSync → Free → unlock gpu
//
// The kernel launch returns at once; the stream sync that reads the results
// back waits for it, and only then is the buffer freed.
//
// Nothing on the device ever runs beside the holder's work, so it cannot OOM
// (short of one partition not fitting) and no wait is hidden; the cost is that
// the device idles while the holder allocates and copies, and while the other
// workers' CPU stages could not have overlapped with device work anyway. Free
// is device-synchronizing, which is harmless here: the holder's own kernel is
// the only work there is.
type singleProto struct {
	step int
	buf  gpu.Buffer
}

const (
	singleWaitLock = iota
	singleAlloc
	singleCopy
	singleCompute
	singleSync
	singleFree
)

func (s *singleProto) start(w *worker) {
	s.step = singleWaitLock
	w.acquire("gpu", 0)
}

func (s *singleProto) granted(w *worker, lock string) {
	w.beginStage(StageStage)
	s.step = singleAlloc
	w.submit(gpu.Op{Kind: gpu.OpMalloc, Bytes: w.cur.vram})
}

func (s *singleProto) done(w *worker, op gpu.Op, r gpu.Result) {
	if r.Err != nil {
		w.fail(opErr(w, op, r.Err))
		return
	}
	switch s.step {
	case singleAlloc:
		s.buf = r.Buffer
		w.vramChange(w.cur.vram)
		s.step = singleCopy
		w.submit(gpu.Op{Kind: gpu.OpCopyIn, Buffer: s.buf, Bytes: w.cur.copy})
	case singleCopy:
		w.endStage(nil)
		w.beginStage(StageCompute)
		s.step = singleCompute
		w.submit(gpu.Op{Kind: gpu.OpCompute, Kernel: w.kernel(), Async: true})
	case singleCompute:
		s.step = singleSync
		w.submit(gpu.Op{Kind: gpu.OpStreamSync})
	case singleSync:
		w.endStage(nil)
		s.step = singleFree
		w.submit(gpu.Op{Kind: gpu.OpFree, Buffer: s.buf})
	case singleFree:
		w.vramChange(-w.cur.vram)
		w.release("gpu")
		w.finish()
	}
}
