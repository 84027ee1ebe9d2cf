package model

import (
	"errors"
	"fmt"
	"sort"

	"github.com/cuzk/cuzk/gpu"
)

// ItemKind says what an item on a stream is.
type ItemKind uint8

// The kinds of stream items.
const (
	// ItemWork is device work the driver performs (a copy, a kernel, or a
	// real CUDA call): Streams reports it with an OutStart when it reaches the
	// head of its stream, and the driver ends it with Finish.
	ItemWork ItemKind = iota + 1
	// ItemMark is a position in the stream (where a FreeAsync takes effect,
	// an event record): it completes as soon as the stream reaches it.
	ItemMark
	// ItemWait holds its stream until another stream has completed up to a
	// position (the dependency cross-stream pool reuse adds).
	ItemWait
)

// ItemState is how far an item has got. Enqueued and Complete are separate
// states so that a host call may return at enqueue (as a kernel launch or a
// cudaFreeAsync does) while its device-side completion is observed later.
type ItemState uint8

// The states of a stream item, in order.
const (
	Enqueued ItemState = iota + 1 // in its stream's queue, not started
	Started                       // ItemWork handed to the driver
	Complete                      // done on the device
)

// Item is one entry of a stream's FIFO queue.
type Item struct {
	Kind   ItemKind
	Stream gpu.Stream
	Seq    uint64 // position on its stream, from 1
	Op     gpu.Op // the op that put it there
	Tag    any    // the driver's, passed to Submit or Enqueue
	State  ItemState
	// Waited is set when the item's start was held back by a wait on
	// another stream ahead of it on its own stream.
	Waited bool
	// ScratchGrew is how many bytes the pool grew by for a kernel's
	// scratch when the item started, and ScratchFirstGrowth whether that
	// took the pool past its largest size: the driver charges the growth to
	// the kernel, whose host code makes those allocations.
	ScratchGrew        int64
	ScratchFirstGrowth bool
	// Err is the work's outcome, given to FinishErr (or set before the item
	// started, when what it needed failed: the item then completes without
	// starting). The error of an Async op is kept by its stream until a
	// synchronization of that stream takes it (TakeErr).
	Err error

	dep     *stream // ItemWait
	depSeq  uint64
	reached func() // ItemMark: what reaching it does (a free completes)
	start   func() // ItemWork: what starting it takes (a kernel's scratch)
	end     func() // ItemWork: what ending it gives back
}

// OutputKind says what an Output reports.
type OutputKind uint8

// The outputs of the state machine.
const (
	// OutStart: the driver should start Item's work now; it reports the
	// end with Finish.
	OutStart OutputKind = iota + 1
	// OutComplete: Item's work is complete on the device.
	OutComplete
	// OutMet: everything Wait waits for has completed; the host call may
	// return (the driver calls Observe and Return when it does).
	OutMet
)

// Output is one decision of the state machine, in the order taken.
type Output struct {
	Kind OutputKind
	Item *Item // OutStart, OutComplete
	Wait *Wait // OutMet
}

// WaitState is how far a host wait has got.
type WaitState uint8

// The states of a host wait, in order.
const (
	Waiting  WaitState = iota + 1 // some target not yet complete
	Met                           // every target complete
	Observed                      // the host returned: frees it covered are observed
	Returned                      // its effect is applied and its result given out
)

// Wait is a host call that waits for streams to reach given positions
// (a stream, event or device-wide synchronization, and the calls that
// synchronize the device as a side effect).
type Wait struct {
	Op    gpu.Op
	Tag   any
	State WaitState
	// Waited is the Result.Waited the call will report: it waited for work
	// of another stream than the one it names.
	Waited bool
	// Releases is how many bytes of device memory the call gives back when
	// it returns (a cudaFree's buffer), for a driver that charges the
	// release its costs.
	Releases int64

	targets   []target
	errStream gpu.Stream        // whose async errors the call reports
	effect    func(*gpu.Result) // the call's own effect at Return
	observe   func()            // what returning observes
}

type target struct {
	s   *stream
	seq uint64
}

type stream struct {
	id        gpu.Stream
	queue     []*Item
	head      int
	running   bool    // the head item is started (or being retired)
	blocked   bool    // listed in Streams.blocked
	held      bool    // a wait on another stream held it since its last start
	submitted uint64  // Seq of the last item enqueued
	completed uint64  // Seq of the last item completed
	errs      []error // errors of async work no synchronization has reported
}

