package sim

import (
	"fmt"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/model"
)

// Device is the simulated GPU. It implements gpu.Device with CUDA's semantics
// as measured on the H200 (docs/cuda-facts.md), and knows nothing of lock
// designs. Every decision about order, waiting and memory — streams as FIFO
// queues, device-wide waits, the VRAM ledger, the stream-ordered pool — is
// gpu/model's, the same state machine the emulated device drives; this driver
// adds the costs and the clock:
//
//   - Kernels of every stream share one compute engine by processor sharing;
//     host→device copies share one copy engine (the bus) the same way, or
//     with the profile's copy_fifo are served by it one at a time in the
//     order they were issued; the two engines run concurrently.
//   - Host calls cost what the profile says (cudaMalloc, cudaMemGetInfo,
//     pinned allocation, a first and a repeated pool growth, a cudaFree and
//     a trim by the bytes they give back).
//   - A cudaFree leaves work on the copy engine when it returns
//     (free_copy_work_ms_per_gib): the copies that follow share the engine
//     with it, so a copy made right after a large free takes longer. What
//     delays the copy is the bytes freed, never who freed them.
//   - A kernel takes the profile's scratch from the pool while it runs.
//   - With the profile's kernel_slowdown_copy or kernel_slowdown_cpu, the
//     kernels run slower while a copy is on the copy engine or CPU stages
//     keep the host's cores busy (interferenceStretch): what slows a kernel
//     is what runs beside it, never who runs it.
//   - With the profile's pool_ops_serialize, the pool does its mapping work
//     one call at a time (poolHold): a growth or a trim holds the pool for
//     what it costs, and the other pool calls — on any thread, a kernel's
//     scratch before it runs and when it ends — wait for it.
//   - With stream_sync_waits_pool too, a stream sync made while the pool is
//     held returns no earlier than the hold ends, even on an idle stream.
//   - With malloc_waits_free_work, a cudaMalloc that needs the bytes of a
//     cudaFree whose copy-engine work is pending waits for that work, and
//     at the least malloc_free_wait_ms_per_gib after the free (mallocWait).
//   - With scratch_oom_waits_copies, a kernel whose scratch does not fit
//     returns its failure once the copies in progress (running or queued)
//     have ended (afterCopies), as on the H200; without, at once. With
//     scratch_oom_at_once_after_trim too, only until the pool's first trim.
//   - An Async copy or launch returns to the host at once; its completion is
//     seen by a later synchronization.
//
// Submit never calls done inline: completions are events on the kernel's
// timeline, so an actor never re-enters itself.
type Device struct {
	k    *Kernel
	info gpu.Info
	prof DeviceProfile
	m    *model.Device

	compute *psServer
	copier  *psServer

	deviceWaitDur time.Duration

	// poolFree is when the pool's mapping work queued so far ends
	// (pool_ops_serialize).
	poolFree time.Duration
	// poolWorking counts the pool's mapping works in progress
	// (kernel_slowdown_pool).
	poolWorking int
	// dirty are the cudaFrees whose bytes a cudaMalloc cannot have yet
	// (their copy-engine work or malloc_free_wait_ms_per_gib pending),
	// oldest first (malloc_waits_free_work).
	dirty []*freeWork
	// ballast: the device has less memory than its profile's card, the rest
	// held by the allocation a VRAM limit makes (pool_growth_ballast_ms_per_gib).
	ballast bool
	// trimmed: a TrimPool has run (scratch_oom_at_once_after_trim).
	trimmed bool
	// rest is, by stream, the bytes of a partition staged alone that the
	// next kernel on the stream copies as it starts (stages_alone).
	rest map[gpu.Stream]int64
}

// ballastMin is how much less memory than its card a device must have to
// be that card under a VRAM limit: less is rounding.
const ballastMin = int64(1) << 30

// freeWork is what one cudaFree left on the copy engine, and how long its
// bytes stay taken for a cudaMalloc (malloc_free_wait_ms_per_gib).
type freeWork struct {
	bytes   int64
	until   time.Duration // the bytes are not free before this instant
	waiters []func()
}

