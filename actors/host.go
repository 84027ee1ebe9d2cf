package actors

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/cuzk/cuzk/gpu"
)

// Synthesis ahead of the GPU, bounded by host memory.
//
// Without the gate each GPU worker synthesizes its own partition, so a device
// with three workers has at most three syntheses running: at porep 2^22 on a
// 16-core host one partition spends 2.15 s in synthesize against 0.32 s of
// GPU compute, and the GPU sits idle most of the time. With
// Config.HostMemLimit set, the scheduler runs the stages before the device
// part itself (synthesize and prep, which hold the same data), on up to
// SynthWorkers partitions at once, for as long as their HostBytes fit under
// the limit; a prepared partition waits in a ready queue until a GPU worker
// is idle, and the worker takes it through the device part and the stages
// after it. A partition's bytes are taken when its synthesis starts and given
// back when it leaves host memory: proved, failed for good, cancelled, or
// retried from its synthesis.
//
// Both queues are in priority order (CRITICAL first, then job, then
// partition). The synthesis queue is strict: when the most urgent partition
// does not fit, nothing behind it starts, so a stream of small low-priority
// partitions cannot starve a large critical one.

// hostSide is the scheduler's part of the gate: the ledger, the synthesis
// slots and the ready queue.
type hostSide struct {
	limit   int64
	held    int64
	holders map[PartitionID]int64

	free  []int                 // free synthesis slots
	runs  map[uint64]*synthesis // Runtime.Start token → the synthesis it belongs to
	token uint64                // last token handed to Runtime.Start
	ready []ready               // prepared partitions waiting for a GPU worker
}

// synthesis is one partition running the stages before the device part in
// one slot.
type synthesis struct {
	q     queued
	slot  int
	stage Stage
	at    time.Duration // when stage began
}

// ready is a prepared partition waiting for a GPU worker since since.
type ready struct {
	q     queued
	since time.Duration
}

func newHostSide(limit int64, slots int) *hostSide {
	h := &hostSide{limit: limit, holders: map[PartitionID]int64{}, runs: map[uint64]*synthesis{}}
	for i := range slots {
		h.free = append(h.free, i)
	}
	return h
}

func (h *hostSide) fits(bytes int64) bool { return h.held+bytes <= h.limit }

// take records that p now holds bytes of host memory.
func (h *hostSide) take(p PartitionID, bytes int64) {
	if b, ok := h.holders[p]; ok {
		panic(fmt.Sprintf("actors: invariant: %s takes %d bytes of host memory while it holds %d already (%s)", p, bytes, b, h))
	}
	if bytes < 0 || !h.fits(bytes) {
		panic(fmt.Sprintf("actors: invariant: %s takes %d bytes of host memory, which do not fit (%s)", p, bytes, h))
	}
	h.holders[p] = bytes
	h.held += bytes
}

// give returns what p holds to the ledger; false when it holds nothing.
func (h *hostSide) give(p PartitionID) bool {
	b, ok := h.holders[p]
	if !ok {
		return false
	}
	delete(h.holders, p)
	h.held -= b
	if h.held < 0 {
		panic(fmt.Sprintf("actors: invariant: host memory held below zero after %s gave back %d bytes (%s)", p, b, h))
	}
	return true
}

// String prints the ledger for an invariant's panic.
func (h *hostSide) String() string {
	ids := make([]string, 0, len(h.holders))
	for p, b := range h.holders {
		ids = append(ids, fmt.Sprintf("%s=%d", p, b))
	}
	slices.Sort(ids)
	return fmt.Sprintf("held %d of %d bytes by %d partitions [%s]; %d syntheses running, %d ready",
		h.held, h.limit, len(h.holders), strings.Join(ids, " "), len(h.runs), len(h.ready))
}

func (h *hostSide) makeReady(q queued, now time.Duration) {
	r := ready{q: q, since: now}
	i, _ := slices.BinarySearchFunc(h.ready, r, func(a, b ready) int { return before(a.q, b.q) })
	h.ready = slices.Insert(h.ready, i, r)
}

// dropReady takes job j's partitions out of the ready queue.
func (h *hostSide) dropReady(j *jobState) []queued {
	var out []queued
	kept := h.ready[:0]
	for _, r := range h.ready {
		if r.q.job == j {
			out = append(out, r.q)
		} else {
			kept = append(kept, r)
		}
	}
	h.ready = kept
	return out
}

// checkHeld asserts that p holds host memory: a partition past its synthesis
// must, or the ledger undercounts what the host holds.
func (h *hostSide) checkHeld(p PartitionID, where string) {
	if _, ok := h.holders[p]; !ok {
		panic(fmt.Sprintf("actors: invariant: %s %s without holding host memory (%s)", p, where, h))
	}
}

// checkLeft asserts that job holds no host memory once all its partitions
// are settled: one that did would be counted against the limit for ever.
func (h *hostSide) checkLeft(job string) {
	for p := range h.holders {
		if p.Job == job {
			panic(fmt.Sprintf("actors: invariant: job %s is done, but %s still holds host memory (%s)", job, p, h))
		}
	}
}

// giveHost returns p's host memory to the gate, if it holds any.
func (s *scheduler) giveHost(p PartitionID) {
	if s.host != nil && s.host.give(p) {
		s.emitHost()
	}
}

func (s *scheduler) emitHost() {
	s.env.emit(Event{Kind: EvHostMem, Worker: -1, Device: -1, Bytes: s.host.held, Count: len(s.host.holders)})
}

