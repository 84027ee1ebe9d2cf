package trace

import "time"

// namedPidBase is the first pid of the processes Span names: above the
// devices' (their index) and the scheduler's.
const namedPidBase = schedulerPid + 1

// Span writes a slice on a thread of a process known by name rather than by
// device index: the form of a trace assembled from several hosts, where a
// cluster job's partitions ran on the devices of several members ("member
// 10.0.0.2:9830 device 1"). Processes and threads get ids in the order
// their names first appear; ts is from the trace's start, as the actors'
// event times are. A deferred writer queues it, in order with the events.
func (t *Writer) Span(process, thread, name string, ts, dur time.Duration, args ...any) {
	if !t.enqueue(func() { t.span(process, thread, name, ts, dur, args...) }) {
		t.span(process, thread, name, ts, dur, args...)
	}
}

func (t *Writer) span(process, thread, name string, ts, dur time.Duration, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.err != nil {
		return
	}
	if t.pids == nil {
		t.pids, t.tids = map[string]int{}, map[[2]string]int{}
	}
	pid, ok := t.pids[process]
	if !ok {
		pid = namedPidBase + len(t.pids)
		t.pids[process] = pid
	}
	tid, ok := t.tids[[2]string{process, thread}]
	if !ok {
		tid = len(t.tids)
		t.tids[[2]string{process, thread}] = tid
	}
	t.process(pid, process)
	t.thread(pid, tid, thread)
	t.event(name, "X", pid, tid, ts, dur, args...)
}
