package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	groth16 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/backend/witness"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/emu"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
)

const testTarget = 2048

// testKeys makes mimc keys of about 2K constraints (the cheapest circuit to
// set up) in a directory of the test, as cuzk setup does.
func testKeys(t *testing.T) *prover.Keys {
	t.Helper()
	circ, err := circuits.Lookup("mimc")
	if err != nil {
		t.Fatal(err)
	}
	k, err := prover.Setup(circ, testTarget)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Save(prover.KeyDir(t.TempDir(), "mimc", testTarget)); err != nil {
		t.Fatal(err)
	}
	return k
}

// startService starts a service on an emulated device over the store in dir.
func startService(t *testing.T, dir string) (*Service, *store.Store) {
	t.Helper()
	return startServiceWith(t, dir, prover.CPU{}, actors.Config{WorkersPerDevice: 2})
}

// startServiceWith is startService with a backend and actors' config.
func startServiceWith(t *testing.T, dir string, b prover.Backend, cfg actors.Config) (*Service, *store.Store) {
	t.Helper()
	st, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return startServiceOn(t, st, b, cfg)
}

// startServiceOn starts a service on an emulated device over st.
func startServiceOn(t *testing.T, st *store.Store, b prover.Backend, cfg actors.Config) (*Service, *store.Store) {
	t.Helper()
	dev, err := emu.New(emu.Options{Capacity: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := StartService(ServiceOptions{Backend: b, Devices: []gpu.Device{dev}, Store: st, Config: cfg, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		svc.Close(context.Background())
		dev.Close()
	})
	return svc, st
}

// checkProofs checks that every partition of job id is proved in the store,
// for the public inputs of its own partition, and that the proof verifies.
func checkProofs(t *testing.T, st *store.Store, k *prover.Keys, id string, seed []byte) map[int]store.Partition {
	t.Helper()
	parts, err := st.Partitions(id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]store.Partition{}
	for _, p := range parts {
		out[p.Index] = p
		if p.State != store.Proved {
			t.Errorf("partition %s is %s, want proved", p.ID(), p.State)
			continue
		}
		verifyProof(t, k, seed, p)
	}
	return out
}

// verifyProof checks that a proved partition's proof verifies for the public
// inputs of its own partition.
func verifyProof(t *testing.T, k *prover.Keys, seed []byte, p store.Partition) {
	t.Helper()
	w, err := prover.Witness(k, seed, p.Index)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := w.Public()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := pw.MarshalBinary()
	if !bytes.Equal(want, p.Public) {
		t.Errorf("partition %s: public inputs are not its own", p.ID())
	}
	pub, _ := witness.New(ecc.BLS12_381.ScalarField())
	if err := pub.UnmarshalBinary(p.Public); err != nil {
		t.Fatal(err)
	}
	proof := &groth16.Proof{}
	if _, err := proof.ReadFrom(bytes.NewReader(p.Proof)); err != nil {
		t.Fatalf("partition %s: %v", p.ID(), err)
	}
	if err := groth16.Verify(proof, k.VK, pub.Vector().(fr.Vector)); err != nil {
		t.Errorf("partition %s: proof does not verify: %v", p.ID(), err)
	}
}

func waitDone(t *testing.T, svc *Service, id string) JobStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err := svc.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait for %s: %v", id, err)
	}
	if js.State != StateDone || js.Proved != js.NumPartitions || len(js.Partitions) != js.NumPartitions {
		t.Fatalf("job %s after wait: %+v", id, js)
	}
	return js
}

