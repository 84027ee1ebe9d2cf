// Package trace writes the actors' event stream in the Chrome trace-event
// JSON format, which Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
// Layout: each device is a process (pid = device index) whose threads are its
// workers (tid = worker index: their stages as slices; lease waits, device
// ops, OOMs and fallbacks as marks) and its locks (one track per mutex; the
// budget, which several workers hold at once, gets one track per concurrent
// holder). The scheduler is a process of its own with the queue depth; VRAM
// in use is a counter of each device.
//
// Output depends only on the events and their order: the simulator, whose
// event order is deterministic, gets byte-identical traces from identical
// runs.
package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/cuzk/cuzk/actors"
)

// Track ids inside a device's process.
const (
	lockTidBase   = 1000 // + index of the lock in lockOrder
	budgetTidBase = 1100 // + slot of the holder
	schedulerPid  = 1 << 20
	hostPid       = schedulerPid + 1 // the host-memory gate: its synthesis slots and ledger
)

// lockOrder places each mutex on a track of its own, in the order a
// partition meets them; the budget's reservations have slots instead.
var lockOrder = func() map[string]int {
	m := map[string]int{}
	for _, l := range actors.Locks {
		if l != "budget" {
			m[l] = len(m)
		}
	}
	return m
}()

// Writer is an actors.Observer that writes a trace. It is safe for concurrent
// use; Close finishes the JSON.
type Writer struct {
	mu      sync.Mutex
	w       *bufio.Writer
	n       int // events written
	err     error
	closed  bool
	named   map[[2]int]bool // (pid, tid) with a name written; tid -1 for the process
	slots   map[int][]int   // device → budget slot → worker holding it (-1 free)
	holding map[[2]int]int  // (device, worker) → budget slot
	pids    map[string]int  // Span's processes by name
	tids    map[[2]string]int

	// A deferred writer's queue (NewDeferred): what Observe and Span were
	// given and the drainer has not yet written.
	qmu     sync.Mutex
	queued  []func()
	qclosed bool
	stop    chan struct{} // nil: not deferred
	drained chan struct{}
}

// New starts a trace on w.
func New(w io.Writer) *Writer {
	t := &Writer{w: bufio.NewWriter(w), named: map[[2]int]bool{}, slots: map[int][]int{}, holding: map[[2]int]int{}}
	_, t.err = t.w.WriteString("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n")
	return t
}

// Interval is how often the deferred writers of real runs write their queue.
const Interval = 5 * time.Millisecond

// NewDeferred starts a trace on w whose Observe and Span only queue what they
// are given: a goroutine of the writer's own writes the queue every interval,
// and Close writes what remains. A real run's actors emit their events on
// their own goroutines, on the way to their device calls; with New, a handler
// that met another goroutine encoding or writing under the trace's lock
// parked there, and Go then ran it only after the goroutines started on the
// lock holder's processor, which could be the next worker's handler and its
// device calls. On the H200, split-devsync's launch/device-sync ties went
// the other way in a third of the cases with that trace (under Go's execution
// tracer; 15 % without it) and in one of 107 without the trace
// (docs/runs/h200-2026-12-04d). The output is New's, byte for byte.
func NewDeferred(w io.Writer, interval time.Duration) *Writer {
	t := New(w)
	t.stop, t.drained = make(chan struct{}), make(chan struct{})
	go t.drain(interval)
	return t
}

// enqueue queues f on a deferred writer, and says whether it did; after Close
// it drops f (a closed trace writes nothing).
func (t *Writer) enqueue(f func()) bool {
	if t.stop == nil {
		return false
	}
	t.qmu.Lock()
	defer t.qmu.Unlock()
	if !t.qclosed {
		t.queued = append(t.queued, f)
	}
	return true
}

func (t *Writer) drain(interval time.Duration) {
	defer close(t.drained)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			t.writeQueued()
		case <-t.stop:
			t.writeQueued()
			return
		}
	}
}

func (t *Writer) writeQueued() {
	t.qmu.Lock()
	q := t.queued
	t.queued = nil
	t.qmu.Unlock()
	for _, f := range q {
		f()
	}
}

