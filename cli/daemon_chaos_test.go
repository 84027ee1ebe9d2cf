package cli

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	groth16 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/backend/witness"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/cuzk/cuzk/circuits"
	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/internal/testenv"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
)

// TestDaemonChaos runs a load of jobs over concurrent gRPC clients on the
// daemon's unix socket while SIGKILLing the daemon at random points and
// starting it again. Clients retry with their idempotency keys. Every
// accepted job must end proved (or cancelled, where asked and the runner
// can), every proof verify, and no partition that the store recorded
// proved be proved again (its attempts and proof never change). It runs
// only with CUZK_CHAOS=1 (it takes minutes); CUZK_CHAOS_JOBS, _STREAMS and
// _KILLS size it (default 200, 50, 10). docs/daemon.md has its figures.
func TestDaemonChaos(t *testing.T) {
	if os.Getenv("CUZK_CHAOS") == "" {
		t.Skip("CUZK_CHAOS=1 runs the daemon chaos test")
	}
	jobs := testenv.Count(t, "CUZK_CHAOS_JOBS", 200)
	streams := testenv.Count(t, "CUZK_CHAOS_STREAMS", 50)
	kills := testenv.Count(t, "CUZK_CHAOS_KILLS", 10)

	dir := t.TempDir()
	bin := filepath.Join(dir, "cuzk")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/cuzk").CombinedOutput(); err != nil {
		t.Fatalf("build cuzk: %v\n%s", err, out)
	}
	keys, st := filepath.Join(dir, "keys"), filepath.Join(dir, "store")
	if out, err := exec.Command(bin, "setup", "--circuit", "mimc", "--constraints", "1K", "--keys", keys, "--keygen", "gnark").CombinedOutput(); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	layout, _ := circuits.MiMCChain{}.Layout(1024)
	k, err := prover.Load(prover.KeyDir(keys, "mimc", 1024), "mimc", layout)
	if err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "cuzk-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "cuzk.sock")

	var procMu sync.Mutex
	var proc *exec.Cmd
	start := func() time.Duration {
		began := time.Now()
		cmd := exec.Command(bin, "daemon", "--store", st, "--keys", keys, "--out", filepath.Join(dir, "out"),
			"--listen", "unix:"+sock, "--backend", "cpu", "--workers", "2", "--drain-timeout", "5s")
		log := &syncBuffer{}
		cmd.Stderr = log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); !strings.Contains(log.String(), "msg=serving"); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("daemon not serving:\n%s", log)
			}
		}
		procMu.Lock()
		proc = cmd
		procMu.Unlock()
		return time.Since(began)
	}
	start()
	t.Cleanup(func() {
		procMu.Lock()
		defer procMu.Unlock()
		proc.Process.Kill()
		proc.Wait()
	})

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 20 * time.Millisecond,
			Multiplier: 1.5, MaxDelay: 300 * time.Millisecond}, MinConnectTimeout: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// call retries what a restart makes fail: the daemon gone or the
	// connection cut (Unavailable), or a try that outlived its deadline.
	var retries sync.Map
	call := func(method string, in, out proto.Message) error {
		for {
			tryCtx, cancelTry := context.WithTimeout(ctx, 30*time.Second)
			err := conn.Invoke(tryCtx, "/cuzk.v1.ProvingEngine/"+method, in, out, grpc.WaitForReady(true))
			cancelTry()
			switch grpcstatus.Code(err) {
			case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
				if ctx.Err() != nil {
					return err
				}
				n, _ := retries.LoadOrStore(method+" "+grpcstatus.Code(err).String(), new(int64))
				procMu.Lock()
				*n.(*int64)++
				procMu.Unlock()
				time.Sleep(20 * time.Millisecond)
				continue
			}
			return err
		}
	}

	type outcome struct {
		id        string
		parts     int
		cancelled bool // a cancel was asked: the job may end cancelled
		proofs    []*cuzkv1.PartitionProof
	}
	results := make([]outcome, jobs)
	cancelUnsupported := false
	var errMu sync.Mutex
	var errs []string
	fail := func(format string, args ...any) {
		errMu.Lock()
		errs = append(errs, fmt.Sprintf(format, args...))
		errMu.Unlock()
	}
	began := time.Now()
	var next int64
	var clients sync.WaitGroup
	for range streams {
		clients.Add(1)
		go func() {
			defer clients.Done()
			for {
				procMu.Lock()
				i := int(next)
				next++
				procMu.Unlock()
				if i >= jobs {
					return
				}
				parts := 1 + i%3
				req := &cuzkv1.SubmitProofRequest{IdempotencyKey: fmt.Sprintf("chaos-%d", i), Partitions: uint32(parts),
					Circuit: &cuzkv1.SubmitProofRequest_Example{Example: &cuzkv1.ExampleCircuit{
						Keys: &cuzkv1.KeySetRef{Circuit: "mimc", Constraints: 1024}, Seed: []byte{byte(i), byte(i >> 8)}}}}
				var sub cuzkv1.SubmitProofResponse
				if err := call("SubmitProof", req, &sub); err != nil {
					fail("job %d: submit: %v", i, err)
					continue
				}
				o := outcome{id: sub.JobId, parts: parts}
				if i%10 == 9 {
					// Asked even when the answer is lost to a kill
					// and the retry finds the job ended.
					o.cancelled = true
					err := call("CancelProof", &cuzkv1.CancelProofRequest{JobId: sub.JobId}, &cuzkv1.CancelProofResponse{})
					switch grpcstatus.Code(err) {
					case codes.OK:
					case codes.Unimplemented:
						procMu.Lock()
						cancelUnsupported = true
						procMu.Unlock()
					case codes.FailedPrecondition: // it ended first
					default:
						fail("job %d: cancel: %v", i, err)
					}
				}
				var res cuzkv1.AwaitProofResponse
				if err := call("AwaitProof", &cuzkv1.AwaitProofRequest{JobId: sub.JobId}, &res); err != nil {
					fail("job %d: await: %v", i, err)
					continue
				}
				switch {
				case o.cancelled && res.Job.State == cuzkv1.JobState_JOB_STATE_CANCELLED:
				case res.Job.State == cuzkv1.JobState_JOB_STATE_DONE && len(res.Proofs) == parts:
					o.proofs = res.Proofs
				default:
					fail("job %d (%s): ended %v with %d proofs of %d (cancel asked: %v)", i, sub.JobId, res.Job.State, len(res.Proofs), parts, o.cancelled)
				}
				results[i] = o
			}
		}()
	}

	// The killer: a SIGKILL at a random point, a look at the store while
	// no daemon holds it, a restart.
	type provedAt struct {
		attempts int
		proof    []byte
	}
	proved := map[string]provedAt{} // job/partition → when first seen proved
	checkStore := func() {
		s, err := store.Open(st, &store.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("open the store after a kill: %v", err)
		}
		defer s.Close()
		all, err := s.Jobs()
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range all {
			parts, err := s.Partitions(j.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range parts {
				if p.State != store.Proved {
					continue
				}
				key := fmt.Sprintf("%s/%d", j.ID, p.Index)
				if before, ok := proved[key]; ok {
					if before.attempts != p.Attempts || !bytes.Equal(before.proof, p.Proof) {
						fail("partition %s was proved again after it was recorded proved (attempts %d → %d)", key, before.attempts, p.Attempts)
					}
					continue
				}
				proved[key] = provedAt{p.Attempts, p.Proof}
			}
		}
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var restarts []time.Duration
	allDone := make(chan struct{})
	go func() { clients.Wait(); close(allDone) }()
	killed := 0
	for killed < kills {
		select {
		case <-allDone:
			t.Fatalf("the load ended after %d of %d kills: make it bigger (CUZK_CHAOS_JOBS)", killed, kills)
		case <-time.After(time.Duration(300+rng.IntN(1500)) * time.Millisecond):
		}
		procMu.Lock()
		p := proc
		procMu.Unlock()
		p.Process.Signal(syscall.SIGKILL)
		p.Wait()
		killed++
		checkStore()
		restarts = append(restarts, start())
	}
	<-allDone
	took := time.Since(began)
	procMu.Lock()
	proc.Process.Signal(syscall.SIGTERM)
	proc.Wait()
	procMu.Unlock()
	checkStore()
	for _, e := range errs {
		t.Error(e)
	}

	// Every job the clients had accepted is in the store once, ended as
	// asked, and every proof verifies.
	s, err := store.Open(st, &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all, err := s.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != jobs {
		t.Errorf("the store holds %d jobs, the clients submitted %d", len(all), jobs)
	}
	partitions, attempts, cancelled := 0, 0, 0
	for i, o := range results {
		if o.id == "" {
			continue // failed above
		}
		sum, err := s.Summary(o.id)
		if err != nil {
			t.Errorf("job %d: %v", i, err)
			continue
		}
		if o.cancelled && o.proofs == nil {
			cancelled++
			continue
		}
		attempts += sum.Attempts
		partitions += o.parts
		if !sum.Done() {
			t.Errorf("job %d (%s): %d of %d proved in the store", i, o.id, sum.Proved, o.parts)
		}
		for _, p := range o.proofs {
			if err := verifyBytes(k.VK, p.Proof, p.PublicInputs); err != nil {
				t.Errorf("job %d partition %d: %v", i, p.Index, err)
			}
			if at, ok := proved[fmt.Sprintf("%s/%d", o.id, p.Index)]; !ok || !bytes.Equal(at.proof, p.Proof) {
				t.Errorf("job %d partition %d: the proof AwaitProof gave is not the store's", i, p.Index)
			}
		}
	}
	var avg time.Duration
	for _, r := range restarts {
		avg += r
	}
	avg /= time.Duration(len(restarts))
	var retried []string
	retries.Range(func(k, v any) bool {
		retried = append(retried, fmt.Sprintf("%s %d", k, *v.(*int64)))
		return true
	})
	t.Logf("chaos: %d jobs over %d streams, %d SIGKILLs, in %s: %d jobs proved (%d partitions, %d attempts: %d redone after kills), %d cancelled; restart to serving %s on average; calls retried: %s; cancel supported: %v",
		jobs, streams, killed, took.Round(time.Millisecond), jobs-cancelled, partitions, attempts, attempts-partitions, cancelled,
		avg.Round(time.Millisecond), strings.Join(retried, ", "), !cancelUnsupported)
}

// verifyBytes checks a proof and its public inputs in gnark's encodings.
func verifyBytes(vk *groth16.VerifyingKey, proofBytes, public []byte) error {
	proof := &groth16.Proof{}
	if _, err := proof.ReadFrom(bytes.NewReader(proofBytes)); err != nil {
		return fmt.Errorf("proof: %w", err)
	}
	pub, err := witness.New(ecc.BLS12_381.ScalarField())
	if err != nil {
		return err
	}
	if err := pub.UnmarshalBinary(public); err != nil {
		return fmt.Errorf("public inputs: %w", err)
	}
	return groth16.Verify(proof, vk, pub.Vector().(fr.Vector))
}
