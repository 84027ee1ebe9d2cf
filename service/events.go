package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/cuzk/cuzk/actors"
	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/runner"
)

// watchBuffer is how many events a WatchJob stream may fall behind before
// it is ended: the actors never wait for a slow client.
const watchBuffer = 4096

var eventKinds = map[actors.EventKind]string{
	actors.EvStageStart:         "stage_start",
	actors.EvStageEnd:           "stage_end",
	actors.EvPartitionDone:      "partition_done",
	actors.EvPartitionRetry:     "partition_retry",
	actors.EvPartitionFailed:    "partition_failed",
	actors.EvPartitionCancelled: "partition_cancelled",
	actors.EvJobDone:            "job_done",
}

// watcher is one WatchJob stream's queue.
type watcher struct {
	ch     chan *cuzkv1.JobEvent
	behind bool // closed because it fell behind
}

// fanout hands the actors' events of each job to the streams watching it.
type fanout struct {
	mu     sync.Mutex
	subs   map[string]map[*watcher]bool
	closed bool
}

func newFanout() *fanout { return &fanout{subs: map[string]map[*watcher]bool{}} }

func (f *fanout) subscribe(job string) (*watcher, func()) {
	w := &watcher{ch: make(chan *cuzkv1.JobEvent, watchBuffer)}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		close(w.ch)
		return w, func() {}
	}
	if f.subs[job] == nil {
		f.subs[job] = map[*watcher]bool{}
	}
	f.subs[job][w] = true
	return w, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.subs[job][w] {
			delete(f.subs[job], w)
			close(w.ch)
		}
		if len(f.subs[job]) == 0 {
			delete(f.subs, job)
		}
	}
}

func (f *fanout) publish(job string, ev *cuzkv1.JobEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for w := range f.subs[job] {
		select {
		case w.ch <- ev:
		default:
			w.behind = true
			delete(f.subs[job], w)
			close(w.ch)
		}
	}
}

func (f *fanout) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for job, ws := range f.subs {
		for w := range ws {
			close(w.ch)
		}
		delete(f.subs, job)
	}
}

// Observe implements actors.Observer: it passes a job's partition events to
// the streams watching it, never blocking.
func (s *Server) Observe(e actors.Event) {
	kind, ok := eventKinds[e.Kind]
	if !ok {
		return
	}
	ev := &cuzkv1.JobEvent{JobId: e.Partition.Job, Kind: kind, Partition: uint32(max(e.Partition.Partition, 0)),
		Device: int32(e.Device), Worker: int32(e.Worker), Error: e.Err, Count: uint32(max(e.Count, 0)),
		At: timestamppb.New(time.Now())}
	if e.Kind == actors.EvStageStart || e.Kind == actors.EvStageEnd {
		ev.Stage = e.Stage.String()
	}
	s.events.publish(ev.JobId, ev)
}

// WatchJob implements ProvingEngineHandler: the job's events until it ends.
// A job that has ended gets one job_done event.
func (s *Server) WatchJob(ctx context.Context, req *connect.Request[cuzkv1.WatchJobRequest], stream *connect.ServerStream[cuzkv1.JobEvent]) error {
	id := req.Msg.JobId
	if id == "" {
		return invalid("job_id is required")
	}
	// Subscribed before the status is read, so no event falls between.
	w, unsubscribe := s.events.subscribe(id)
	defer unsubscribe()
	js, err := s.svc.Status(id)
	if err != nil {
		return toConnect(err)
	}
	switch js.State {
	case runner.StateRunning:
	case runner.StateUnfinished:
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("job %s is unfinished and not running in this daemon: %s", id, js.Error))
	default:
		return stream.Send(&cuzkv1.JobEvent{JobId: id, Kind: "job_done", Count: uint32(js.Proved), Error: js.Error, At: timestamppb.Now()})
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.ch:
			if !ok {
				if w.behind {
					return connect.NewError(connect.CodeResourceExhausted,
						fmt.Errorf("the stream fell %d events behind and was ended; GetJob has the job's state", watchBuffer))
				}
				return connect.NewError(connect.CodeUnavailable, errors.New("the daemon is stopping"))
			}
			if err := stream.Send(ev); err != nil {
				return err
			}
			if ev.Kind == "job_done" {
				return nil
			}
		}
	}
}

// Relay is an actors.Observer that passes events on to a Server set later:
// the runner.Service starts (with its observers) before the Server that
// serves it exists. Events before Set are of no stream's interest.
type Relay struct{ p atomic.Pointer[Server] }

// Set makes s the server events go to.
func (r *Relay) Set(s *Server) { r.p.Store(s) }

// Observe implements actors.Observer.
func (r *Relay) Observe(e actors.Event) {
	if s := r.p.Load(); s != nil {
		s.Observe(e)
	}
}