// Streams is the stream-ordering half of the model: FIFO queues of items, the
// waits of one stream on another, and host waits on stream positions. It
// holds no clock: a driver feeds it submissions and completions and carries
// out the Outputs it returns, in order.
type Streams struct {
	streams map[gpu.Stream]*stream
	ordered []*stream // by id, so that nothing depends on map order
	next    gpu.Stream
	waiters []*Wait
	blocked []*stream // streams whose head waits on another stream
	out     []Output
	// startFailed: Options.StartFailedWork.
	startFailed bool
}

// NewStreams returns an empty set of streams.
func NewStreams() *Streams {
	return &Streams{streams: map[gpu.Stream]*stream{}, next: 1}
}

// NewStream returns a stream id not used before.
func (ss *Streams) NewStream() gpu.Stream {
	id := ss.next
	ss.stream(id)
	return id
}

// stream returns the stream id, creating it on first use.
func (ss *Streams) stream(id gpu.Stream) *stream {
	if s, ok := ss.streams[id]; ok {
		return s
	}
	s := &stream{id: id}
	ss.streams[id] = s
	i := sort.Search(len(ss.ordered), func(i int) bool { return ss.ordered[i].id > id })
	ss.ordered = append(ss.ordered, nil)
	copy(ss.ordered[i+1:], ss.ordered[i:])
	ss.ordered[i] = s
	if id >= ss.next {
		ss.next = id + 1
	}
	return s
}

// Outputs returns the decisions taken since the last call, oldest first.
func (ss *Streams) Outputs() []Output {
	out := ss.out
	ss.out = nil
	return out
}

func (ss *Streams) emit(o Output) { ss.out = append(ss.out, o) }

// Busy says whether any stream has work that has not completed.
func (ss *Streams) Busy() bool {
	for _, s := range ss.ordered {
		if s.completed < s.submitted {
			return true
		}
	}
	return false
}

// Enqueue appends an item of kind ItemWork or ItemMark to stream op.Stream
// (creating it on first use); it starts once everything before it on the
// stream has completed.
func (ss *Streams) Enqueue(kind ItemKind, op gpu.Op, tag any) (*Item, error) {
	if kind != ItemWork && kind != ItemMark {
		return nil, fmt.Errorf("enqueue %s: item kind %d is not work or a mark", op.Kind, kind)
	}
	it := &Item{Kind: kind, Op: op, Tag: tag}
	ss.enqueue(ss.stream(op.Stream), it)
	return it, nil
}

func (ss *Streams) enqueue(s *stream, it *Item) {
	s.submitted++
	it.Stream, it.Seq, it.State = s.id, s.submitted, Enqueued
	s.queue = append(s.queue, it)
	ss.pump(s)
}

// waitOn makes s wait, at its current end, until dep has completed up to seq.
func (ss *Streams) waitOn(s, dep *stream, seq uint64) {
	ss.enqueue(s, &Item{Kind: ItemWait, dep: dep, depSeq: seq})
}

// Finish reports that a started ItemWork has completed on the device. It is
// an error to finish an item that is not the started head of its stream.
func (ss *Streams) Finish(it *Item) error { return ss.FinishErr(it, nil) }

// FinishErr is Finish for work that ended with err (nil: it succeeded). The
// error of an Async op stays with its stream until a synchronization takes it.
func (ss *Streams) FinishErr(it *Item, err error) error {
	s, ok := ss.streams[it.Stream]
	if !ok || it.Kind != ItemWork || it.State != Started || s.head >= len(s.queue) || s.queue[s.head] != it {
		return fmt.Errorf("finish %s on stream %d (seq %d): not the started head of its stream", it.Op.Kind, it.Stream, it.Seq)
	}
	it.Err = err
	ss.finish(s, it)
	ss.pump(s)
	return nil
}

// pump starts what can start at the head of s.
func (ss *Streams) pump(s *stream) {
	for !s.running && s.head < len(s.queue) {
		it := s.queue[s.head]
		s.running = true
		switch it.Kind {
		case ItemWork:
			it.State, it.Waited, s.held = Started, s.held, false
			if it.start != nil {
				it.start()
			}
			if it.Err != nil && !ss.startFailed {
				// What the work needed failed (its scratch did not fit):
				// it completes, failed, without running.
				ss.finish(s, it)
				continue
			}
			ss.emit(Output{Kind: OutStart, Item: it})
			return
		case ItemWait:
			if it.dep.completed < it.depSeq {
				// Picked up again by checkWaiters when the other stream moves.
				s.running, s.held = false, true
				if !s.blocked {
					s.blocked = true
					ss.blocked = append(ss.blocked, s)
				}
				return
			}
			ss.finish(s, it)
		case ItemMark:
			if it.reached != nil {
				it.reached()
			}
			ss.finish(s, it)
		}
	}
}

