package actors

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// scheduler owns the partition queue. It orders partitions by priority
// (CRITICAL first), then by the order jobs were accepted, then by partition
// index; gives the head to an idle worker on the device with the fewest busy
// workers; and decides, when an attempt fails, whether the partition is
// retried or failed for good. Every partition of an accepted job ends in
// exactly one EvPartitionDone or EvPartitionFailed.
type scheduler struct {
	env     *env
	devices []int // device indexes, in the order given to Start

	queue    []queued
	jobs     map[string]*jobState
	jobSeq   uint64
	attempt  uint64
	inflight map[uint64]queued // attempt id → what was dispatched
	idle     map[int][]idleWorker
	busy     map[int]int
	// Workers report in as they start. Dispatch waits for all of them, so
	// that a job submitted right after Start spreads over every device
	// instead of landing on whichever started first.
	expected, registered int

	host *hostSide // nil: each worker synthesizes its own partition
}

type idleWorker struct {
	worker int
	pid    *actor.PID
}

type queued struct {
	job      *jobState
	part     int
	attempts int // attempts already made
	// prepared: under the host-memory gate, the partition holds its
	// prepared data, and a new attempt starts at the device part.
	prepared bool
	// continues: the next device dispatch is part of the attempt that
	// synthesized the partition, not a new one.
	continues bool
}

func (q queued) id() PartitionID { return PartitionID{Job: q.job.spec.ID, Partition: q.part} }

type jobState struct {
	spec      JobSpec
	seq       uint64
	left      int
	failed    int
	cancelled int          // partitions given up because the job was cancelled
	stopping  bool         // the job was cancelled: nothing of it starts again
	settled   map[int]bool // partitions done, failed for good or cancelled
}

func newScheduler(e *env, devices []int) *scheduler {
	s := &scheduler{env: e, devices: devices, jobs: map[string]*jobState{}, inflight: map[uint64]queued{},
		idle: map[int][]idleWorker{}, busy: map[int]int{}, expected: len(devices) * e.cfg.WorkersPerDevice}
	if e.cfg.HostMemLimit > 0 {
		slots := e.cfg.SynthWorkers
		if slots == 0 {
			slots = s.expected
		}
		s.host = newHostSide(e.cfg.HostMemLimit, slots)
	}
	return s
}

func before(a, b queued) int {
	if c := cmp.Compare(b.job.spec.Priority, a.job.spec.Priority); c != 0 {
		return c
	}
	if c := cmp.Compare(a.job.seq, b.job.seq); c != 0 {
		return c
	}
	return cmp.Compare(a.part, b.part)
}

func (s *scheduler) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case submitJob:
		s.accept(m.job)
		s.dispatch(c)
	case workerIdle:
		s.registered++
		s.idle[m.device] = append(s.idle[m.device], idleWorker{m.worker, m.pid})
		s.dispatch(c)
	case attemptEnded:
		s.ended(c, m)
		s.idle[m.device] = append(s.idle[m.device], idleWorker{m.worker, m.pid})
		s.busy[m.device]--
		s.dispatch(c)
	case retryDue:
		if m.q.job.stopping {
			s.cancelled(m.q, attemptEnded{device: -1, worker: -1, p: m.q.id()})
			return
		}
		s.requeue(m.q)
		s.dispatch(c)
	case WorkDone:
		s.synthesisDone(c, m)
		s.dispatch(c)
	case cancelJob:
		s.cancel(m.id)
		s.dispatch(c)
	}
}

// cancelJob stops a job: its queued partitions are given up at once, and
// those in flight once their attempt ends (the executor fails their next
// stage), unless that attempt proved them.
type cancelJob struct{ id string }

func (s *scheduler) cancel(id string) {
	j, ok := s.jobs[id]
	if !ok || j.stopping {
		return
	}
	j.stopping = true
	kept := s.queue[:0]
	var dropped []queued
	for _, q := range s.queue {
		if q.job == j {
			dropped = append(dropped, q)
		} else {
			kept = append(kept, q)
		}
	}
	s.queue = kept
	s.env.emit(Event{Kind: EvQueueDepth, Worker: -1, Device: -1, Count: len(s.queue)})
	if s.host != nil {
		dropped = append(dropped, s.host.dropReady(j)...)
	}
	for _, q := range dropped {
		s.cancelled(q, attemptEnded{device: -1, worker: -1, p: PartitionID{Job: id, Partition: q.part}})
	}
}