// TestServiceSubmitAndResume submits a job to a running service and waits
// for it; then starts a second service on a store that holds an unfinished
// job (two partitions proved, one synthesized by a process that is gone, one
// never started) and checks that Resume proves only the two left.
func TestServiceSubmitAndResume(t *testing.T) {
	k := testKeys(t)
	seed := []byte{0x5e, 0xed}

	svc, st := startService(t, t.TempDir())
	out := t.TempDir()
	first := Submission{JobRequest: JobRequest{ID: "first", Keys: k, Seed: seed, Partitions: 2,
		Priority: actors.PriorityHigh}, Target: testTarget, Out: out}
	if err := svc.Submit(first); err != nil {
		t.Fatal(err)
	}
	js := waitDone(t, svc, "first")
	if js.Priority != "HIGH" || js.Circuit != "mimc" || js.KeyHash != k.Hash {
		t.Errorf("status: %+v", js)
	}
	proved := checkProofs(t, st, k, "first", seed)
	for i := range 2 {
		if !fileExists(filepath.Join(out, ProofFile(i))) || !fileExists(filepath.Join(out, PublicFile(i))) {
			t.Errorf("partition %d: no proof files in %s", i, out)
		}
	}
	// Of concurrent submissions of one new id, exactly one is accepted.
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			errs <- svc.Submit(Submission{JobRequest: JobRequest{ID: "dup", Keys: k, Seed: seed, Partitions: 1},
				Target: testTarget, Out: t.TempDir()})
		}()
	}
	accepted := 0
	for range 4 {
		switch err := <-errs; {
		case err == nil:
			accepted++
		case !errors.Is(err, ErrExists):
			t.Errorf("submission of a taken id: %v, want ErrExists", err)
		}
	}
	if accepted != 1 {
		t.Errorf("%d of 4 concurrent submissions of one id accepted, want 1", accepted)
	}
	waitDone(t, svc, "dup")
	if _, err := svc.Status("nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("status of an unknown job: %v", err)
	}
	if _, err := svc.Wait(context.Background(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("wait for an unknown job: %v", err)
	}

	// An unfinished job as a killed prover leaves it, with the same seed as
	// "first" so that its proved partitions hold real proofs.
	dir := t.TempDir()
	pre, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := pre.CreateJob(store.Job{ID: "left", Circuit: "mimc", Constraints: int64(k.Constraints()),
		KeyHash: k.Hash, NumPartitions: 4, Seed: seed, Params: map[string]string{
			ParamTarget: strconv.Itoa(testTarget), ParamKeys: k.Dir, ParamOut: t.TempDir()}}); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1} {
		if _, err := pre.StartAttempt("left", i); err != nil {
			t.Fatal(err)
		}
		if err := pre.MarkProved("left", i, proved[i].Proof, proved[i].Public, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pre.StartAttempt("left", 2); err != nil {
		t.Fatal(err)
	}
	if err := pre.MarkSynthesized("left", 2); err != nil {
		t.Fatal(err)
	}
	before, _ := pre.Partitions("left")
	pre.Close()

	svc2, st2 := startService(t, dir)
	resumed, err := svc2.Resume()
	if err != nil || len(resumed) != 1 || resumed[0].ID != "left" {
		t.Fatalf("resume: %v %+v", err, resumed)
	}
	if got := resumed[0].Pending; len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Errorf("resumed with pending %v, want [2 3]", got)
	}
	waitDone(t, svc2, "left")
	after := checkProofs(t, st2, k, "left", seed)
	for _, b := range before {
		a := after[b.Index]
		switch {
		case b.State == store.Proved && (a.Attempts != b.Attempts || !bytes.Equal(a.Proof, b.Proof)):
			t.Errorf("partition %d was proved before the resume and again by it (attempts %d → %d)", b.Index, b.Attempts, a.Attempts)
		case b.State != store.Proved && a.Attempts != b.Attempts+1:
			t.Errorf("partition %d: attempts %d → %d, want one more", b.Index, b.Attempts, a.Attempts)
		}
	}
	if again, err := svc2.Resume(); err != nil || len(again) != 0 {
		t.Errorf("a second resume found %d jobs (%v); the store has none unfinished", len(again), err)
	}

	if err := svc2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := svc2.Submit(Submission{JobRequest: JobRequest{ID: "late", Keys: k, Partitions: 1}, Target: testTarget}); !errors.Is(err, ErrClosed) {
		t.Errorf("submit after close: %v, want ErrClosed", err)
	}
}