// finish retires the head item of s without recursing into pump.
func (ss *Streams) finish(s *stream, it *Item) {
	s.queue[s.head] = nil
	s.head++
	if s.head > 64 && s.head*2 > len(s.queue) {
		s.queue = append(s.queue[:0], s.queue[s.head:]...)
		s.head = 0
	}
	s.completed = it.Seq
	s.running = false
	it.State = Complete
	if it.Kind == ItemWork {
		if it.end != nil {
			it.end()
		}
		if it.Op.Async && it.Err != nil {
			s.errs = append(s.errs, it.Err)
		}
		ss.emit(Output{Kind: OutComplete, Item: it})
	}
	ss.checkWaiters()
}

// TakeErr returns, joined, the errors of the async work of stream id that no
// synchronization has reported yet, and forgets them.
func (ss *Streams) TakeErr(id gpu.Stream) error {
	s, ok := ss.streams[id]
	if !ok || len(s.errs) == 0 {
		return nil
	}
	err := errors.Join(s.errs...)
	s.errs = nil
	return err
}

// Errors takes the async errors a met wait reports: those of the stream its
// op names (for an event sync, the event's stream).
func (ss *Streams) Errors(w *Wait) error {
	if w.errStream == 0 {
		return nil
	}
	return ss.TakeErr(w.errStream)
}

// WaitStream registers a host wait for everything enqueued on op.Stream so
// far (cudaStreamSynchronize); it is met, through an OutMet, once that has
// completed.
func (ss *Streams) WaitStream(op gpu.Op, tag any) *Wait {
	s := ss.stream(op.Stream)
	w := &Wait{Op: op, Tag: tag, targets: []target{{s, s.submitted}}, errStream: s.id}
	ss.addWait(w)
	return w
}

// WaitItem registers a host wait for it and everything before it on its
// stream (cudaEventSynchronize of an event recorded as it).
func (ss *Streams) WaitItem(it *Item, op gpu.Op, tag any) *Wait {
	s := ss.stream(it.Stream)
	w := &Wait{Op: op, Tag: tag, targets: []target{{s, it.Seq}}, Waited: s.id != op.Stream, errStream: s.id}
	ss.addWait(w)
	return w
}

// WaitDevice registers a host wait for everything enqueued on every stream
// so far (cudaDeviceSynchronize, and the calls that synchronize the device);
// Waited says whether a stream other than op.Stream had work.
func (ss *Streams) WaitDevice(op gpu.Op, tag any) *Wait {
	targets, other := ss.busyTargets(op.Stream)
	w := &Wait{Op: op, Tag: tag, targets: targets, Waited: other, errStream: op.Stream}
	ss.addWait(w)
	return w
}

// addWait registers a host wait; it is met at once when its targets are.
func (ss *Streams) addWait(w *Wait) {
	w.State = Waiting
	if w.met() {
		w.State = Met
		ss.emit(Output{Kind: OutMet, Wait: w})
		return
	}
	ss.waiters = append(ss.waiters, w)
}

func (w *Wait) met() bool {
	for _, t := range w.targets {
		if t.s.completed < t.seq {
			return false
		}
	}
	return true
}

// checkWaiters meets the host waits whose targets are now complete and
// restarts streams held by another stream's progress.
func (ss *Streams) checkWaiters() {
	if len(ss.waiters) > 0 {
		kept := ss.waiters[:0]
		var ready []*Wait
		for _, w := range ss.waiters {
			if w.met() {
				ready = append(ready, w)
			} else {
				kept = append(kept, w)
			}
		}
		for i := len(kept); i < len(ss.waiters); i++ {
			ss.waiters[i] = nil
		}
		ss.waiters = kept
		for _, w := range ready {
			w.State = Met
			ss.emit(Output{Kind: OutMet, Wait: w})
		}
	}
	if len(ss.blocked) > 0 {
		blocked := ss.blocked
		ss.blocked = nil
		for _, s := range blocked {
			s.blocked = false
			ss.pump(s)
		}
	}
}

// busyTargets lists, by stream id, every stream with incomplete work and the
// position it must reach; other says whether one of them is not own.
func (ss *Streams) busyTargets(own gpu.Stream) (targets []target, other bool) {
	for _, s := range ss.ordered {
		if s.completed < s.submitted {
			targets = append(targets, target{s, s.submitted})
			if s.id != own {
				other = true
			}
		}
	}
	return targets, other
}
