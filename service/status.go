package service

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
)

// memInfoTimeout bounds the wait for a device's free memory: the query
// does not wait for other work, but a wedged device must not hang GetStatus.
const memInfoTimeout = 2 * time.Second

// GetStatus implements ProvingEngineHandler.
func (s *Server) GetStatus(ctx context.Context, _ *connect.Request[cuzkv1.GetStatusRequest]) (*connect.Response[cuzkv1.GetStatusResponse], error) {
	jobs, err := s.svc.Jobs()
	if err != nil {
		return nil, toConnect(err)
	}
	out := &cuzkv1.GetStatusResponse{Design: s.opt.Design, Version: s.opt.Version,
		Uptime: durationpb.New(time.Since(s.started)), Totals: &cuzkv1.Totals{}}
	if s.opt.Cluster != nil {
		cs, err := s.opt.Cluster()
		if err != nil {
			return nil, connect.NewError(connect.CodeInternal, err)
		}
		out.Cluster = cs
	}
	if s.opt.Backend != nil {
		out.Backend = s.opt.Backend.Name()
	}
	queues := map[cuzkv1.Priority]*cuzkv1.QueueStatus{}
	running := map[string]bool{}
	onDevice := map[int]map[string]bool{}
	t := out.Totals
	for _, j := range jobs {
		t.Jobs++
		t.PartitionsProved += uint64(j.Proved)
		t.PartitionsFailed += uint64(j.Failed)
		switch j.State {
		case runner.StateRunning:
			t.JobsRunning++
		case runner.StateDone:
			t.JobsDone++
		case runner.StateFailed:
			t.JobsFailed++
		case runner.StateCancelled:
			t.JobsCancelled++
		case runner.StateUnfinished:
			t.JobsUnfinished++
		}
		if j.State != runner.StateRunning {
			continue
		}
		running[j.KeyHash] = true
		p := priorityOf(j.Priority)
		q := queues[p]
		if q == nil {
			q = &cuzkv1.QueueStatus{Priority: p}
			queues[p] = q
		}
		q.Jobs++
		q.PartitionsPending += uint32(max(j.Pending, 0))
		q.PartitionsInFlight += uint32(j.InFlight)
		if j.InFlight > 0 {
			if full, err := s.svc.Status(j.ID); err == nil {
				for _, ps := range full.Partitions {
					// A cluster job's partition runs on a member's device
					// (Member set, even this one's): this daemon's devices
					// show the lease jobs that run on them instead.
					if ps.Running != nil && ps.Running.Member == "" {
						if onDevice[ps.Running.Device] == nil {
							onDevice[ps.Running.Device] = map[string]bool{}
						}
						onDevice[ps.Running.Device][j.ID] = true
					}
				}
			}
		}
	}
	for p := cuzkv1.Priority_PRIORITY_CRITICAL; p >= cuzkv1.Priority_PRIORITY_LOW; p-- {
		if q := queues[p]; q != nil {
			out.Queues = append(out.Queues, q)
		}
	}
	for _, d := range s.opt.Devices {
		out.Gpus = append(out.Gpus, s.gpuStatus(ctx, d, onDevice))
	}
	out.KeySets = s.keySets(running)
	return connect.NewResponse(out), nil
}

func (s *Server) gpuStatus(ctx context.Context, d gpu.Device, onDevice map[int]map[string]bool) *cuzkv1.GpuStatus {
	info := d.Info()
	g := &cuzkv1.GpuStatus{Index: int32(info.Index), Name: info.Name, VramTotal: uint64(max(info.Total, 0))}
	res := make(chan gpu.Result, 1)
	d.Submit(gpu.Op{Kind: gpu.OpMemInfo}, func(r gpu.Result) { res <- r })
	select {
	case r := <-res:
		if r.Err == nil {
			g.VramFree = uint64(max(r.Free, 0))
			if r.Total > 0 {
				g.VramTotal = uint64(r.Total)
			}
		}
	case <-time.After(memInfoTimeout):
	case <-ctx.Done():
	}
	if h := prover.CapabilitiesOf(s.opt.Backend).Keys; h != nil {
		held := h.Held(info.Index)
		g.KeysResident = uint64(max(held.Keys+held.Commitments+held.MSMTables, 0))
	}
	for id := range onDevice[info.Index] {
		g.CurrentJobs = append(g.CurrentJobs, id)
	}
	slices.Sort(g.CurrentJobs)
	return g
}

// GetMetrics implements ProvingEngineHandler: the text /metrics serves.
func (s *Server) GetMetrics(ctx context.Context, _ *connect.Request[cuzkv1.GetMetricsRequest]) (*connect.Response[cuzkv1.GetMetricsResponse], error) {
	if s.opt.Metrics == nil {
		return connect.NewResponse(&cuzkv1.GetMetricsResponse{}), nil
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	s.opt.Metrics.Handler().ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return connect.NewResponse(&cuzkv1.GetMetricsResponse{Text: string(b)}), nil
}