// cancelled settles a partition of a stopping job that was not proved.
func (s *scheduler) cancelled(q queued, m attemptEnded) {
	j := q.job
	if settled, known := j.settled[q.part]; !known || settled {
		panic(fmt.Sprintf("actors: invariant: cancel of %s/%d, which is settled (%v) or unknown (%v)", j.spec.ID, q.part, settled, !known))
	}
	j.settled[q.part] = true
	j.left--
	j.cancelled++
	s.env.emit(Event{Kind: EvPartitionCancelled, Device: m.device, Worker: m.worker, Partition: m.p, Count: q.attempts})
	if jr := s.env.cfg.Journal; jr != nil {
		if err := jr.RecordCancelled(m.p); err != nil {
			s.env.log().Error("record cancelled partition", "partition", m.p.String(), "err", err)
		}
	}
	s.release(m.p)
	if j.left == 0 {
		s.jobDone(j)
	}
}

// retryDue queues a failed partition again once its backoff has passed.
type retryDue struct{ q queued }

// backoff is the wait before the next attempt of a partition that has
// failed attempts times.
func (s *scheduler) backoff(attempts int) time.Duration {
	return s.env.cfg.RetryBackoff << min(max(attempts-1, 0), 5)
}

func (s *scheduler) accept(spec JobSpec) {
	s.jobSeq++
	j := &jobState{spec: spec, seq: s.jobSeq, settled: map[int]bool{}}
	s.jobs[spec.ID] = j
	parts := spec.Pending
	if parts == nil {
		parts = make([]int, spec.Partitions)
		for i := range parts {
			parts[i] = i
		}
	}
	s.env.emit(Event{Kind: EvJobAccepted, Worker: -1, Device: -1, Partition: PartitionID{Job: spec.ID, Partition: -1}, Count: len(parts)})
	for _, p := range parts {
		if j.settled[p] {
			continue // listed twice
		}
		j.settled[p] = false
		j.left++
		s.enqueue(queued{job: j, part: p})
	}
	if j.left == 0 {
		s.jobDone(j)
	}
}

func (s *scheduler) enqueue(q queued) {
	i, _ := slices.BinarySearchFunc(s.queue, q, before)
	s.queue = slices.Insert(s.queue, i, q)
	s.env.emit(Event{Kind: EvQueueDepth, Worker: -1, Device: -1, Count: len(s.queue)})
}

// requeue queues a partition for its next attempt: for synthesis, or, when
// it still holds its prepared data, for a GPU worker.
func (s *scheduler) requeue(q queued) {
	if q.prepared {
		s.host.makeReady(q, s.env.rt.Now())
		return
	}
	s.enqueue(q)
}

// dispatch gives queued partitions to idle workers while there are both,
// spreading them over devices: each goes to the device with the fewest busy
// workers (ties: the order of devices given to Start).
func (s *scheduler) dispatch(c actor.Context) {
	if s.host != nil {
		s.synthesizeAhead(c)
		s.dispatchReady(c)
		return
	}
	for len(s.queue) > 0 && s.registered >= s.expected {
		dev, w, ok := s.takeIdle()
		if !ok {
			return
		}
		q := s.queue[0]
		s.queue = s.queue[1:]
		s.env.emit(Event{Kind: EvQueueDepth, Worker: -1, Device: -1, Count: len(s.queue)})
		p := PartitionID{Job: q.job.spec.ID, Partition: q.part}
		s.attempt++
		q.attempts++
		s.inflight[s.attempt] = q
		s.busy[dev]++
		if j := s.env.cfg.Journal; j != nil {
			if err := j.RecordAttempt(p); err != nil {
				// The worker is still idle; the attempt counts as failed.
				s.busy[dev]--
				s.idle[dev] = append([]idleWorker{w}, s.idle[dev]...)
				s.ended(c, attemptEnded{device: dev, worker: w.worker, attempt: s.attempt, p: p,
					err: fmt.Errorf("%s: record attempt: %w", p, err)})
				continue
			}
		}
		c.Send(w.pid, q.job.spec.assign(s.attempt, p))
	}
}

