package prover

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/keygen"
)

// TestSetupMemory measures host memory phase by phase: the setup that
// holds everything (SetupWith, then Save), the one that streams (SetupTo),
// Load, and the keys made in memory (SetupInMemory) as they are for the CPU
// backend and for a GPU run. CUZK_SETUP_MEMORY names the circuit and size
// ("porep-sha:2^20"); without it the test is skipped, as it takes minutes
// and gigabytes. The multiplications are not done: a multiplier that
// returns the base for every scalar allocates and fills what a GPU's
// returns, so the memory is the GPU setup's, less the kernel's buffers.
// Each phase's peak is the process's resident peak (VmHWM) from the end of
// the previous phase, reset through /proc/self/clear_refs.
func TestSetupMemory(t *testing.T) {
	spec := os.Getenv("CUZK_SETUP_MEMORY")
	if spec == "" {
		t.Skip("CUZK_SETUP_MEMORY=circuit:constraints measures a setup's memory")
	}
	name, size, ok := strings.Cut(spec, ":")
	if !ok {
		t.Fatalf("CUZK_SETUP_MEMORY=%q: want circuit:constraints", spec)
	}
	target, err := parseSize(size)
	if err != nil {
		t.Fatal(err)
	}
	c, err := circuits.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	rec := &phaseRecorder{start: time.Now()}
	prev := slog.Default()
	slog.SetDefault(slog.New(rec))
	defer slog.SetDefault(prev)

	var constraints int
	var inMemory, streamed uint64
	run := func(path string, f func() error) {
		freeAll()
		rec.begin(path)
		rec.record("(start)")
		if err := f(); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rec.end()
	}
	dir := t.TempDir()
	run("in-memory", func() error {
		k, err := SetupWith(c, target, fillMultiplier{})
		if err != nil {
			return err
		}
		constraints = k.Constraints()
		return k.Save(dir)
	})
	inMemory = rec.pathPeak
	run("streamed", func() error {
		_, err := SetupTo(c, target, fillMultiplier{}, dir, keygen.DumpOptions{})
		return err
	})
	streamed = rec.pathPeak
	run("load", func() error {
		k, err := Load(dir, name, nil)
		if err == nil {
			runtime.KeepAlive(k)
		}
		return err
	})
	// In memory, as bench prove --keys memory makes them: for the CPU
	// backend (all kept), and for a GPU run with cuzk's solver alone (the
	// instructions released once laid out, no domain tables).
	for _, p := range []struct {
		path string
		opt  InMemoryOptions
	}{
		{"memory", InMemoryOptions{}},
		{"memory-gpu", InMemoryOptions{Dump: keygen.DumpOptions{NoDomainTables: true}, ReleaseSystem: true}},
	} {
		run(p.path, func() error {
			k, err := SetupInMemory(c, target, fillMultiplier{}, p.opt)
			if err == nil {
				k.solver()
				runtime.GC()
				rec.record("(held)")
				runtime.KeepAlive(k)
			}
			return err
		})
	}
	rec.print(t, constraints)
	if streamed >= inMemory {
		t.Errorf("streamed setup peaks at %d MiB, the in-memory one at %d MiB", streamed>>20, inMemory>>20)
	}
}

func parseSize(s string) (int, error) {
	var e int
	if _, err := fmt.Sscanf(s, "2^%d", &e); err == nil {
		return 1 << e, nil
	}
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil {
		return 0, fmt.Errorf("size %q: want 2^k or a number", s)
	}
	return n, nil
}

// fillMultiplier returns the base for every scalar: the memory of a
// multiplication without its time.
type fillMultiplier struct{}

func (fillMultiplier) G1(base curve.G1Affine, s []fr.Element) ([]curve.G1Affine, error) {
	out := make([]curve.G1Affine, len(s))
	for i := range out {
		out[i] = base
	}
	return out, nil
}

func (fillMultiplier) G2(base curve.G2Affine, s []fr.Element) ([]curve.G2Affine, error) {
	out := make([]curve.G2Affine, len(s))
	for i := range out {
		out[i] = base
	}
	return out, nil
}

// freeAll returns the heap's free memory to the OS and resets the
// resident peak, so the next phase's peak is its own.
func freeAll() {
	debug.FreeOSMemory()
	resetPeak()
}

func resetPeak() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// phaseRecorder is a slog handler that ends a phase at each debug record of
// keygen's stages, a key file written or read, or a compile.
type phaseRecorder struct {
	mu       sync.Mutex
	start    time.Time
	last     time.Time
	path     string
	pathPeak uint64
	rows     []phaseRow
}

type phaseRow struct {
	path, phase string
	took        time.Duration
	mem         keygen.HostMemory
}

func (r *phaseRecorder) begin(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.path, r.pathPeak, r.last = path, 0, time.Now()
}

func (r *phaseRecorder) end() {
	r.record("(end)")
}

func (r *phaseRecorder) record(phase string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := keygen.ReadHostMemory()
	now := time.Now()
	r.rows = append(r.rows, phaseRow{r.path, phase, now.Sub(r.last), m})
	r.pathPeak = max(r.pathPeak, m.Peak)
	r.last = now
	resetPeak()
}

func (r *phaseRecorder) print(t *testing.T, constraints int) {
	t.Logf("%d constraints", constraints)
	t.Logf("%-10s %-16s %9s %10s %10s %10s %12s", "path", "phase", "took", "peak MiB", "rss MiB", "heap MiB", "peak B/cons")
	for _, row := range r.rows {
		t.Logf("%-10s %-16s %9s %10d %10d %10d %12.0f", row.path, row.phase, row.took.Round(time.Millisecond),
			row.mem.Peak>>20, row.mem.RSS>>20, row.mem.HeapAlloc>>20, float64(row.mem.Peak)/float64(constraints))
	}
}

func (r *phaseRecorder) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelDebug }

func (r *phaseRecorder) Handle(_ context.Context, rec slog.Record) error {
	phase := ""
	switch rec.Message {
	case "keygen":
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "stage" {
				phase = a.Value.String()
			}
			return true
		})
	case "compiled":
		phase = "compile"
	case "key file written", "key file read":
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "file" {
				phase = a.Value.String()
			}
			return true
		})
		if rec.Message == "key file written" {
			phase = "write " + phase
		} else {
			phase = "read " + phase
		}
	}
	if phase != "" {
		r.record(phase)
	}
	return nil
}

func (r *phaseRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *phaseRecorder) WithGroup(string) slog.Handler      { return r }
