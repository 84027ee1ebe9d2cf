package store

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// TestConcurrentProofs proves every partition of a job from several
// goroutines at once, each partition by two of them: exactly one proof per
// partition wins, the loser gets ErrAlreadyProved, and the job leaves the
// unfinished index.
func TestConcurrentProofs(t *testing.T) {
	s, err := Open("/db", &Options{FS: vfs.NewMem(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 16
	if err := s.CreateJob(Job{ID: "c", NumPartitions: n}); err != nil {
		t.Fatal(err)
	}
	var wins, losses atomic.Int32
	winner := make([]atomic.Value, n)
	var wg sync.WaitGroup
	for w := range 2 {
		for i := range n {
			wg.Go(func() {
				proof := fmt.Appendf(nil, "proof-%d-by-%d", i, w)
				err := s.MarkProved("c", i, proof, nil, nil)
				switch {
				case err == nil:
					wins.Add(1)
					winner[i].Store(string(proof))
				case errors.Is(err, ErrAlreadyProved):
					losses.Add(1)
				default:
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if wins.Load() != n || losses.Load() != n {
		t.Fatalf("%d wins and %d losses, want %d of each", wins.Load(), losses.Load(), n)
	}
	parts, err := s.Partitions("c")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		if string(p.Proof) != winner[i].Load() {
			t.Fatalf("partition %d holds %q, the winner wrote %q", i, p.Proof, winner[i].Load())
		}
	}
	un, err := s.UnfinishedJobs()
	if err != nil || len(un) != 0 {
		t.Fatalf("unfinished: %v, %v; want none", un, err)
	}
}

// TestPanicBecomesError makes the disk panic under a read: the caller gets
// an error, not a panic, and the store refuses further use.
func TestPanicBecomesError(t *testing.T) {
	mem := vfs.NewMem()
	var armed atomic.Bool
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if armed.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsRead && strings.HasSuffix(op.Path, ".sst") {
			panic("disk controller on fire")
		}
		return nil
	}))
	opts := &Options{FS: fs, Logger: quietLogger()}
	writeSample(t, "/db", opts, true)
	// Nothing may read the table in the background (a panic there would
	// kill the test) or serve it from a cache.
	opts.pebbleHook = func(o *pebble.Options) {
		o.DisableTableStats = true
		o.CacheSize = 1
	}
	s, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	_, err = s.Partitions("a")
	if err == nil || !strings.Contains(err.Error(), "disk controller on fire") || !strings.Contains(err.Error(), "/db") {
		t.Fatalf("read on a panicking disk: %v; want an error carrying the panic", err)
	}
	t.Log(err)
	if _, err := s.Jobs(); err == nil {
		t.Fatal("the store went on after a panic")
	}
	done := make(chan error)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		t.Logf("close: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("close hangs after a panic")
	}
}