// Close ends the JSON document and flushes it, after writing what a
// deferred writer had queued; it returns the first write error. The
// underlying writer is not closed.
func (t *Writer) Close() error {
	if t.stop != nil {
		t.qmu.Lock()
		first := !t.qclosed
		t.qclosed = true
		t.qmu.Unlock()
		if first {
			close(t.stop)
		}
		<-t.drained
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return t.err
	}
	t.closed = true
	if t.err == nil {
		_, t.err = t.w.WriteString("\n]}\n")
	}
	if t.err == nil {
		t.err = t.w.Flush()
	}
	return t.err
}

// Observe writes the trace events for e (a deferred writer queues it).
func (t *Writer) Observe(e actors.Event) {
	if !t.enqueue(func() { t.observe(e) }) {
		t.observe(e)
	}
}

func (t *Writer) observe(e actors.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.err != nil {
		return
	}
	worker := func(name string, ph string, ts, dur time.Duration, args ...any) {
		pid, thread := e.Device, fmt.Sprintf("worker %d", e.Worker)
		if e.Device < 0 && e.Worker >= 0 {
			// The host-memory gate's synthesis slots run on no device.
			pid, thread = hostPid, fmt.Sprintf("synthesis %d", e.Worker)
		}
		t.thread(pid, e.Worker, thread)
		t.event(name, ph, pid, e.Worker, ts, dur, args...)
	}
	p := e.Partition.String()
	switch e.Kind {
	case actors.EvStageEnd:
		args := []any{"partition", p}
		if e.Err != "" {
			args = append(args, "error", e.Err)
		}
		worker(e.Stage.String(), "X", e.At-e.Took, e.Took, args...)
	case actors.EvLeaseGrant:
		t.grant(e)
		if e.Took > 0 {
			worker("wait "+e.Lock, "X", e.At-e.Took, e.Took, "partition", p)
		}
	case actors.EvLeaseRelease:
		t.release(e)
	case actors.EvDeviceOp:
		args := []any{"partition", p, "took_us", num(micros(e.Took)), "waited", e.Waited}
		if e.Bytes != 0 {
			args = append(args, "bytes", e.Bytes)
		}
		if e.Copied != 0 {
			args = append(args, "copied", e.Copied)
		}
		if e.Late > 0 {
			args = append(args, "late_us", num(micros(e.Late)))
		}
		if e.Err != "" {
			args = append(args, "error", e.Err)
		}
		worker(e.Op, "i", e.At, 0, args...)
	case actors.EvOOM:
		worker("OOM", "i", e.At, 0, "partition", p, "op", e.Op, "bytes", e.Bytes, "error", e.Err)
	case actors.EvFallback:
		worker("fallback", "i", e.At, 0, "partition", p, "reason", e.Err)
	case actors.EvPartitionDone:
		worker("done", "i", e.At, 0, "partition", p)
	case actors.EvPartitionRetry:
		worker("retry", "i", e.At, 0, "partition", p, "error", e.Err)
	case actors.EvPartitionFailed:
		worker("failed", "i", e.At, 0, "partition", p, "error", e.Err)
	case actors.EvVRAM:
		t.process(e.Device, fmt.Sprintf("device %d", e.Device))
		t.event("vram", "C", e.Device, 0, e.At, 0, "bytes", e.Bytes)
	case actors.EvQueueDepth:
		t.process(schedulerPid, "scheduler")
		t.event("queue", "C", schedulerPid, 0, e.At, 0, "partitions", e.Count)
	case actors.EvHostMem:
		t.process(hostPid, "host")
		t.event("host memory", "C", hostPid, 0, e.At, 0, "bytes", e.Bytes, "partitions", e.Count)
	case actors.EvJobAccepted:
		t.thread(schedulerPid, 0, "jobs")
		t.event("accepted "+e.Partition.Job, "i", schedulerPid, 0, e.At, 0, "partitions", e.Count)
	case actors.EvJobDone:
		t.thread(schedulerPid, 0, "jobs")
		args := []any{"done", e.Count}
		if e.Err != "" {
			args = append(args, "error", e.Err)
		}
		t.event("done "+e.Partition.Job, "i", schedulerPid, 0, e.At, 0, args...)
	}
}

