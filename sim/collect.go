package sim

import (
	"time"

	"github.com/cuzk/cuzk/actors"
)

// collector is the simulator's actors.Observer: it builds the report (and,
// when recording, the timeline) from the same event stream that production
// metrics and traces use. The kernel is single-threaded, so it needs no lock.
type collector struct {
	k       *Kernel
	journal *memJournal
	record  bool
	next    actors.Observer // a further observer (a trace writer), may be nil

	firstSubmit  time.Duration
	submitted    int
	lastDone     time.Duration
	busyAtDone   time.Duration   // the devices' compute busy time at lastDone, every incarnation's
	busyBefore   time.Duration   // compute busy time of the incarnations a process crash ended
	outstanding  map[string]bool // jobs not yet done
	proved       int
	failed       int
	retries      int
	ooms         int
	fallbackOOMs int // of ooms, those met on a fallback path
	fallbacks    int
	waitedOps    int
	leaseWait    map[string][]time.Duration
	leaseHold    map[string][]time.Duration
	lockOrder    []string
	hostPeak     int64           // most host bytes partitions held at once (the host-memory gate)
	heldPeak     int             // most partitions held at once
	readyWaits   []time.Duration // how long each prepared partition waited for a GPU worker

	// Recorded for timelines.
	stages  []stageSpan
	open    map[workerKey]*stageSpan
	leases  []leaseSpan
	held    map[leaseKey]*leaseSpan
	marks   []mark
	engines []DeviceActivity
}

type stageSpan struct {
	device, worker int
	stage          actors.Stage
	partition      actors.PartitionID
	start, end     time.Duration
	err            bool
}

type leaseKey struct {
	device, worker int
	lock           string
}

type leaseSpan struct {
	device, worker int
	lock           string
	partition      actors.PartitionID
	start, end     time.Duration
}

type mark struct {
	kind           actors.EventKind
	device, worker int
	at             time.Duration
	text           string
}

func newCollector(k *Kernel, j *memJournal, record bool) *collector {
	c := &collector{k: k, journal: j, record: record, firstSubmit: -1,
		outstanding: map[string]bool{}, leaseWait: map[string][]time.Duration{}, leaseHold: map[string][]time.Duration{},
		open: map[workerKey]*stageSpan{}, held: map[leaseKey]*leaseSpan{}}
	if record {
		k.onDevice = func(a DeviceActivity) { c.engines = append(c.engines, a) }
	}
	return c
}

func (c *collector) submittedJob(id string) {
	if c.firstSubmit < 0 {
		c.firstSubmit = c.k.now
	}
	c.submitted++
	c.outstanding[id] = true
}

func (c *collector) lock(name string) {
	if _, ok := c.leaseWait[name]; !ok {
		c.leaseWait[name] = nil
		c.lockOrder = append(c.lockOrder, name)
	}
}

// Observe implements actors.Observer.
func (c *collector) Observe(e actors.Event) {
	if c.next != nil {
		c.next.Observe(e)
	}
	switch e.Kind {
	case actors.EvStageStart:
		if e.Stage != actors.StageStage && e.Stage != actors.StageCompute {
			c.k.faults.noteStageStart(e.Device, e.Worker)
		}
		if c.record {
			s := &stageSpan{device: e.Device, worker: e.Worker, stage: e.Stage, partition: e.Partition, start: e.At, end: -1}
			c.open[workerKey{e.Device, e.Worker}] = s
		}
	case actors.EvStageEnd:
		if c.record {
			if s, ok := c.open[workerKey{e.Device, e.Worker}]; ok {
				s.end = e.At
				s.err = e.Err != ""
				c.stages = append(c.stages, *s)
				delete(c.open, workerKey{e.Device, e.Worker})
			}
		}
	case actors.EvLeaseGrant:
		c.lock(e.Lock)
		c.leaseWait[e.Lock] = append(c.leaseWait[e.Lock], e.Took)
		if c.record {
			c.held[leaseKey{e.Device, e.Worker, e.Lock}] = &leaseSpan{device: e.Device, worker: e.Worker, lock: e.Lock, partition: e.Partition, start: e.At}
		}
	case actors.EvLeaseRelease:
		c.lock(e.Lock)
		c.leaseHold[e.Lock] = append(c.leaseHold[e.Lock], e.Took)
		if c.record {
			k := leaseKey{e.Device, e.Worker, e.Lock}
			if l, ok := c.held[k]; ok {
				l.end = e.At
				c.leases = append(c.leases, *l)
				delete(c.held, k)
			}
		}
	case actors.EvDeviceOp:
		if e.Waited {
			c.waitedOps++
		}
	case actors.EvOOM:
		c.ooms++
		if e.Fallback {
			c.fallbackOOMs++
		}
		c.mark(e, "OOM")
	case actors.EvFallback:
		c.fallbacks++
		c.mark(e, "fallback")
	case actors.EvPartitionDone:
		c.proved++
		c.done(e.At)
		c.journal.recordProved(e.Partition)
	case actors.EvPartitionRetry:
		c.retries++
		c.mark(e, "retry")
	case actors.EvPartitionFailed:
		c.failed++
		c.done(e.At)
		c.mark(e, "failed")
	case actors.EvJobDone:
		delete(c.outstanding, e.Partition.Job)
	case actors.EvHostMem:
		c.hostPeak = max(c.hostPeak, e.Bytes)
		c.heldPeak = max(c.heldPeak, e.Count)
	case actors.EvReadyWait:
		c.readyWaits = append(c.readyWaits, e.Took)
	}
}

func (c *collector) mark(e actors.Event, text string) {
	if c.record {
		c.marks = append(c.marks, mark{kind: e.Kind, device: e.Device, worker: e.Worker, at: e.At, text: text})
	}
}

// done marks a partition's end (proved or failed) at now: the span the
// report divides by ends there, and so does the compute time it counts
// (a run stopped at max_time_s may have kernels running past it).
func (c *collector) done(at time.Duration) {
	c.lastDone = at
	c.busyAtDone = c.busyBefore + c.computeBusy()
}

// computeBusy is how long at least one kernel ran on each device of the
// current incarnation, summed over them, up to now.
func (c *collector) computeBusy() time.Duration {
	var b time.Duration
	for _, d := range c.k.devices {
		b += d.compute.busyUntilNow()
	}
	return b
}

// crashed closes what was open when the process died, and keeps the compute
// time of the devices that die with it.
func (c *collector) crashed() {
	c.busyBefore += c.computeBusy()
	if !c.record {
		return
	}
	now := c.k.now
	for k, s := range c.open {
		s.end, s.err = now, true
		c.stages = append(c.stages, *s)
		delete(c.open, k)
	}
	for k, l := range c.held {
		l.end = now
		c.leases = append(c.leases, *l)
		delete(c.held, k)
	}
	c.marks = append(c.marks, mark{kind: 0, device: -1, worker: -1, at: now, text: "process crash"})
}
