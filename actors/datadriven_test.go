package actors_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/emu"

	. "github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/runner"
)

// TestProtocols prints what one worker does for one partition under each
// design: its leases, stages and device ops, in order. Run with -rewrite
// after changing a protocol on purpose.
//
//	protocol design=D capacity=GiB vram=GiB [attempts=N] [before=s,s] [after=s,s]
func TestProtocols(t *testing.T) {
	datadriven.RunTest(t, "testdata/protocols.txt", func(t *testing.T, td *datadriven.TestData) string {
		switch td.Cmd {
		case "protocol":
			var design string
			var capacity, vram int
			attempts := 1
			td.ScanArgs(t, "design", &design)
			td.ScanArgs(t, "capacity", &capacity)
			td.ScanArgs(t, "vram", &vram)
			if td.HasArg("attempts") {
				td.ScanArgs(t, "attempts", &attempts)
			}
			stages := func(key string) []Stage {
				if !td.HasArg(key) {
					return nil
				}
				var names string
				td.ScanArgs(t, key, &names)
				out := []Stage{}
				for _, n := range strings.Split(names, ",") {
					for st := StageSynthesize; st <= StageFinalize; st++ {
						if st.String() == n {
							out = append(out, st)
						}
					}
				}
				return out
			}
			rec := newRecorder()
			d, err := emu.New(emu.Options{Capacity: int64(capacity) * gib})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			rt := syncRuntime{runner.NewRuntime(context.Background(), newFakeExec(0, 0), []gpu.Device{d}, 1)}
			eng, err := Start(rt, []gpu.Info{d.Info()}, Config{Design: design, WorkersPerDevice: 1, MaxAttempts: attempts, Observer: rec,
				Before: stages("before"), After: stages("after")})
			if err != nil {
				return err.Error()
			}
			defer eng.Stop()
			if err := eng.Submit(JobSpec{ID: "j", Partitions: 1, VRAM: int64(vram) * gib}); err != nil {
				return err.Error()
			}
			rec.wait(t, 1)
			var b strings.Builder
			for _, e := range rec.all() {
				if line := describe(e); line != "" {
					fmt.Fprintln(&b, line)
				}
			}
			return b.String()
		default:
			t.Fatalf("unknown command %q", td.Cmd)
			return ""
		}
	})
}

// describe prints an event without its times.
func describe(e Event) string {
	switch e.Kind {
	case EvStageStart:
		return "start " + e.Stage.String()
	case EvStageEnd:
		if e.Err != "" {
			return fmt.Sprintf("end   %s: %s", e.Stage, e.Err)
		}
		return "end   " + e.Stage.String()
	case EvLeaseWait:
		return "  wait    " + e.Lock
	case EvLeaseGrant:
		return "  grant   " + e.Lock
	case EvLeaseRelease:
		return "  release " + e.Lock
	case EvDeviceOp:
		// Whether an op had to wait depends on how far the emulated
		// device's stream goroutines got, so the protocol leaves it out.
		s := "    op " + e.Op
		if e.Async {
			s += " (returns at enqueue)"
		}
		if e.Err != "" {
			s += ": " + e.Err
		}
		return s
	case EvOOM:
		if e.Fallback {
			return "    oom " + e.Op + " (fallback)"
		}
		return "    oom " + e.Op
	case EvFallback:
		return "  fallback"
	case EvVRAM:
		return "    vram " + gpu.FormatBytes(e.Bytes)
	case EvPartitionDone:
		return "done " + e.Partition.String()
	case EvPartitionRetry:
		return "retry " + e.Partition.String() + ": " + e.Err
	case EvPartitionFailed:
		return "failed " + e.Partition.String() + ": " + e.Err
	case EvJobDone:
		if e.Err != "" {
			return "job done: " + e.Err
		}
		return "job done"
	}
	return ""
}

// TestDispatch checks the order in which one worker takes partitions:
// priority first, then job order, then partition index. The first job's
// first partition holds the worker (its synthesis waits at a gate) while
// the others are submitted.
//
//	dispatch
//	<job> <priority> <partitions>
//	...
func TestDispatch(t *testing.T) {
	datadriven.RunTest(t, "testdata/dispatch.txt", func(t *testing.T, td *datadriven.TestData) string {
		exec := newFakeExec(0, 0)
		var specs []JobSpec
		for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 {
				t.Fatalf("bad line %q", line)
			}
			prio, err := ParsePriority(f[1])
			if err != nil {
				t.Fatal(err)
			}
			n, err := strconv.Atoi(f[2])
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, JobSpec{ID: f[0], Partitions: n, VRAM: gib, Priority: prio})
		}
		gate := make(chan struct{})
		exec.gates[specs[0].ID+"/0 synthesize"] = gate
		r := newRig(t, Config{Design: "single", WorkersPerDevice: 1}, 1, 16*gib, exec)
		// The first job occupies the worker; the rest queue behind it.
		waitFor := func(kind EventKind, n int) {
			deadline := time.Now().Add(5 * time.Second)
			for count(r.rec.all(), kind) < n && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
		}
		for i, s := range specs {
			if err := r.eng.Submit(s); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				waitFor(EvStageStart, 1)
			}
		}
		waitFor(EvJobAccepted, len(specs))
		close(gate)
		r.rec.wait(t, len(specs))
		var order []string
		for _, e := range r.rec.all() {
			if e.Kind == EvStageStart && e.Stage == StageSynthesize {
				order = append(order, e.Partition.String())
			}
		}
		return strings.Join(order, "\n") + "\n"
	})
}