var _ gpu.Device = (*Device)(nil)

// simItem is what the driver keeps with a stream item: its cost, and the
// host call to complete when it does.
type simItem struct {
	work   float64 // solo ns on its engine
	label  string
	engine *psServer
	name   string           // "compute" or "copy", for timelines
	done   func(gpu.Result) // nil for an Async op: its call returned at enqueue
	copied int64            // a copy's Result.Copied (stages_alone); 0: its Bytes
	duty   float64          // a kernel's share of its run that needs the copy engine (stream_gib)
}

// simWait is what the driver keeps with a host wait.
type simWait struct {
	start time.Duration
	cost  time.Duration // host time after the wait (pinned allocation)
	// until: the wait returns no earlier (stream_sync_waits_pool: the end
	// of the pool's work in progress when it was made).
	until time.Duration
	done  func(gpu.Result)
}

func newDevice(k *Kernel, index int, total int64, mem DeviceMemory, prof DeviceProfile, policy gpu.PoolPolicy) *Device {
	name := prof.Name
	if name == "" {
		name = "simulated GPU"
	}
	// A device smaller than its card is the card under a limit, whose
	// ballast leaves a little less than the limit free.
	ballast := int64(prof.VRAMGiB*float64(gib))-total >= ballastMin
	var short int64
	if ballast {
		short = int64(prof.LimitShortfallMiB * (1 << 20))
	}
	taken := int64(prof.ContextMiB*(1<<20)) + mem.Resident + short
	m, err := model.New(model.Options{Index: index, Total: total, Context: taken, Pool: policy,
		StartFailedWork: prof.ScratchOOMWaitsCopies})
	if err != nil {
		// The scenario's checks keep memory positive and the context inside
		// it; anything else is a bug here.
		panic(fmt.Sprintf("sim: device %d: %v", index, err))
	}
	d := &Device{
		k: k,
		// The designs' ledger sees what the ballast left, as
		// gpuprove.NewDevice reports it.
		info:    gpu.Info{Index: index, Name: name, Total: max(total-short-mem.Resident-mem.Headroom, 1)},
		prof:    prof,
		m:       m,
		ballast: ballast,
		rest:    map[gpu.Stream]int64{},
	}
	d.compute = newPSServer(k, equalShare)
	d.copier = newPSServer(k, equalShare)
	if prof.CopyFIFO {
		d.copier.rates = firstServed
	}
	// Without the factors the engines stay exactly as they were: no extra
	// rate changes, no extra events, so every prediction made without them
	// is reproduced byte for byte.
	if d.interfered() {
		d.compute.rates = d.stretchedShare
		if d.copiesSlowKernels() {
			d.copier.changed = append(d.copier.changed, d.restretch)
		}
		if prof.KernelSlowdownCPU > 0 {
			d.k.cpu.ps.changed = append(d.k.cpu.ps.changed, d.restretch)
		}
	}
	return d
}

// interfered reports whether copies, CPU stages or the pool's mapping work
// slow this device's kernels.
func (d *Device) interfered() bool {
	return d.copiesSlowKernels() || d.prof.KernelSlowdownCPU > 0 || d.prof.KernelSlowdownPool > 0
}

// copiesSlowKernels reports whether a copy on the copy engine slows the
// kernels: by the SMs' share (kernel_slowdown_copy) or by the engine the
// kernels stream their keys through (stream_gib).
func (d *Device) copiesSlowKernels() bool {
	return d.prof.KernelSlowdownCopy > 0 || d.k.profile.Partition.StreamGiB > 0
}

// poolWorks marks the pool's mapping work from start to end (start no
// earlier than now) for kernel_slowdown_pool: the kernels' rates change as
// it begins and as it ends.
func (d *Device) poolWorks(start, end time.Duration) {
	if d.prof.KernelSlowdownPool <= 0 || end <= start {
		return
	}
	d.k.At(start, func() {
		d.poolWorking++
		d.restretch()
	})
	d.k.At(end, func() {
		d.poolWorking--
		d.restretch()
	})
}

