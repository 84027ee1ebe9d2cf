package sim

import (
	"math"
	"time"
)

// psJob is one piece of work on a processor-sharing server. Work is measured
// in nanoseconds of the job running alone; the server's rate function says how
// fast each job advances while it shares the server with the others.
type psJob struct {
	remaining float64 // ns of solo work left
	rate      float64 // solo-ns of progress per ns, set by the server's rate function
	start     time.Duration
	cores     float64 // CPU model only
	bwShare   float64 // CPU model only
	speed     float64 // CPU model only: the share of its cores it gets
	pooled    bool    // CPU model only: runs on the cores' pool, in rank order
	rank      uint64  // CPU model only: the pool's order, lowest first
	label     string
	duty      float64 // device model only: the share of a kernel's run that needs the copy engine
	// background marks work that shares a server without being what the
	// server is for (a free's release work on the copy engine).
	background bool
	done       func(start time.Duration)
}

// psServer runs jobs by processor sharing: every active job progresses at the
// rate the server's rate function gives it, recomputed whenever a job arrives
// or leaves. Completion times are therefore not known when a job starts; the
// server keeps one timer for the earliest completion and invalidates it (gen)
// whenever the set of jobs changes.
type psServer struct {
	k     *Kernel
	jobs  []*psJob
	last  time.Duration
	gen   uint64
	rates func(jobs []*psJob)
	// changed, when set, are told whenever a job arrives or leaves, after
	// the rates are recomputed: what runs on another server may depend on
	// what runs on this one (a device's kernels on its copies and on the
	// host's CPU stages).
	changed []func()
	// busy is the virtual time during which at least one job was active.
	busy time.Duration
}

func newPSServer(k *Kernel, rates func([]*psJob)) *psServer {
	return &psServer{k: k, rates: rates, last: k.now}
}

// equalShare splits the server evenly: n jobs each run at 1/n (two full
// kernels take twice as long; two copies share the bus).
func equalShare(jobs []*psJob) {
	r := 1 / float64(len(jobs))
	for _, j := range jobs {
		j.rate = r
	}
}

// firstServed runs the jobs one at a time in the order they arrived: the
// first at the full rate, the others not at all until it leaves (a copy
// engine that takes copies in issue order).
func firstServed(jobs []*psJob) {
	for i, j := range jobs {
		j.rate = 0
		if i == 0 {
			j.rate = 1
		}
	}
}

func (s *psServer) advance() {
	now := s.k.now
	dt := float64(now - s.last)
	if dt > 0 && len(s.jobs) > 0 {
		for _, j := range s.jobs {
			j.remaining -= j.rate * dt
		}
		s.busy += now - s.last
	}
	s.last = now
}

func (s *psServer) add(j *psJob) {
	s.advance()
	j.start = s.k.now
	if j.remaining < 0 {
		j.remaining = 0
	}
	s.jobs = append(s.jobs, j)
	s.reschedule()
}

func (s *psServer) reschedule() {
	s.gen++
	defer func() {
		for _, f := range s.changed {
			f()
		}
	}()
	if len(s.jobs) == 0 {
		return
	}
	s.rates(s.jobs)
	next := math.Inf(1)
	for _, j := range s.jobs {
		if j.rate <= 0 {
			continue // waiting its turn (firstServed)
		}
		if t := j.remaining / j.rate; t < next {
			next = t
		}
	}
	if math.IsInf(next, 1) {
		return // every job stalled (a kernel whose keys wait for a copy): a change reschedules
	}
	gen := s.gen
	s.k.At(s.k.now+time.Duration(math.Ceil(next)), func() {
		if gen == s.gen {
			s.fire()
		}
	})
}

// completionSlack absorbs the rounding of completion times to whole
// nanoseconds.
const completionSlack = 1.0

func (s *psServer) fire() {
	s.advance()
	var finished []*psJob
	kept := s.jobs[:0]
	for _, j := range s.jobs {
		if j.remaining <= completionSlack*j.rate+1e-9 {
			finished = append(finished, j)
		} else {
			kept = append(kept, j)
		}
	}
	for i := len(kept); i < len(s.jobs); i++ {
		s.jobs[i] = nil
	}
	s.jobs = kept
	s.reschedule()
	for _, j := range finished {
		j.done(j.start)
	}
}

// busyUntilNow is the busy time including the current, unfinished stretch.
func (s *psServer) busyUntilNow() time.Duration {
	if len(s.jobs) > 0 {
		return s.busy + s.k.now - s.last
	}
	return s.busy
}
