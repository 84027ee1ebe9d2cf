package trace

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/actors"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func events() []actors.Event {
	p := actors.PartitionID{Job: "j", Partition: 0}
	q := actors.PartitionID{Job: "j", Partition: 1}
	return []actors.Event{
		{Kind: actors.EvJobAccepted, Device: -1, Worker: -1, Partition: actors.PartitionID{Job: "j", Partition: -1}, Count: 2},
		{Kind: actors.EvQueueDepth, Device: -1, Worker: -1, Count: 2},
		{Kind: actors.EvStageEnd, At: ms(5), Device: 0, Worker: 0, Partition: p, Stage: actors.StageSynthesize, Took: ms(5)},
		{Kind: actors.EvLeaseGrant, At: ms(6), Device: 0, Worker: 0, Partition: p, Lock: "budget", Bytes: 1 << 30},
		{Kind: actors.EvLeaseGrant, At: ms(7), Device: 0, Worker: 1, Partition: q, Lock: "budget", Bytes: 1 << 30, Took: ms(1)},
		{Kind: actors.EvVRAM, At: ms(7), Device: 0, Worker: 0, Bytes: 1 << 30},
		{Kind: actors.EvDeviceOp, At: ms(8), Device: 0, Worker: 0, Partition: p, Op: "malloc_async", Took: 1500, Late: 2500, Bytes: 1 << 30},
		{Kind: actors.EvOOM, At: ms(8), Device: 0, Worker: 1, Partition: q, Op: "malloc_async", Bytes: 1 << 30, Err: "out of \"device\" memory"},
		{Kind: actors.EvLeaseGrant, At: ms(9), Device: 0, Worker: 0, Partition: p, Lock: "compute"},
		{Kind: actors.EvLeaseRelease, At: ms(19), Device: 0, Worker: 0, Partition: p, Lock: "compute", Took: ms(10)},
		{Kind: actors.EvLeaseRelease, At: ms(20), Device: 0, Worker: 1, Partition: q, Lock: "budget", Took: ms(13), Bytes: 1 << 30},
		{Kind: actors.EvLeaseRelease, At: ms(21), Device: 0, Worker: 0, Partition: p, Lock: "budget", Took: ms(15), Bytes: 1 << 30},
		{Kind: actors.EvPartitionDone, At: ms(30), Device: 0, Worker: 0, Partition: p},
		{Kind: actors.EvJobDone, At: ms(31), Device: -1, Worker: -1, Partition: actors.PartitionID{Job: "j", Partition: -1}, Count: 1, Err: "1 of 2 partitions failed"},
	}
}

