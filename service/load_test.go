package service

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/internal/testenv"
)

// TestLoad runs jobs over concurrent gRPC streams on one connection: each
// stream submits a job, watches its events to the end and awaits its
// proofs. Every job must end done, every proof verify, and no partition be
// reported done twice. The suite runs a small load; CUZK_LOAD_JOBS and
// CUZK_LOAD_STREAMS make it the figures' (docs/daemon.md: 200 jobs over 50
// streams).
func TestLoad(t *testing.T) {
	jobs := testenv.Count(t, "CUZK_LOAD_JOBS", 8)
	streams := testenv.Count(t, "CUZK_LOAD_STREAMS", 8)
	e := startEngine(t, engineOpts{workers: 2})
	c := dial(t, e, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(jobs)*5*time.Second+time.Minute)
	defer cancel()

	var next, partitions, events atomic.Int64
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	began := time.Now()
	var wg sync.WaitGroup
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= jobs || ctx.Err() != nil {
					return
				}
				parts := uint32(1 + i%2)
				partitions.Add(int64(parts))
				if err := loadJob(ctx, c, i, parts, &events); err != nil {
					fail(fmt.Errorf("job %d: %w", i, err))
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	for _, err := range errs {
		t.Error(err)
	}
	var st cuzkv1.GetStatusResponse
	if err := c.call(ctx, "GetStatus", &cuzkv1.GetStatusRequest{}, &st); err != nil {
		t.Fatal(err)
	}
	if st.Totals.JobsDone != uint32(jobs) || st.Totals.PartitionsProved != uint64(partitions.Load()) || st.Totals.JobsRunning != 0 {
		t.Errorf("totals %v, want %d jobs done, %d partitions proved", st.Totals, jobs, partitions.Load())
	}
	t.Logf("load: %d jobs (%d partitions) over %d streams in %s: %.1f partitions/s, %d events streamed",
		jobs, partitions.Load(), streams, took.Round(time.Millisecond), float64(partitions.Load())/took.Seconds(), events.Load())
}

// loadJob submits job i, streams its events, awaits and verifies its proofs.
func loadJob(ctx context.Context, c *grpcClient, i int, parts uint32, events *atomic.Int64) error {
	var sub cuzkv1.SubmitProofResponse
	if err := c.call(ctx, "SubmitProof", exampleJob(fmt.Sprintf("load-%d", i), parts, nil), &sub); err != nil {
		return err
	}
	evs, err := c.watch(ctx, sub.JobId)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	events.Add(int64(len(evs)))
	seen := map[uint32]bool{}
	for _, ev := range evs {
		if ev.Kind != "partition_done" {
			continue
		}
		if seen[ev.Partition] {
			return fmt.Errorf("partition %d reported done twice", ev.Partition)
		}
		seen[ev.Partition] = true
	}
	if len(evs) == 0 || evs[len(evs)-1].Kind != "job_done" {
		return fmt.Errorf("the stream ended without job_done")
	}
	var res cuzkv1.AwaitProofResponse
	if err := c.call(ctx, "AwaitProof", &cuzkv1.AwaitProofRequest{JobId: sub.JobId}, &res); err != nil {
		return fmt.Errorf("await: %w", err)
	}
	if res.Job.State != cuzkv1.JobState_JOB_STATE_DONE || len(res.Proofs) != int(parts) {
		return fmt.Errorf("state %v with %d proofs of %d", res.Job.State, len(res.Proofs), parts)
	}
	for _, p := range res.Proofs {
		if res.Job.Partitions[p.Index].Attempts != 1 {
			return fmt.Errorf("partition %d took %d attempts", p.Index, res.Job.Partitions[p.Index].Attempts)
		}
		if err := verify(p); err != nil {
			return err
		}
	}
	return nil
}