// stretchedShare is equalShare slowed by what runs beside the kernels; a
// kernel that streams its keys (stream_gib) also loses, while a copy holds
// the copy engine, the share of its run that needs the engine.
func (d *Device) stretchedShare(jobs []*psJob) {
	equalShare(jobs)
	s := d.interferenceStretch()
	copying := d.copying()
	for _, j := range jobs {
		j.rate /= s
		if copying && j.duty > 0 {
			j.rate *= 1 - j.duty
		}
	}
}

// interferenceStretch is how many times longer a kernel takes now than on a
// quiet machine: 1+kernel_slowdown_copy while a copy is on the copy engine,
// times 1+kernel_slowdown_cpu·u, u the share of the host's cores the running
// CPU stages ask for (at most 1), times 1+kernel_slowdown_pool while the
// pool's mapping work is in progress. The first two are what `cuzk bench
// interference` measures, a kernel alone against the same kernel beside
// endless copies or beside every core busy; the third what traces of
// several workers show (CalibratePoolBeside).
func (d *Device) interferenceStretch() float64 {
	s := 1.0
	if d.copying() {
		s *= 1 + d.prof.KernelSlowdownCopy
	}
	if d.poolWorking > 0 {
		s *= 1 + d.prof.KernelSlowdownPool
	}
	if f := d.prof.KernelSlowdownCPU; f > 0 {
		var want float64
		for _, j := range d.k.cpu.ps.jobs {
			want += j.cores
		}
		s *= 1 + f*min(1, want/float64(d.k.cpu.host.Cores))
	}
	return s
}

// afterCopies calls fn, as an event, once the host→device copies on the
// copy engine now (running or queued; not a free's release work) have
// ended: at once when there are none.
func (d *Device) afterCopies(fn func()) {
	left := 0
	for _, j := range d.copier.jobs {
		if j.background {
			continue
		}
		left++
		done := j.done
		j.done = func(start time.Duration) {
			done(start)
			if left--; left == 0 {
				d.k.At(d.k.now, fn)
			}
		}
	}
	if left == 0 {
		d.k.At(d.k.now, fn)
	}
}

// copying says whether a host→device copy is on the copy engine (a free's
// release work there is not one).
func (d *Device) copying() bool {
	for _, j := range d.copier.jobs {
		if !j.background {
			return true
		}
	}
	return false
}

// restretch brings the kernels' progress up to now at the rates they had,
// then gives them the rates of what runs beside them from now on: the copy
// engine and the host's CPU call it whenever a copy or a CPU stage starts
// or ends.
func (d *Device) restretch() {
	d.compute.advance()
	d.compute.reschedule()
}

// Info implements gpu.Device.
func (d *Device) Info() gpu.Info { return d.info }

// NewStream implements gpu.Device.
func (d *Device) NewStream() gpu.Stream { return d.m.NewStream() }

// InjectOOM makes the next allocation on the device fail with out-of-memory,
// whatever is free.
func (d *Device) InjectOOM() { d.m.InjectOOM() }

// DeviceStats is what a device did over a run.
type DeviceStats struct {
	Peak         int64         // highest device memory in use, bytes
	ComputeBusy  time.Duration // time at least one kernel ran
	CopyBusy     time.Duration
	OOMs         int // allocations that failed
	WaitedAllocs int // pool allocations that made their stream wait for another stream
	DeviceWaits  int // device-wide waits (sync, free, pinned alloc) that waited for work
	DeviceWaited time.Duration
	PoolReserved int64
}

// Stats reports the device's counters.
func (d *Device) Stats() DeviceStats {
	m := d.m.Stats()
	return DeviceStats{
		Peak: m.Peak, ComputeBusy: d.compute.busyUntilNow(), CopyBusy: d.copier.busyUntilNow(),
		OOMs: m.OOMs, WaitedAllocs: m.CrossWaits, DeviceWaits: m.DeviceWaits, DeviceWaited: d.deviceWaitDur,
		PoolReserved: m.PoolReserved,
	}
}

