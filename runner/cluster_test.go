package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/emu"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
)

// fakeCluster takes the jobs a service distributes and remembers them.
type fakeCluster struct {
	mu   sync.Mutex
	subs []Submission
}

func (f *fakeCluster) Distribute(sub Submission) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, sub)
	return nil
}

func (f *fakeCluster) Cancel(string) error { return nil }

func (f *fakeCluster) taken() []Submission {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Submission(nil), f.subs...)
}

func startClusterService(t *testing.T, st *store.Store, c Distributor) *Service {
	t.Helper()
	dev, err := emu.New(emu.Options{Capacity: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := StartService(ServiceOptions{Backend: prover.CPU{}, Devices: []gpu.Device{dev}, Store: st,
		Config: actors.Config{WorkersPerDevice: 1}, Seed: 1, Cluster: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		svc.Close(context.Background())
		dev.Close()
	})
	return svc
}

// A service with a cluster records a job and hands it over; the proofs that
// come back are recorded once (a second is ErrDuplicate), with the member
// that ran them, and end the job; a restarted service hands the unfinished
// job over again with only its unproved partitions pending.
func TestServiceDistributesJobsAndRecordsTheirProofs(t *testing.T) {
	k := testKeys(t)
	dir := t.TempDir()
	st, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	fc := &fakeCluster{}
	svc := startClusterService(t, st, fc)
	sub := Submission{JobRequest: JobRequest{ID: "j", Keys: k, Partitions: 3, Seed: []byte("s")}, Target: testTarget}
	if err := svc.Submit(sub); err != nil {
		t.Fatal(err)
	}
	if got := fc.taken(); len(got) != 1 || got[0].ID != "j" || got[0].Pending != nil {
		t.Fatalf("distributed %+v, want job j with every partition", got)
	}
	p0 := actors.PartitionID{Job: "j", Partition: 0}
	where := Running{Stage: "done", Device: 2, Worker: 1, Member: "m1:1"}
	if err := svc.ClusterProved(p0, []byte("proof0"), []byte("pub0"), prover.Timings{}, where); err != nil {
		t.Fatal(err)
	}
	if err := svc.ClusterProved(p0, []byte("other"), []byte("pub0"), prover.Timings{}, where); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second proof of partition 0: %v, want ErrDuplicate", err)
	}
	js, err := svc.Status("j")
	if err != nil {
		t.Fatal(err)
	}
	if js.State != StateRunning || js.Proved != 1 || js.Partitions[0].Ran == nil || js.Partitions[0].Ran.Member != "m1:1" {
		t.Fatalf("status %+v, want running with partition 0 proved on m1:1", js)
	}
	// The service restarts with two partitions unproved.
	svc.Close(context.Background())
	fc2 := &fakeCluster{}
	svc2 := startClusterService(t, st, fc2)
	if _, err := svc2.Resume(); err != nil {
		t.Fatal(err)
	}
	got := fc2.taken()
	if len(got) != 1 || len(got[0].Pending) != 2 || got[0].Pending[0] != 1 || got[0].Pending[1] != 2 {
		t.Fatalf("resumed %+v, want job j with partitions 1 and 2", got)
	}
	for _, i := range []int{1, 2} {
		if err := svc2.ClusterProved(actors.PartitionID{Job: "j", Partition: i}, []byte("proof"), []byte("pub"), prover.Timings{}, where); err != nil {
			t.Fatal(err)
		}
	}
	svc2.ClusterJobDone("j", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err = svc2.Wait(ctx, "j")
	if err != nil || js.State != StateDone || js.Proved != 3 {
		t.Fatalf("wait: %+v, %v; want done with 3 proved", js, err)
	}
	proofs, err := st.Proofs("j")
	if err != nil || string(proofs[0].Proof) != "proof0" {
		t.Fatalf("partition 0's proof %q, %v: want the first one kept", proofs[0].Proof, err)
	}

	// A job submitted with Local runs on the service's own devices: a
	// member's side of a lease.
	local := Submission{JobRequest: JobRequest{ID: "lease", Keys: k, Partitions: 1, Seed: []byte("s"), Local: true}, Target: testTarget}
	if err := svc2.Submit(local); err != nil {
		t.Fatal(err)
	}
	if js, err := svc2.Wait(ctx, "lease"); err != nil || js.State != StateDone {
		t.Fatalf("local job: %+v, %v", js, err)
	}
	if got := fc2.taken(); len(got) != 1 {
		t.Fatalf("a local job was distributed: %+v", got)
	}

	// A job of witness files is distributed (each lease carries its
	// witness); one whose witness is over MaxLeasedWitness stays here.
	wdir := t.TempDir()
	var paths []string
	for i := range 2 {
		w, err := prover.Witness(k, []byte("files"), i)
		if err != nil {
			t.Fatal(err)
		}
		b, err := w.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.Join(wdir, fmt.Sprintf("w%d", i)))
		if err := os.WriteFile(paths[i], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wits, err := CheckWitnessFiles(k, paths)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc2.Submit(Submission{JobRequest: JobRequest{ID: "files", Keys: k, Partitions: 2, Witnesses: wits}}); err != nil {
		t.Fatal(err)
	}
	if got := fc2.taken(); len(got) != 2 || got[1].ID != "files" || len(got[1].Witnesses) != 2 {
		t.Fatalf("the job of witness files was not distributed: %+v", got)
	}
	big := append([]WitnessFile(nil), wits...)
	big[1].Size = MaxLeasedWitness + 1
	if err := svc2.Submit(Submission{JobRequest: JobRequest{ID: "big", Keys: k, Partitions: 2, Witnesses: big}}); err != nil {
		t.Fatal(err)
	}
	if js, err := svc2.Wait(ctx, "big"); err != nil || js.State != StateDone || js.Proved != 2 {
		t.Fatalf("job of a witness over the limit: %+v, %v; want proved here", js, err)
	}
	if got := fc2.taken(); len(got) != 2 {
		t.Fatalf("a job of a witness over the limit was distributed: %+v", got)
	}
}