// grant picks the budget slot a holder's slice will be drawn on.
func (t *Writer) grant(e actors.Event) {
	if _, mutex := lockOrder[e.Lock]; mutex {
		return
	}
	slots := t.slots[e.Device]
	slot := -1
	for i, w := range slots {
		if w < 0 {
			slot = i
			break
		}
	}
	if slot < 0 {
		slot = len(slots)
		slots = append(slots, -1)
	}
	slots[slot] = e.Worker
	t.slots[e.Device] = slots
	t.holding[[2]int{e.Device, e.Worker}] = slot
}

func (t *Writer) release(e actors.Event) {
	name := fmt.Sprintf("w%d %s", e.Worker, e.Partition)
	args := []any{"worker", e.Worker, "partition", e.Partition.String()}
	if e.Bytes != 0 {
		args = append(args, "bytes", e.Bytes)
	}
	if e.InPlace {
		args = append(args, "in_place", true)
	}
	if i, mutex := lockOrder[e.Lock]; mutex {
		t.thread(e.Device, lockTidBase+i, "lock "+e.Lock)
		t.event(name, "X", e.Device, lockTidBase+i, e.At-e.Took, e.Took, args...)
		return
	}
	key := [2]int{e.Device, e.Worker}
	slot, ok := t.holding[key]
	if !ok {
		slot = 0
	} else {
		delete(t.holding, key)
		t.slots[e.Device][slot] = -1
	}
	tid := budgetTidBase + slot
	t.thread(e.Device, tid, fmt.Sprintf("%s #%d", e.Lock, slot))
	t.event(name, "X", e.Device, tid, e.At-e.Took, e.Took, args...)
}

func (t *Writer) process(pid int, name string) {
	k := [2]int{pid, -1}
	if t.named[k] {
		return
	}
	t.named[k] = true
	t.raw(fmt.Sprintf(`{"name":"process_name","ph":"M","pid":%d,"tid":0,"args":{"name":%s}}`, pid, quote(name)))
	t.raw(fmt.Sprintf(`{"name":"process_sort_index","ph":"M","pid":%d,"tid":0,"args":{"sort_index":%d}}`, pid, pid))
}

func (t *Writer) thread(pid, tid int, name string) {
	switch pid {
	case schedulerPid:
		t.process(pid, "scheduler")
	case hostPid:
		t.process(pid, "host")
	default:
		t.process(pid, fmt.Sprintf("device %d", pid))
	}
	k := [2]int{pid, tid}
	if t.named[k] {
		return
	}
	t.named[k] = true
	t.raw(fmt.Sprintf(`{"name":"thread_name","ph":"M","pid":%d,"tid":%d,"args":{"name":%s}}`, pid, tid, quote(name)))
	t.raw(fmt.Sprintf(`{"name":"thread_sort_index","ph":"M","pid":%d,"tid":%d,"args":{"sort_index":%d}}`, pid, tid, tid))
}

// event writes one trace event; args are key, value pairs.
func (t *Writer) event(name, ph string, pid, tid int, ts, dur time.Duration, args ...any) {
	ts = max(ts, 0)
	s := fmt.Sprintf(`{"name":%s,"ph":"%s","pid":%d,"tid":%d,"ts":%s`, quote(name), ph, pid, tid, micros(ts))
	switch ph {
	case "X":
		s += `,"dur":` + micros(max(dur, 0))
	case "i":
		s += `,"s":"t"`
	}
	if len(args) > 0 {
		s += `,"args":{`
		for i := 0; i+1 < len(args); i += 2 {
			if i > 0 {
				s += ","
			}
			s += quote(fmt.Sprint(args[i])) + ":" + value(args[i+1])
		}
		s += "}"
	}
	t.raw(s + "}")
}

func (t *Writer) raw(s string) {
	if t.err != nil {
		return
	}
	if t.n > 0 {
		_, t.err = t.w.WriteString(",\n")
	}
	if t.err == nil {
		_, t.err = t.w.WriteString(s)
	}
	t.n++
}

// micros prints a duration in microseconds with nanosecond precision and no
// float formatting, so that output is exact and stable.
func micros(d time.Duration) string {
	ns := d.Nanoseconds()
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	return fmt.Sprintf("%s%d.%03d", sign, ns/1000, ns%1000)
}

func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		return `""`
	}
	return string(b)
}

// num is a number already formatted for JSON.
type num string

func value(v any) string {
	switch v := v.(type) {
	case num:
		return string(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	case string:
		return quote(v)
	}
	return quote(fmt.Sprint(v))
}