// Submit implements gpu.Device.
func (d *Device) Submit(op gpu.Op, done func(gpu.Result)) {
	if done == nil {
		done = func(gpu.Result) {}
	}
	now := d.k.now
	reply := func(after time.Duration, r gpu.Result) {
		d.k.At(now+after, func() { done(r) })
	}
	var tag any
	var after time.Duration
	switch op.Kind {
	case gpu.OpMemInfo:
		after = ms(d.prof.MemInfoMs)
	case gpu.OpMalloc:
		if op.Bytes > 0 {
			after = ms(d.prof.MallocMs)
			if d.prof.MallocWaitsFreeWork {
				if fw := d.mallocWait(op.Bytes); fw != nil {
					c := d.m.Submit(op, nil)
					if c.Result.Err != nil {
						reply(0, c.Result)
						return
					}
					fw.waiters = append(fw.waiters, func() { reply(d.k.now-now+after, c.Result) })
					return
				}
			}
		}
	case gpu.OpCopyIn:
		bytes, copied := d.stageBytes(op)
		tag = &simItem{work: d.copyWork(bytes), label: fmt.Sprintf("copy %s", gpu.FormatBytes(bytes)), engine: d.copier, name: "copy", done: done, copied: copied}
	case gpu.OpCompute:
		if op.Kernel != nil {
			cost, err := d.k.profile.stageCost(actors.StageCompute, op.Kernel.Size)
			if err != nil {
				reply(0, gpu.Result{Err: fmt.Errorf("device %d %s: %w", d.info.Index, op.Kind, err)})
				return
			}
			cost = d.k.jitter(actors.StageCompute, cost)
			d.k.cpu.Computing(op.Kernel.Partition)
			tag = &simItem{work: float64(cost), label: op.Kernel.Partition, engine: d.compute, name: "compute", done: done,
				duty: d.streamDuty(op.Kernel.Size, cost)}
			if op.Kernel.Scratch == 0 {
				k := *op.Kernel
				k.Scratch = d.k.profile.KernelScratch(k.Size)
				op.Kernel = &k
			}
		}
	case gpu.OpHostAlloc:
		after = ms(d.prof.HostAllocMs + d.prof.HostAllocMsPerGiB*float64(op.Bytes)/float64(gib))
	}
	if it, ok := tag.(*simItem); ok && op.Async {
		it.done = nil
	}
	if op.Kind.Synchronizes() {
		if tag == nil {
			w := &simWait{start: now, done: done}
			if op.Kind == gpu.OpStreamSync && d.prof.StreamSyncWaitsPool && d.poolFree > now {
				w.until = d.poolFree
			}
			tag = w
		}
	}
	c := d.m.Submit(op, tag)
	var hold time.Duration // host time the call spends on the pool's mapping work
	switch op.Kind {
	case gpu.OpTrimPool:
		d.trimmed = true
		hold = perGiB(d.prof.TrimMsPerGiB, c.Result.Released)
	case gpu.OpMallocAsync:
		hold = d.growth(c)
	}
	if hold > 0 && d.prof.PoolSlowdownKernel > 0 && len(d.compute.jobs) > 0 {
		hold = time.Duration(float64(hold) * (1 + d.prof.PoolSlowdownKernel))
	}
	work := hold // the mapping work itself, which ends the call
	if d.prof.PoolOpsSerialize && (op.Kind == gpu.OpTrimPool || op.Kind == gpu.OpMallocAsync) {
		hold = d.poolHold(hold)
	}
	d.poolWorks(now+after+hold-work, now+after+hold)
	if op.Kind == gpu.OpTrimPool && c.Result.Released > 0 {
		d.leaveTrimWork(now+after+hold-work, c.Result.Released)
	}
	d.dispatch()
	if c.Item != nil && op.Async {
		var r gpu.Result
		if it, ok := tag.(*simItem); ok {
			r.Copied = it.copied
		}
		reply(0, r)
		return
	}
	if c.Item != nil || c.Wait != nil {
		return // completes through the model's outputs
	}
	reply(after+hold, c.Result)
}