// TestServiceResumeRefused: a job whose keys are gone is left unfinished,
// said so by Status and Wait, and does not stop the service.
func TestServiceResumeRefused(t *testing.T) {
	dir := t.TempDir()
	pre, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := pre.CreateJob(store.Job{ID: "stale", Circuit: "mimc", NumPartitions: 2, KeyHash: "0123456789abcdef",
		Params: map[string]string{ParamTarget: strconv.Itoa(testTarget), ParamKeys: t.TempDir()}}); err != nil {
		t.Fatal(err)
	}
	pre.Close()
	svc, _ := startService(t, dir)
	resumed, err := svc.Resume()
	if !errors.Is(err, prover.ErrNoKeys) || len(resumed) != 0 {
		t.Fatalf("resume of a job with changed keys: %v %v", resumed, err)
	}
	js, err := svc.Status("stale")
	if err != nil || js.State != StateUnfinished || !strings.Contains(js.Error, "no keys") {
		t.Errorf("status: %+v %v", js, err)
	}
	if _, err := svc.Wait(context.Background(), "stale"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("wait: %v, want ErrNotRunning", err)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// flakyCPU is the CPU backend whose first computes fail.
type flakyCPU struct {
	prover.CPU
	failures atomic.Int32
}

func (f *flakyCPU) Compute(ctx context.Context, k *prover.Keys, s prover.Staged) (*prover.Computed, error) {
	if f.failures.Add(-1) >= 0 {
		return nil, errors.New("injected compute failure")
	}
	return f.CPU.Compute(ctx, k, s)
}

// A job whose partitions failed for good is proved in full by Retry, which
// reopens only the failed ones; a job with nothing failed, or unknown, is
// refused.
func TestServiceRetriesFailedPartitions(t *testing.T) {
	k := testKeys(t)
	backend := &flakyCPU{}
	backend.failures.Store(2)
	svc, st := startServiceWith(t, t.TempDir(), backend, actors.Config{WorkersPerDevice: 1, MaxAttempts: 1})
	seed := []byte("retry")
	if err := svc.Submit(Submission{JobRequest: JobRequest{ID: "flaky", Keys: k, Seed: seed, Partitions: 3},
		Target: testTarget, Out: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err := svc.Wait(ctx, "flaky")
	if err != nil || js.State != StateFailed || js.Failed != 2 || js.Proved != 1 {
		t.Fatalf("first run: %v, %+v", err, js)
	}
	n, err := svc.Retry("flaky")
	if err != nil || n != 2 {
		t.Fatalf("retry: reopened %d, %v", n, err)
	}
	js = waitDone(t, svc, "flaky")
	if js.Failed != 0 {
		t.Errorf("after the retry: %+v", js)
	}
	checkProofs(t, st, k, "flaky", seed)
	if _, err := svc.Retry("flaky"); !errors.Is(err, ErrNothingToRetry) {
		t.Errorf("retry of a done job: %v, want ErrNothingToRetry", err)
	}
	if _, err := svc.Retry("nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("retry of an unknown job: %v, want store.ErrNotFound", err)
	}
}

// gatedCPU is the CPU backend whose computes wait for gate to close, but
// those that start while open is set.
type gatedCPU struct {
	prover.CPU
	gate chan struct{}
	open atomic.Bool
}

func (g *gatedCPU) Compute(ctx context.Context, k *prover.Keys, s prover.Staged) (*prover.Computed, error) {
	if !g.open.Load() {
		<-g.gate
	}
	return g.CPU.Compute(ctx, k, s)
}

// Key sets no job has used for the idle time are forgotten, never those of
// a running job; a later job loads them again.
func TestServiceForgetsIdleKeys(t *testing.T) {
	k := testKeys(t)
	backend := &gatedCPU{gate: make(chan struct{})}
	svc, _ := startServiceWith(t, t.TempDir(), backend, actors.Config{WorkersPerDevice: 1})
	loads := 0
	load := func(dir, circuit string, l circuits.Layout) (*prover.Keys, error) {
		loads++
		return k, nil
	}
	got, err := svc.Keys(k.Dir, k.Circuit, k.Layout, load)
	if err != nil {
		t.Fatal(err)
	}
	if n := svc.ForgetIdleKeys(time.Hour); n != 0 {
		t.Errorf("forgot %d key sets used just now", n)
	}
	if err := svc.Submit(Submission{JobRequest: JobRequest{ID: "held", Keys: got, Seed: []byte("held"), Partitions: 1},
		Target: testTarget, Out: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if n := svc.ForgetIdleKeys(0); n != 0 {
		t.Errorf("forgot %d key sets of a running job", n)
	}
	close(backend.gate)
	waitDone(t, svc, "held")
	if n := svc.ForgetIdleKeys(time.Hour); n != 0 {
		t.Errorf("forgot %d key sets whose job just ended", n)
	}
	if n := svc.ForgetIdleKeys(0); n != 1 {
		t.Errorf("forgot %d key sets once idle, want 1", n)
	}
	if _, err := svc.Keys(k.Dir, k.Circuit, k.Layout, load); err != nil || loads != 2 {
		t.Errorf("keys after forgetting: %v, %d loads, want 2", err, loads)
	}
}

// A service runs for months: an ended job keeps nothing of its run in the
// executor or the journal, and once ForgetIdleKeys drops its key set the
// keys are the collector's, though the job stays tracked for Status.
func TestServiceLetsEndedJobsGo(t *testing.T) {
	k := testKeys(t)
	svc, _ := startServiceWith(t, t.TempDir(), prover.CPU{}, actors.Config{WorkersPerDevice: 1})
	// A key set of its own, so that nothing but the service holds it.
	load := func(dir, circuit string, l circuits.Layout) (*prover.Keys, error) {
		return &prover.Keys{Circuit: k.Circuit, Layout: k.Layout, CS: k.CS, PK: k.PK, VK: k.VK, Hash: k.Hash, Dir: k.Dir}, nil
	}
	held := func() weak.Pointer[prover.Keys] {
		got, err := svc.Keys(k.Dir, k.Circuit, k.Layout, load)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Submit(Submission{JobRequest: JobRequest{ID: "ended", Keys: got, Seed: []byte("ended"), Partitions: 2},
			Target: testTarget, Out: t.TempDir()}); err != nil {
			t.Fatal(err)
		}
		return weak.Make(got)
	}()
	waitDone(t, svc, "ended")
	svc.exec.mu.Lock()
	jobs, parts := len(svc.exec.jobs), len(svc.exec.parts)
	svc.exec.mu.Unlock()
	svc.journal.mu.Lock()
	expected := len(svc.journal.jobs)
	svc.journal.mu.Unlock()
	if jobs != 0 || parts != 0 || expected != 0 {
		t.Errorf("after the job ended: the executor holds %d jobs and %d partitions, the journal %d jobs; want none", jobs, parts, expected)
	}
	if n := svc.ForgetIdleKeys(0); n != 1 {
		t.Fatalf("forgot %d key sets once idle, want 1", n)
	}
	runtime.GC()
	runtime.GC()
	if held.Value() != nil {
		t.Error("the ended job's keys are still reachable after ForgetIdleKeys dropped them")
	}
	if _, err := svc.Status("ended"); err != nil {
		t.Errorf("status of the ended job: %v", err)
	}
}

// TestServiceCancel cancels a running job once it has proved a partition:
// the job ends cancelled with what it proved kept, nothing failed, and no
// later resume takes it up; a finished job and an unknown one are refused.
func TestServiceCancel(t *testing.T) {
	k := testKeys(t)
	dir := t.TempDir()
	svc, st := startServiceWith(t, dir, prover.CPU{}, actors.Config{WorkersPerDevice: 1})
	seed := []byte("cancel")
	if err := svc.Submit(Submission{JobRequest: JobRequest{ID: "c", Keys: k, Seed: seed, Partitions: 8}, Target: testTarget}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		js, err := svc.Status("c")
		if err != nil {
			t.Fatal(err)
		}
		if js.Proved > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no partition proved")
		}
	}
	if err := svc.Cancel("c"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err := svc.Wait(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cancelled after %d of 8 proved", js.Proved)
	if js.State != StateCancelled || js.Proved == 0 || js.Proved+js.Cancelled != 8 || js.Failed != 0 {
		t.Fatalf("after cancel: %+v", js)
	}
	for _, p := range checkProofsProved(t, st, k, "c", seed) {
		if p.State != store.Proved && p.State != store.Cancelled {
			t.Errorf("partition %s is %s", p.ID(), p.State)
		}
	}
	if err := svc.Cancel("c"); !errors.Is(err, ErrFinished) {
		t.Errorf("cancel of a finished job: %v, want ErrFinished", err)
	}
	if err := svc.Cancel("nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cancel of an unknown job: %v, want store.ErrNotFound", err)
	}
	if subs, err := svc.Resume(); err != nil || len(subs) != 0 {
		t.Errorf("resume after cancel took up %d jobs (%v)", len(subs), err)
	}
}

// TestServiceForget: a finished job is forgotten by the service and its
// store (status, listing, proofs), a running one is refused and keeps
// running to the end, an unknown one is not found; the jobs beside it stay.
func TestServiceForget(t *testing.T) {
	k := testKeys(t)
	svc, st := startServiceWith(t, t.TempDir(), prover.CPU{}, actors.Config{WorkersPerDevice: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// "gone" is forgotten right after its submission, long before its eight
	// partitions can have been proved, then again once it has finished.
	for id, parts := range map[string]int{"keep": 2, "gone": 8} {
		if err := svc.Submit(Submission{JobRequest: JobRequest{ID: id, Keys: k, Seed: []byte(id), Partitions: parts}, Target: testTarget}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Forget("gone"); !errors.Is(err, ErrBusy) {
		t.Errorf("forget of a running job: %v, want ErrBusy", err)
	}
	for _, id := range []string{"keep", "gone"} {
		if js, err := svc.Wait(ctx, id); err != nil || js.State != StateDone {
			t.Fatalf("job %s: %+v, %v", id, js, err)
		}
	}
	if js, err := svc.Forget("gone"); err != nil || js.ID != "gone" || js.State != StateDone {
		t.Fatalf("forget: %+v, %v; want the done job's status", js, err)
	}
	if _, err := svc.Status("gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("status of a forgotten job: %v, want store.ErrNotFound", err)
	}
	if proofs, err := st.Proofs("gone"); err == nil || len(proofs) != 0 {
		t.Errorf("a forgotten job's proofs: %d, %v", len(proofs), err)
	}
	jobs, err := svc.Jobs()
	if err != nil || len(jobs) != 1 || jobs[0].ID != "keep" || jobs[0].Proved != 2 {
		t.Errorf("jobs after forgetting one: %+v, %v", jobs, err)
	}
	checkProofsProved(t, st, k, "keep", []byte("keep"))
	if _, err := svc.Forget("nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("forget of an unknown job: %v, want store.ErrNotFound", err)
	}
}

// ForgetEnded forgets the finished jobs last written before its cutoff, and
// never an unfinished one: neither one this service runs nor one only the
// store holds.
func TestServiceForgetEnded(t *testing.T) {
	k := testKeys(t)
	backend := &gatedCPU{gate: make(chan struct{})}
	backend.open.Store(true)
	svc, st := startServiceWith(t, t.TempDir(), backend, actors.Config{WorkersPerDevice: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prove := func(id string, parts int) {
		t.Helper()
		if err := svc.Submit(Submission{JobRequest: JobRequest{ID: id, Keys: k, Seed: []byte(id), Partitions: parts}, Target: testTarget}); err != nil {
			t.Fatal(err)
		}
		if js, err := svc.Wait(ctx, id); err != nil || js.State != StateDone {
			t.Fatalf("job %s: %+v, %v", id, js, err)
		}
	}
	prove("old", 1)
	time.Sleep(5 * time.Millisecond)
	mid := time.Now()
	time.Sleep(5 * time.Millisecond)
	prove("new", 2)
	if err := st.CreateJob(store.Job{ID: "stored", Circuit: k.Circuit, NumPartitions: 1}); err != nil {
		t.Fatal(err)
	}
	backend.open.Store(false)
	if err := svc.Submit(Submission{JobRequest: JobRequest{ID: "running", Keys: k, Seed: []byte("running"), Partitions: 8}, Target: testTarget}); err != nil {
		t.Fatal(err)
	}
	ids := func() []string {
		jobs, err := svc.Jobs()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	for _, c := range []struct {
		cutoff     time.Time
		forgot, in []string
	}{
		{mid.Add(-time.Hour), nil, []string{"old", "new", "stored", "running"}},
		{mid, []string{"old"}, []string{"new", "stored", "running"}},
		{time.Now().Add(time.Hour), []string{"new"}, []string{"stored", "running"}},
	} {
		forgot, err := svc.ForgetEnded(c.cutoff)
		if err != nil || !slices.Equal(forgot, c.forgot) {
			t.Errorf("forget ended before %s: %q, %v; want %q", c.cutoff.Format(time.StampMicro), forgot, err, c.forgot)
		}
		if got := ids(); !slices.Equal(got, c.in) {
			t.Errorf("after forgetting before %s: jobs %q, want %q", c.cutoff.Format(time.StampMicro), got, c.in)
		}
	}
	close(backend.gate)
	if js, err := svc.Wait(ctx, "running"); err != nil || js.State != StateDone {
		t.Fatalf("job running: %+v, %v", js, err)
	}
	if forgot, err := svc.ForgetEnded(time.Now().Add(time.Hour)); err != nil || !slices.Equal(forgot, []string{"running"}) {
		t.Errorf("once it ended: forgot %q, %v; want [running]", forgot, err)
	}
}

// checkProofsProved checks the proofs of the partitions of job id that are
// proved, and returns every partition.
func checkProofsProved(t *testing.T, st *store.Store, k *prover.Keys, id string, seed []byte) []store.Partition {
	t.Helper()
	parts, err := st.Partitions(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if p.State == store.Proved {
			verifyProof(t, k, seed, p)
		}
	}
	return parts
}

// A job of witness files is recorded with them, so that a resume after a
// crash proves its partitions from the same files; a file changed since is
// refused.
func TestWitnessFilesJobResumes(t *testing.T) {
	k := testKeys(t)
	dir := t.TempDir()
	seed := []byte("files")
	var paths []string
	for i := range 3 {
		w, err := prover.Witness(k, seed, i)
		if err != nil {
			t.Fatal(err)
		}
		b, err := w.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("w%d.bin", i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	wits, err := CheckWitnessFiles(k, paths)
	if err != nil {
		t.Fatal(err)
	}
	// The job as a crashed process left it: recorded, nothing proved.
	stDir := filepath.Join(dir, "store")
	st, err := store.Open(stDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub := Submission{JobRequest: JobRequest{ID: "files", Keys: k, Partitions: 3, Witnesses: wits}}
	j := NewStoreJournal(st)
	j.Expect(sub)
	if err := j.RecordJob(actors.JobSpec{ID: "files", Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	svc, st := startService(t, stDir)
	subs, err := svc.Resume()
	if err != nil || len(subs) != 1 || len(subs[0].Witnesses) != 3 {
		t.Fatalf("resume: %v, %+v", err, subs)
	}
	waitDone(t, svc, "files")
	checkProofs(t, st, k, "files", seed)

	// A witness file that changed is refused by name.
	os.WriteFile(paths[1], []byte("changed"), 0o644)
	if _, err := wits[1].load(k); !errors.Is(err, ErrBadWitnessFile) || !strings.Contains(err.Error(), "w1.bin changed") {
		t.Errorf("changed witness file: %v", err)
	}
}