// synthesizeAhead starts the stages before the device part for the queued
// partitions, in order, while a slot is free and the head's bytes fit.
func (s *scheduler) synthesizeAhead(c actor.Context) {
	h := s.host
	for len(s.queue) > 0 && len(h.free) > 0 {
		q := s.queue[0]
		if !h.fits(q.job.spec.HostBytes) {
			return
		}
		s.queue = s.queue[1:]
		s.env.emit(Event{Kind: EvQueueDepth, Worker: -1, Device: -1, Count: len(s.queue)})
		p := q.id()
		q.attempts++
		if j := s.env.cfg.Journal; j != nil {
			if err := j.RecordAttempt(p); err != nil {
				s.settle(c, q, attemptEnded{device: -1, worker: -1, p: p, err: fmt.Errorf("%s: record attempt: %w", p, err)})
				continue
			}
		}
		h.take(p, q.job.spec.HostBytes)
		s.emitHost()
		run := &synthesis{q: q, slot: h.free[0]}
		h.free = h.free[1:]
		s.synthesisNext(c, run, 0)
	}
}

// synthesisNext starts the stage before the device part that follows done
// (0: none yet), or, after the last, puts the partition in the ready queue.
// Synthesis stages are reported on device -1, worker = the slot.
func (s *scheduler) synthesisNext(c actor.Context, run *synthesis, done Stage) {
	h := s.host
	before := s.env.cfg.Before
	p := run.q.id()
	if i := slices.Index(before, done); i+1 < len(before) {
		run.stage, run.at = before[i+1], s.env.rt.Now()
		s.env.emit(Event{Kind: EvStageStart, Device: -1, Worker: run.slot, Partition: p, Stage: run.stage})
		h.token++
		h.runs[h.token] = run
		s.env.rt.Start(c.Self(), h.token, StageWork{Stage: run.stage, Partition: p, Size: run.q.job.spec.Size})
		return
	}
	h.free = append(h.free, run.slot)
	h.checkHeld(p, "is prepared")
	q := run.q
	q.prepared, q.continues = true, true
	h.makeReady(q, s.env.rt.Now())
}

// synthesisDone handles the end of a stage the scheduler started.
func (s *scheduler) synthesisDone(c actor.Context, m WorkDone) {
	h := s.host
	if h == nil {
		return
	}
	run, ok := h.runs[m.Token]
	if !ok {
		panic(fmt.Sprintf("actors: invariant: work %d ended in the scheduler, but no synthesis started it (%s)", m.Token, h))
	}
	delete(h.runs, m.Token)
	p := run.q.id()
	e := Event{Kind: EvStageEnd, Device: -1, Worker: run.slot, Partition: p, Stage: run.stage, Took: s.env.rt.Now() - run.at}
	if m.Err != nil {
		e.Err = m.Err.Error()
	}
	s.env.emit(e)
	if m.Err == nil && !run.q.job.stopping {
		s.synthesisNext(c, run, run.stage)
		return
	}
	h.free = append(h.free, run.slot)
	ended := attemptEnded{device: -1, worker: run.slot, p: p, err: m.Err}
	if m.Err == nil {
		// Its job was cancelled: the synthesis ends here.
		ended.err = fmt.Errorf("%s: job cancelled", p)
	} else {
		ended.err = fmt.Errorf("%s: %s: %w", p, run.stage, m.Err)
		if !run.q.job.stopping {
			// A retry synthesizes again: until then it holds nothing.
			s.giveHost(p)
		}
	}
	s.settle(c, run.q, ended)
}

// dispatchReady gives prepared partitions to idle GPU workers, the most
// urgent first.
func (s *scheduler) dispatchReady(c actor.Context) {
	h := s.host
	for len(h.ready) > 0 && s.registered >= s.expected {
		dev, w, ok := s.takeIdle()
		if !ok {
			return
		}
		r := h.ready[0]
		h.ready = h.ready[1:]
		q, p := r.q, r.q.id()
		h.checkHeld(p, "leaves the ready queue")
		s.env.emit(Event{Kind: EvReadyWait, Device: dev, Worker: w.worker, Partition: p, Took: s.env.rt.Now() - r.since, Count: len(h.ready)})
		s.attempt++
		if !q.continues {
			q.attempts++
			if j := s.env.cfg.Journal; j != nil {
				if err := j.RecordAttempt(p); err != nil {
					s.idle[dev] = append([]idleWorker{w}, s.idle[dev]...)
					s.settle(c, q, attemptEnded{device: dev, worker: w.worker, attempt: s.attempt, p: p,
						err: fmt.Errorf("%s: record attempt: %w", p, err)})
					continue
				}
			}
		}
		q.continues = false
		s.inflight[s.attempt] = q
		s.busy[dev]++
		a := q.job.spec.assign(s.attempt, p)
		a.prepared = true
		c.Send(w.pid, a)
	}
}

// hostFits reports why a partition of job cannot be held under limit, or
// nil: one larger than the whole budget would wait for room forever.
func hostFits(job JobSpec, limit int64) error {
	if limit == 0 {
		return nil
	}
	if job.HostBytes <= 0 {
		return fmt.Errorf("host bytes per partition must be positive under a host-memory limit, got %d", job.HostBytes)
	}
	if job.HostBytes > limit {
		return fmt.Errorf("one partition holds %s (%d bytes) of host memory, more than the host-memory limit of %s (%d bytes)",
			gpu.FormatBytes(job.HostBytes), job.HostBytes, gpu.FormatBytes(limit), limit)
	}
	return nil
}