// streamDuty is the share of a kernel of size constraints and solo time
// cost that its own streaming of the keys takes on the copy engine alone
// (stream_gib at h2d_gbps), times the profile's stream_stall (absent: 1),
// at most 1; 0 when the keys are resident.
func (d *Device) streamDuty(size int, cost time.Duration) float64 {
	b := d.k.profile.PartitionStream(size)
	if b <= 0 || cost <= 0 {
		return 0
	}
	return min(1, d.prof.streamStall()*d.copyWork(b)/float64(cost))
}

// copyWork is how long a copy of bytes takes on the copy engine alone, ns.
func (d *Device) copyWork(bytes int64) float64 {
	return float64(bytes) / (d.prof.H2DGBps * 1e9) * 1e9
}

// stageBytes is what a copy into op's buffer moves, and what its result
// reports as copied (0: op.Bytes). With the profile's stages_alone, a copy
// of a whole buffer made while no kernel runs on the device moves the
// profile's share of it and leaves the rest to the next kernel on op's
// stream (copyRest); beside a running kernel it moves everything, as the
// prover's staging does (gpuprove's stagesAlone).
func (d *Device) stageBytes(op gpu.Op) (bytes, copied int64) {
	delete(d.rest, op.Stream)
	share := d.k.profile.aloneShare()
	if share >= 1 || len(d.compute.jobs) > 0 {
		return op.Bytes, 0
	}
	if whole, ok := d.m.BufferBytes(op.Buffer); !ok || whole != op.Bytes {
		return op.Bytes, 0
	}
	bytes = int64(float64(op.Bytes) * share)
	d.rest[op.Stream] = op.Bytes - bytes
	return bytes, bytes
}

// copyRest puts the rest of a partition staged alone on the copy engine as
// its kernel starts on stream s, beside the copies there: the prover's
// compute issues those copies on a stream of their own at its start. They
// are work beside the copies, not a copy that slows the kernels
// (kernel_slowdown_copy) or that a failed kernel waits for: the kernel's
// fitted time already holds them.
func (d *Device) copyRest(s gpu.Stream) {
	r := d.rest[s]
	delete(d.rest, s)
	if r <= 0 {
		return
	}
	label := "rest " + gpu.FormatBytes(r)
	d.copier.add(&psJob{remaining: d.copyWork(r), label: label, background: true, done: func(start time.Duration) {
		d.activity("copy", s, label, start)
	}})
}

// poolHold queues a pool call made now whose own mapping work takes cost:
// it starts when the work queued before it ends, and holds the pool for
// cost. It returns how long after now the call is done.
func (d *Device) poolHold(cost time.Duration) time.Duration {
	start := max(d.k.now, d.poolFree)
	if cost > 0 {
		d.poolFree = start + cost
	}
	return start - d.k.now + cost
}

// mallocWait is the pending free whose work a cudaMalloc of bytes made now
// must wait for: the allocation needs more than the memory no pending free
// gave back, and the frees' work ends oldest first. nil: it need not wait.
func (d *Device) mallocWait(bytes int64) *freeWork {
	var dirty int64
	for _, f := range d.dirty {
		dirty += f.bytes
	}
	short := bytes - (d.m.Free() - dirty)
	if short <= 0 || bytes > d.m.Free() {
		return nil // fits in clean memory, or not at all (an OOM at once)
	}
	for _, f := range d.dirty {
		short -= f.bytes
		if short <= 0 {
			return f
		}
	}
	return d.dirty[len(d.dirty)-1]
}

