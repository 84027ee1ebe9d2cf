package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/emu"
	"github.com/cuzk/cuzk/metrics"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/trace"
)

type sleepExec struct{}

func (sleepExec) RunStage(ctx context.Context, w actors.StageWork) error {
	time.Sleep(time.Millisecond)
	return nil
}

func (sleepExec) Kernel(p actors.PartitionID, device int) *gpu.Kernel {
	return &gpu.Kernel{Run: func(context.Context) error { time.Sleep(3 * time.Millisecond); return nil }}
}

func (sleepExec) Release(actors.PartitionID) {}

type jobWaiter chan actors.Event

func (j jobWaiter) Observe(e actors.Event) {
	if e.Kind == actors.EvJobDone {
		j <- e
	}
}

// TestRunSummaryAndTrace runs the engine on an emulated device with metrics
// and a trace attached, as the CLI does.
func TestRunSummaryAndTrace(t *testing.T) {
	dev, err := emu.New(emu.Options{Capacity: 30 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	m := metrics.New()
	var buf bytes.Buffer
	tw := trace.New(&buf)
	done := make(jobWaiter, 1)
	rt := runner.NewRuntime(context.Background(), sleepExec{}, []gpu.Device{dev}, 1)
	eng, err := actors.Start(rt, []gpu.Info{dev.Info()}, actors.Config{Design: "split", Observer: actors.Observers{m, tw, done}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Stop()
	if err := eng.Submit(actors.JobSpec{ID: "j", Partitions: 8, VRAM: 12 << 30}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-done:
		if e.Err != "" {
			t.Fatal(e.Err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("job did not finish")
	}
	s := m.Summary()
	t.Logf("\n%s", s)
	if s.Done != 8 || len(s.Devices) != 1 || s.Devices[0].Busy <= 0 || len(s.Locks) != 2 {
		t.Errorf("summary %+v", s)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
}
