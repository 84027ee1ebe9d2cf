package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/prover"
)

// setupTasks runs StartSetup's setups in the background, one at a time
// (a setup takes the host's cores and much of its memory).
type setupTasks struct {
	s      *Server
	mu     sync.Mutex
	tasks  map[string]*cuzkv1.SetupTask
	byDir  map[string]string // running task per key directory
	next   int
	runMu  sync.Mutex // one setup at a time
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newSetupTasks(s *Server) *setupTasks {
	ctx, cancel := context.WithCancel(context.Background())
	return &setupTasks{s: s, tasks: map[string]*cuzkv1.SetupTask{}, byDir: map[string]string{}, ctx: ctx, cancel: cancel}
}

// stop cancels the setups and waits for them (a setup that cannot be
// interrupted is waited for until ctx ends).
func (t *setupTasks) stop(ctx context.Context) error {
	t.cancel()
	done := make(chan struct{})
	go func() {
		t.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("setup still running: %w", ctx.Err())
	}
}

// StartSetup implements ProvingEngineHandler.
func (s *Server) StartSetup(ctx context.Context, req *connect.Request[cuzkv1.StartSetupRequest]) (*connect.Response[cuzkv1.SetupTask], error) {
	if s.opt.Setup == nil {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("setup: this daemon runs no setup; use cuzk setup"))
	}
	ref, err := s.keyRef(req.Msg.Keys)
	if err != nil {
		return nil, err
	}
	if _, err := prover.ReadManifest(ref.dir); err == nil {
		return nil, connect.NewError(connect.CodeAlreadyExists, fmt.Errorf("keys for %s at %d constraints are in %s already", ref.circuit.Name(), ref.target, ref.dir))
	}
	t := s.setups
	t.mu.Lock()
	if id, ok := t.byDir[ref.dir]; ok {
		task := proto.Clone(t.tasks[id]).(*cuzkv1.SetupTask)
		t.mu.Unlock()
		return connect.NewResponse(task), nil
	}
	t.mu.Unlock()
	need := SetupEstimate(ref.target)
	if err := s.fits(fmt.Sprintf("setup of %s at %d constraints", ref.circuit.Name(), ref.target), need); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.next++
	id := "setup-" + strconv.Itoa(t.next)
	task := &cuzkv1.SetupTask{TaskId: id, Keys: &cuzkv1.KeySetRef{Circuit: ref.circuit.Name(), Constraints: uint64(ref.target)},
		Dir: ref.dir, State: "running", MemoryEstimate: uint64(need), Started: timestamppb.Now()}
	t.tasks[id], t.byDir[ref.dir] = task, id
	answer := proto.Clone(task).(*cuzkv1.SetupTask)
	t.wg.Add(1)
	t.mu.Unlock()
	slog.Info("setup started", "task", id, "circuit", ref.circuit.Name(), "constraints", ref.target, "dir", ref.dir)
	go t.run(task, ref)
	return connect.NewResponse(answer), nil
}

func (t *setupTasks) run(task *cuzkv1.SetupTask, ref keyRef) {
	defer t.wg.Done()
	t.runMu.Lock()
	start := time.Now()
	err := t.ctx.Err()
	if err == nil {
		err = t.s.opt.Setup(t.ctx, ref.circuit.Name(), ref.target, ref.dir)
	}
	t.runMu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byDir, ref.dir)
	task.Finished = timestamppb.Now()
	if err != nil {
		task.State, task.Error = "failed", err.Error()
		slog.Error("setup failed", "task", task.TaskId, "err", err)
		return
	}
	task.State = "done"
	slog.Info("setup done", "task", task.TaskId, "dir", ref.dir, "took", time.Since(start).Round(time.Millisecond))
}

// GetSetup implements ProvingEngineHandler.
func (s *Server) GetSetup(ctx context.Context, req *connect.Request[cuzkv1.GetSetupRequest]) (*connect.Response[cuzkv1.SetupTask], error) {
	t := s.setups
	t.mu.Lock()
	defer t.mu.Unlock()
	task, ok := t.tasks[req.Msg.TaskId]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("no setup task %q", req.Msg.TaskId))
	}
	return connect.NewResponse(proto.Clone(task).(*cuzkv1.SetupTask)), nil
}