func write(t *testing.T, evs []actors.Event) []byte {
	t.Helper()
	var b bytes.Buffer
	w := New(&b)
	for _, e := range evs {
		w.Observe(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type traceFile struct {
	TraceEvents []struct {
		Name string         `json:"name"`
		Ph   string         `json:"ph"`
		Pid  int            `json:"pid"`
		Tid  int            `json:"tid"`
		Ts   float64        `json:"ts"`
		Dur  float64        `json:"dur"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
}

func TestTraceIsValidAndDeterministic(t *testing.T) {
	a, b := write(t, events()), write(t, events())
	if !bytes.Equal(a, b) {
		t.Fatal("same events, different traces")
	}
	var f traceFile
	if err := json.Unmarshal(a, &f); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, a)
	}
	threads := map[string]int{}
	var budgetTids []int
	for _, e := range f.TraceEvents {
		if e.Name == "thread_name" {
			threads[e.Args["name"].(string)] = e.Tid
		}
		if e.Ph == "X" && strings.HasPrefix(e.Name, "w") && e.Args["bytes"] != nil {
			budgetTids = append(budgetTids, e.Tid)
		}
	}
	for _, want := range []string{"worker 0", "worker 1", "lock compute", "budget #0", "budget #1", "jobs"} {
		if _, ok := threads[want]; !ok {
			t.Errorf("no track %q in %v", want, threads)
		}
	}
	// Two budget holders at once are drawn on two tracks.
	if len(budgetTids) != 2 || budgetTids[0] == budgetTids[1] {
		t.Errorf("budget slices on tracks %v", budgetTids)
	}
	found := false
	for _, e := range f.TraceEvents {
		if e.Name == "synthesize" && e.Ph == "X" && e.Ts == 0 && e.Dur == 5000 && e.Pid == 0 && e.Tid == 0 {
			found = true
		}
		if e.Name == "malloc_async" && (e.Args["took_us"] != 1.5 || e.Args["late_us"] != 2.5) {
			t.Errorf("device op args %v", e.Args)
		}
	}
	if !found {
		t.Errorf("no synthesize slice of 5 ms at 0 on device 0, worker 0:\n%s", a)
	}
}

func TestTraceOfARealRunParses(t *testing.T) {
	var b bytes.Buffer
	w := New(&b)
	for i := range 200 {
		w.Observe(actors.Event{Kind: actors.EvStageEnd, At: time.Duration(i) * time.Microsecond, Device: i % 2, Worker: i % 3,
			Stage: actors.StageCompute, Took: time.Microsecond, Err: "x\ny\t\"z\""})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var f traceFile
	if err := json.Unmarshal(b.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.TraceEvents) < 200 {
		t.Errorf("%d events", len(f.TraceEvents))
	}
}

// The host-memory gate's syntheses run on no device: they get a "host"
// process with a track per synthesis slot, and the gate's ledger a counter.
func TestTraceOfTheHostGate(t *testing.T) {
	p := actors.PartitionID{Job: "j", Partition: 0}
	a := write(t, []actors.Event{
		{Kind: actors.EvHostMem, At: ms(0), Device: -1, Worker: -1, Bytes: 1 << 30, Count: 1},
		{Kind: actors.EvStageEnd, At: ms(5), Device: -1, Worker: 2, Partition: p, Stage: actors.StageSynthesize, Took: ms(5)},
	})
	var f traceFile
	if err := json.Unmarshal(a, &f); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, a)
	}
	var slice, counter bool
	names := map[string]bool{}
	for _, e := range f.TraceEvents {
		if e.Name == "process_name" || e.Name == "thread_name" {
			names[e.Args["name"].(string)] = e.Pid == hostPid
		}
		slice = slice || e.Name == "synthesize" && e.Pid == hostPid && e.Tid == 2 && e.Dur == 5000
		counter = counter || e.Name == "host memory" && e.Pid == hostPid && e.Args["partitions"] == 1.0
	}
	if !names["host"] || !names["synthesis 2"] || !slice || !counter {
		t.Errorf("tracks %v, synthesis slice %v, ledger counter %v:\n%s", names, slice, counter, a)
	}
}

// Spans of named processes (a cluster's members and devices) get one pid
// per name, named once, beside the devices' events.
func TestSpanNamesProcesses(t *testing.T) {
	var b bytes.Buffer
	w := New(&b)
	w.Span("member a:1 device 0", "worker 0", "compute", time.Millisecond, 2*time.Millisecond, "partition", "j/0")
	w.Span("member b:1 device 0", "worker 0", "compute", time.Millisecond, 2*time.Millisecond, "partition", "j/1")
	w.Span("member a:1 device 0", "worker 1", "finalize", 3*time.Millisecond, time.Millisecond, "partition", "j/2")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Pid  int            `json:"pid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, b.String())
	}
	names := map[int]string{}
	spans := map[int]int{}
	for _, e := range doc.TraceEvents {
		switch {
		case e.Name == "process_name":
			if _, dup := names[e.Pid]; dup {
				t.Errorf("process %d named twice", e.Pid)
			}
			names[e.Pid] = e.Args["name"].(string)
		case e.Ph == "X":
			spans[e.Pid]++
		}
	}
	if len(names) != 2 || len(spans) != 2 {
		t.Fatalf("processes %v, spans per pid %v: want two named processes", names, spans)
	}
	for pid, n := range spans {
		want := map[string]int{"member a:1 device 0": 2, "member b:1 device 0": 1}[names[pid]]
		if n != want {
			t.Errorf("process %q: %d spans, want %d", names[pid], n, want)
		}
	}
}

// A deferred writer writes what New writes, events and spans in the order
// given, once closed.
func TestDeferredWritesWhatNewWrites(t *testing.T) {
	var want, got bytes.Buffer
	for _, c := range []struct {
		b *bytes.Buffer
		w *Writer
	}{{&want, New(&want)}, {&got, NewDeferred(&got, time.Millisecond)}} {
		for i, e := range events() {
			c.w.Observe(e)
			if i == 3 {
				c.w.Span("member a", "device 0", "j/0", ms(2), ms(3), "partition", "j/0")
				time.Sleep(3 * time.Millisecond) // let the drainer write some
			}
		}
		if err := c.w.Close(); err != nil {
			t.Fatal(err)
		}
		c.w.Observe(events()[2]) // after Close: nothing
		if err := c.w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(want.Bytes(), got.Bytes()) {
		t.Fatalf("deferred:\n%s\nnew:\n%s", got.Bytes(), want.Bytes())
	}
}

// blockingWriter blocks every Write until released, saying when one began.
type blockingWriter struct {
	began   chan struct{}
	release chan struct{}
	buf     bytes.Buffer
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	select {
	case b.began <- struct{}{}:
	default:
	}
	<-b.release
	return b.buf.Write(p)
}

// observeWhileWriteBlocks observes events until the underlying writer is written to, then
// says whether one more Observe returns while that write is blocked.
func observeWhileWriteBlocks(t *testing.T, w *Writer, bw *blockingWriter) bool {
	t.Helper()
	e := actors.Event{Kind: actors.EvDeviceOp, At: ms(1), Device: 0, Worker: 0, Op: "compute",
		Partition: actors.PartitionID{Job: strings.Repeat("j", 200)}}
	go func() {
		for range 100 { // about 30 kB: past bufio's 4 kB
			w.Observe(e)
		}
	}()
	<-bw.began
	returned := make(chan struct{})
	go func() {
		w.Observe(e)
		close(returned)
	}()
	select {
	case <-returned:
		return true
	case <-time.After(200 * time.Millisecond):
		return false
	}
}

// An actor that observes an event never waits for the trace's writes: with a
// deferred writer, Observe returns while the drainer's write is blocked; with
// New it does not (the property the deferred writer is for).
func TestDeferredObserveDoesNotWaitForWrites(t *testing.T) {
	bw := &blockingWriter{began: make(chan struct{}, 1), release: make(chan struct{})}
	w := NewDeferred(bw, time.Millisecond)
	if !observeWhileWriteBlocks(t, w, bw) {
		t.Error("a deferred writer's Observe waited for a blocked write")
	}
	close(bw.release)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var f traceFile
	if err := json.Unmarshal(bw.buf.Bytes(), &f); err != nil {
		t.Fatalf("deferred trace does not parse: %v", err)
	}
	if n := len(f.TraceEvents); n < 101 {
		t.Errorf("%d events written, want the 101 observed (and names)", n)
	}

	bw = &blockingWriter{began: make(chan struct{}, 1), release: make(chan struct{})}
	w = New(bw)
	if observeWhileWriteBlocks(t, w, bw) {
		t.Error("New's Observe returned while another's write was blocked: the test cannot tell the two apart")
	}
	close(bw.release)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
