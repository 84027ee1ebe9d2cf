package runner

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/emu"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
)

// copyingCPU is the CPU backend with a GPU's staging: Stage copies the
// prepared vectors, so Compute leaves the Prepared as prep made it, and a
// failed device attempt can compute again from it. Its first compute fails.
type copyingCPU struct {
	prover.CPU
	failures atomic.Int32
}

func (c *copyingCPU) ConsumesPrepared() bool { return false }

func (c *copyingCPU) Stage(ctx context.Context, k *prover.Keys, p *prover.Prepared) (prover.Staged, error) {
	cp := *p
	cp.A, cp.B, cp.C = slices.Clone(p.A), slices.Clone(p.B), slices.Clone(p.C)
	return c.CPU.Stage(ctx, k, &cp)
}

func (c *copyingCPU) Compute(ctx context.Context, k *prover.Keys, s prover.Staged) (*prover.Computed, error) {
	if c.failures.Add(-1) >= 0 {
		return nil, errors.New("injected compute failure")
	}
	return c.CPU.Compute(ctx, k, s)
}

// hostEvents keeps the host gate's events and the synthesis starts.
type hostEvents struct {
	mu     sync.Mutex
	held   []actors.Event
	synths map[int]int
}

func (h *hostEvents) Observe(e actors.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case e.Kind == actors.EvHostMem:
		h.held = append(h.held, e)
	case e.Kind == actors.EvStageStart && e.Stage == actors.StageSynthesize:
		h.synths[e.Partition.Partition]++
	}
}

func startGated(t *testing.T, b prover.Backend, limit int64, obs actors.Observer) (*Service, *store.Store) {
	t.Helper()
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dev, err := emu.New(emu.Options{Capacity: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := StartService(ServiceOptions{Backend: b, Devices: []gpu.Device{dev}, Store: st, Seed: 1, Observer: obs,
		Config: actors.Config{WorkersPerDevice: 1, HostMemLimit: limit, SynthWorkers: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		svc.Close(context.Background())
		dev.Close()
	})
	return svc, st
}

// Under the host-memory gate every proof verifies, the ledger stays within
// the limit, and a failed compute of a partition whose prepared data
// survives it computes again without a second synthesis.
func TestServiceProvesUnderTheHostGate(t *testing.T) {
	k := testKeys(t)
	one := prover.HostFootprint(k)
	for _, tc := range []struct {
		name    string
		backend prover.Backend
		synths  int // of the 4 partitions, one of whose computes fails once
	}{
		{"cpu", &flakyCPU{}, 5},       // its compute overwrites the prepared data: synthesized again
		{"copying", &copyingCPU{}, 4}, // the prepared data survives: computed again from it
	} {
		t.Run(tc.name, func(t *testing.T) {
			switch b := tc.backend.(type) {
			case *flakyCPU:
				b.failures.Store(1)
			case *copyingCPU:
				b.failures.Store(1)
			}
			obs := &hostEvents{synths: map[int]int{}}
			svc, st := startGated(t, tc.backend, 2*one, obs)
			seed := []byte("gated")
			if err := svc.Submit(Submission{JobRequest: JobRequest{ID: "g", Keys: k, Seed: seed, Partitions: 4},
				Target: testTarget, Out: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			waitDone(t, svc, "g")
			checkProofs(t, st, k, "g", seed)
			obs.mu.Lock()
			defer obs.mu.Unlock()
			if len(obs.held) == 0 {
				t.Fatal("no host-memory events: the gate is off")
			}
			for _, e := range obs.held {
				if e.Bytes > 2*one {
					t.Errorf("host memory held %d bytes, limit %d", e.Bytes, 2*one)
				}
			}
			if last := obs.held[len(obs.held)-1]; last.Bytes != 0 {
				t.Errorf("host memory still held at the end: %d bytes", last.Bytes)
			}
			n := 0
			for _, c := range obs.synths {
				n += c
			}
			if n != tc.synths {
				t.Errorf("%d syntheses (%v) for 4 partitions and one failed compute, want %d", n, obs.synths, tc.synths)
			}
		})
	}
}

func TestServiceRefusesAPartitionLargerThanTheHostLimit(t *testing.T) {
	k := testKeys(t)
	svc, _ := startGated(t, prover.CPU{}, prover.HostFootprint(k)-1, nil)
	err := svc.Submit(Submission{JobRequest: JobRequest{ID: "big", Keys: k, Partitions: 1}, Target: testTarget})
	if !errors.Is(err, ErrHostTooLarge) {
		t.Fatalf("submit: %v, want ErrHostTooLarge", err)
	}
	if _, err := svc.Status("big"); err == nil {
		t.Errorf("a refused job has a status")
	}
}

// A partition the host gate has prepared shows as ready, on no device, until
// a GPU worker starts its device part.
func TestReadyPartitionsShowAsReady(t *testing.T) {
	s := &Service{jobs: map[string]*tracked{"j": {done: make(chan struct{}), live: map[int]Running{}, ran: map[int]Running{},
		took: map[int]map[string]time.Duration{}}}}
	p := actors.PartitionID{Job: "j", Partition: 3}
	s.Observe(actors.Event{Kind: actors.EvStageStart, Device: -1, Worker: 1, Partition: p, Stage: actors.StagePrep})
	s.Observe(actors.Event{Kind: actors.EvStageEnd, Device: -1, Worker: 1, Partition: p, Stage: actors.StagePrep})
	if got := s.jobs["j"].live[3]; got != (Running{Stage: StageReady, Device: -1, Worker: -1}) {
		t.Fatalf("after the gate's prep: %+v, want ready on no device", got)
	}
	s.Observe(actors.Event{Kind: actors.EvStageStart, Device: 0, Worker: 2, Partition: p, Stage: actors.StageStage})
	if got := s.jobs["j"].live[3]; got != (Running{Stage: actors.StageStage.String(), Device: 0, Worker: 2}) {
		t.Fatalf("after the GPU worker took it: %+v", got)
	}
	// A worker's own prep (no gate) leaves it where it is.
	q := actors.PartitionID{Job: "j", Partition: 4}
	s.Observe(actors.Event{Kind: actors.EvStageStart, Device: 0, Worker: 0, Partition: q, Stage: actors.StagePrep})
	s.Observe(actors.Event{Kind: actors.EvStageEnd, Device: 0, Worker: 0, Partition: q, Stage: actors.StagePrep})
	if got := s.jobs["j"].live[4]; got.Stage != "prep" || got.Device != 0 {
		t.Fatalf("a worker's prep: %+v", got)
	}
}