// growth is the host time a pool growth costs: the profile's per-call cost
// (plus its per-GiB term) for a first growth, its repeated-growth cost (plus
// its per-GiB term) for a growth back to a size the pool had before; under
// a VRAM limit's ballast, the ballast's per-GiB term on top of either.
func (d *Device) growth(c model.Call) time.Duration {
	if c.Grew == 0 {
		return 0
	}
	var extra time.Duration
	if d.ballast {
		extra = perGiB(d.prof.PoolGrowthBallastMsPerGiB, c.Grew)
	}
	if !c.FirstGrowth {
		return ms(d.prof.PoolRegrowthMs) + perGiB(d.prof.PoolRegrowthMsPerGiB, c.Grew) + extra
	}
	return ms(d.prof.PoolGrowthMs+d.prof.PoolGrowthMsPerGiB*float64(c.Grew)/float64(gib)) + extra
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// perGiB is a cost of msPerGiB for every GiB of bytes.
func perGiB(msPerGiB float64, bytes int64) time.Duration {
	return ms(msPerGiB * float64(bytes) / float64(gib))
}

// leaveFreeWork puts what a cudaFree of bytes leaves to do on the copy
// engine, where the copies after it share the engine with it; with
// malloc_waits_free_work the bytes stay taken for a cudaMalloc until that
// work ends and malloc_free_wait_ms_per_gib has passed.
func (d *Device) leaveFreeWork(bytes int64) {
	work := perGiB(d.prof.FreeCopyWorkMsPerGiB, bytes)
	var until time.Duration
	if d.prof.MallocWaitsFreeWork {
		until = d.k.now + perGiB(d.prof.MallocFreeWaitMsPerGiB, bytes)
	}
	if work <= 0 && until <= d.k.now {
		return
	}
	label := "free " + gpu.FormatBytes(bytes)
	fw := &freeWork{bytes: bytes, until: until}
	d.dirty = append(d.dirty, fw)
	if work <= 0 {
		d.cleaned(fw)
		return
	}
	d.releaseWork(work, label, func() { d.cleaned(fw) })
}

// leaveTrimWork puts what a trim that released bytes gives the copy engine
// to do (trim_copy_work_ms_per_gib) there at the instant the trim's own
// mapping work starts (at): the host call returns partway through it, and
// the copies after it share the engine with what is left, as with a free's
// work; no cudaMalloc waits for it.
func (d *Device) leaveTrimWork(at time.Duration, released int64) {
	work := perGiB(d.prof.TrimCopyWorkMsPerGiB, released)
	if work <= 0 {
		return
	}
	d.k.At(at, func() { d.releaseWork(work, "trim "+gpu.FormatBytes(released), nil) })
}

// releaseWork puts a release's work (a free's, a trim's) on the copy engine
// now, beside the copies and no copy itself, shown as label in timelines;
// then, if not nil, is called when it is done.
func (d *Device) releaseWork(work time.Duration, label string, then func()) {
	d.copier.add(&psJob{remaining: float64(work), label: label, background: true, done: func(start time.Duration) {
		d.activity("copy", 0, label, start)
		if then != nil {
			then()
		}
	}})
}

// cleaned is called when a free's copy-engine work is done: at fw.until,
// or now if that has passed, it gives the free's bytes back to cudaMalloc
// and wakes the mallocs that waited for them.
func (d *Device) cleaned(fw *freeWork) {
	if fw.until > d.k.now {
		d.k.At(fw.until, func() { d.cleaned(fw) })
		return
	}
	// Frees of different sizes share the engine, so their work may end out
	// of order: drop this one wherever it is.
	for i, f := range d.dirty {
		if f == fw {
			d.dirty = append(d.dirty[:i], d.dirty[i+1:]...)
			break
		}
	}
	for _, w := range fw.waiters {
		w()
	}
}

// dispatch carries out the model's decisions in the order it took them:
// work starts on its engine, completed work and met waits return to the
// host as events at the current instant.
func (d *Device) dispatch() {
	for _, o := range d.m.Outputs() {
		switch o.Kind {
		case model.OutStart:
			it := o.Item
			finish := func() {
				if err := d.m.FinishErr(it, it.Err); err != nil {
					panic(fmt.Sprintf("sim: %v", err))
				}
				d.dispatch()
			}
			if it.Op.Kind == gpu.OpCompute {
				if it.Err != nil {
					delete(d.rest, it.Stream)
				} else {
					d.copyRest(it.Stream)
				}
			}
			if it.Err != nil {
				// A kernel whose scratch did not fit
				// (scratch_oom_waits_copies): its failure returns
				// once the copies in progress have ended, or at once
				// from a pool trimmed before
				// (scratch_oom_at_once_after_trim).
				if d.prof.ScratchOOMAtOnceAfterTrim && d.trimmed {
					finish()
					continue
				}
				d.afterCopies(finish)
				continue
			}
			w := it.Tag.(*simItem)
			grow := d.growth(model.Call{Grew: it.ScratchGrew, FirstGrowth: it.ScratchFirstGrowth})
			if d.prof.PoolOpsSerialize && it.Op.Kind == gpu.OpCompute && it.Op.Kernel.Scratch > 0 {
				// The kernel's host code allocates its scratch before
				// it launches, behind the pool's work in flight, and
				// its scratch goes back to the pool as it ends, which
				// its stream cannot pass while the pool is held.
				job := &psJob{remaining: w.work, label: w.label, duty: w.duty, done: func(start time.Duration) {
					d.activity(w.name, it.Stream, w.label, start)
					if d.poolFree > d.k.now {
						d.k.At(d.poolFree, finish)
						return
					}
					finish()
				}}
				if h := d.poolHold(grow); h > 0 {
					d.k.At(d.k.now+h, func() { w.engine.add(job) })
				} else {
					// The pool is free: the kernel runs from now, so a
					// pool call made later at this instant (another
					// worker's trim right after the launch) runs beside
					// it, as on the card.
					w.engine.add(job)
				}
				continue
			}
			// Growing the pool for the kernel's scratch is host time
			// inside the kernel's run.
			w.work += float64(grow)
			w.engine.add(&psJob{remaining: w.work, label: w.label, duty: w.duty, done: func(start time.Duration) {
				d.activity(w.name, it.Stream, w.label, start)
				finish()
			}})
		case model.OutComplete:
			w := o.Item.Tag.(*simItem)
			if w.done == nil {
				continue
			}
			r := gpu.Result{Waited: o.Item.Waited, Err: o.Item.Err, Copied: w.copied}
			d.k.At(d.k.now, func() { w.done(r) })
		case model.OutMet:
			d.met(o.Wait)
		}
	}
}

// met returns a host wait at the current instant: the host observes what it
// waited for, pays the call's own cost (a cudaFree's by the bytes it frees),
// and gets its result; a free then leaves its work on the copy engine.
func (d *Device) met(mw *model.Wait) {
	w := mw.Tag.(*simWait)
	d.k.At(d.k.now, func() {
		if mw.Op.Kind.DeviceWide() && mw.Waited {
			d.deviceWaitDur += d.k.now - w.start
		}
		if err := d.m.Observe(mw); err != nil {
			panic(fmt.Sprintf("sim: %v", err))
		}
		ret := func() {
			r := d.m.Return(mw)
			if r.Err == nil && r.Released > 0 {
				d.leaveFreeWork(r.Released)
			}
			w.done(r)
		}
		cost := w.cost + perGiB(d.prof.FreeMsPerGiB, mw.Releases)
		if w.until > d.k.now+cost {
			cost = w.until - d.k.now
		}
		if cost > 0 {
			d.k.At(d.k.now+cost, ret)
			return
		}
		ret()
	})
}

// DeviceActivity is a stretch of engine work, for timelines.
type DeviceActivity struct {
	Device     int
	Engine     string // "compute" or "copy"
	Stream     gpu.Stream
	Label      string
	Start, End time.Duration
}

func (d *Device) activity(engine string, s gpu.Stream, label string, start time.Duration) {
	if d.k.onDevice != nil {
		d.k.onDevice(DeviceActivity{Device: d.info.Index, Engine: engine, Stream: s, Label: label, Start: start, End: d.k.now})
	}
}