// takeIdle takes an idle worker from the device with the fewest busy
// workers (ties: the order of devices given to Start).
func (s *scheduler) takeIdle() (dev int, w idleWorker, ok bool) {
	dev = -1
	for _, d := range s.devices {
		if len(s.idle[d]) > 0 && (dev < 0 || s.busy[d] < s.busy[dev]) {
			dev = d
		}
	}
	if dev < 0 {
		return -1, idleWorker{}, false
	}
	w = s.idle[dev][0]
	s.idle[dev] = s.idle[dev][1:]
	return dev, w, true
}

func (s *scheduler) ended(c actor.Context, m attemptEnded) {
	q, ok := s.inflight[m.attempt]
	if !ok {
		panic(fmt.Sprintf("actors: invariant: attempt %d of %s ended on device %d worker %d, but it is not in flight (in flight: %d attempts)",
			m.attempt, m.p, m.device, m.worker, len(s.inflight)))
	}
	delete(s.inflight, m.attempt)
	s.settle(c, q, m)
}

// settle decides what follows an attempt of q that ended as m says: the
// partition is proved, queued again, failed for good or, when its job is
// stopping, cancelled.
func (s *scheduler) settle(c actor.Context, q queued, m attemptEnded) {
	j := q.job
	if settled, known := j.settled[q.part]; !known || settled {
		// A partition is settled once: proved twice would be a lost or a
		// duplicated proof.
		panic(fmt.Sprintf("actors: invariant: attempt %d of %s ended (err %v), but the partition is settled (%v) or unknown to its job (%v)",
			m.attempt, m.p, m.err, settled, !known))
	}
	p := m.p
	if m.err != nil && j.stopping {
		s.cancelled(q, m)
		return
	}
	switch {
	case m.err == nil:
		j.settled[q.part] = true
		j.left--
		s.env.emit(Event{Kind: EvPartitionDone, Device: m.device, Worker: m.worker, Partition: p, Count: q.attempts})
		s.release(p)
	case q.attempts < s.env.cfg.MaxAttempts:
		s.env.emit(Event{Kind: EvPartitionRetry, Device: m.device, Worker: m.worker, Partition: p, Count: q.attempts, Err: m.err.Error()})
		q.continues = false
		if q.prepared && s.env.cfg.PrepConsumed {
			// What the partition held is used up: synthesize it again.
			q.prepared = false
			s.giveHost(p)
		}
		if d := s.backoff(q.attempts); d > 0 {
			s.env.rt.After(c.Self(), d, retryDue{q})
		} else {
			s.requeue(q)
		}
	default:
		j.settled[q.part] = true
		j.left--
		j.failed++
		reason := fmt.Sprintf("failed after %d attempts: %v", q.attempts, m.err)
		s.env.emit(Event{Kind: EvPartitionFailed, Device: m.device, Worker: m.worker, Partition: p, Count: q.attempts, Err: reason})
		if jr := s.env.cfg.Journal; jr != nil {
			if err := jr.RecordFailed(p, reason); err != nil {
				s.env.log().Error("record failed partition", "partition", p.String(), "err", err)
			}
		}
		s.release(p)
	}
	if j.left == 0 {
		s.jobDone(j)
	}
}

// release lets a partition that is proved, failed for good or cancelled go:
// its host memory back to the gate, what the runtime holds for it dropped.
func (s *scheduler) release(p PartitionID) {
	s.giveHost(p)
	if r, ok := s.env.rt.(Releaser); ok {
		r.Release(p)
	}
}

func (s *scheduler) jobDone(j *jobState) {
	if s.host != nil {
		s.host.checkLeft(j.spec.ID)
	}
	e := Event{Kind: EvJobDone, Worker: -1, Device: -1, Partition: PartitionID{Job: j.spec.ID, Partition: -1},
		Count: len(j.settled) - j.failed - j.cancelled}
	var why []string
	if j.failed > 0 {
		why = append(why, fmt.Sprintf("%d of %d partitions failed", j.failed, len(j.settled)))
	}
	if j.cancelled > 0 {
		why = append(why, fmt.Sprintf("cancelled: %d of %d partitions not proved", j.cancelled, len(j.settled)))
	}
	e.Err = strings.Join(why, "; ")
	s.env.emit(e)
	delete(s.jobs, j.spec.ID)
}
