package runner

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/keygen"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
)

// lendingBackend is the CPU backend with the GPU backend's two extras: it
// lends Prep its memory, and its Compute computes b_g2 too.
type lendingBackend struct {
	prover.CPU
	mu           sync.Mutex
	out, maxOut  int
	lent, g2Runs int
}

type lent struct {
	b    *lendingBackend
	v    [6][]fr.Element
	once sync.Once
}

func (m *lent) Vectors() (a, b, c, wa, wb, wk []fr.Element) {
	return m.v[0], m.v[1], m.v[2], m.v[3], m.v[4], m.v[5]
}

func (m *lent) Release() {
	m.once.Do(func() {
		m.b.mu.Lock()
		m.b.out--
		m.b.mu.Unlock()
	})
}

func (b *lendingBackend) PrepMemory(k *prover.Keys) (prover.PrepMemory, error) {
	pk := k.PK
	n := int(pk.Domain.Cardinality)
	m := &lent{b: b}
	for i, size := range []int{n, n, n, len(pk.G1.A), len(pk.G1.B), len(pk.G1.K)} {
		m.v[i] = make([]fr.Element, size)
	}
	b.mu.Lock()
	b.out++
	b.lent++
	b.maxOut = max(b.maxOut, b.out)
	b.mu.Unlock()
	return m, nil
}

type lendStaged struct {
	prover.Staged
	p *prover.Prepared
}

func (b *lendingBackend) Stage(ctx context.Context, k *prover.Keys, p *prover.Prepared) (prover.Staged, error) {
	s, err := b.CPU.Stage(ctx, k, p)
	return lendStaged{s, p}, err
}

func (b *lendingBackend) Compute(ctx context.Context, k *prover.Keys, s prover.Staged) (*prover.Computed, error) {
	ls := s.(lendStaged)
	bs, err := prover.BG2(ctx, k, ls.p)
	if err != nil {
		return nil, err
	}
	c, err := b.CPU.Compute(ctx, k, ls.Staged)
	if err != nil {
		return nil, err
	}
	c.B2 = &bs
	// An executor that ran prover.BG2 anyway would now get the wrong sum,
	// and the proof would not verify.
	clear(ls.p.WiresB)
	b.mu.Lock()
	b.g2Runs++
	b.mu.Unlock()
	return c, nil
}

// Every partition's lent memory comes back once the partition is done, and
// the executor finishes proofs with the b_g2 the backend computed (the B
// wires are gone by then).
func TestExecutorReturnsLentMemoryAndTakesBackendBG2(t *testing.T) {
	k := testKeys(t)
	b := &lendingBackend{}
	st, err := store.OpenInMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, _ := startServiceOn(t, st, b, actors.Config{WorkersPerDevice: 2})
	reps, err := svc.Run(context.Background(), []Submission{{JobRequest: JobRequest{ID: "lend", Keys: k, Seed: []byte("lend"), Partitions: 4}}}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].Proved != 4 || reps[0].State != StateDone {
		t.Fatalf("%d/4 proved, state %s", reps[0].Proved, reps[0].State)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lent != 4 || b.out != 0 || b.g2Runs != 4 {
		t.Fatalf("lent %d, still out %d, b_g2 in compute %d: want 4, 0, 4", b.lent, b.out, b.g2Runs)
	}
}

// committingBackend is the CPU backend with commitment MSMs of its own, as
// the GPU backend has them, counting its calls.
type committingBackend struct {
	prover.CPU
	mu                 sync.Mutex
	commits, knowledge int
}

func (b *committingBackend) CommitMSM(k *prover.Keys, i int, scalars []fr.Element) (curve.G1Affine, error) {
	b.mu.Lock()
	b.commits++
	b.mu.Unlock()
	var p curve.G1Affine
	_, err := p.MultiExp(k.PK.CommitmentKeys[i].Basis, scalars, ecc.MultiExpConfig{})
	return p, err
}

func (b *committingBackend) KnowledgeMSM(k *prover.Keys, scalars []fr.Element) (curve.G1Affine, error) {
	b.mu.Lock()
	b.knowledge++
	b.mu.Unlock()
	var bases []curve.G1Affine
	for _, ck := range k.PK.CommitmentKeys {
		bases = append(bases, ck.BasisExpSigma...)
	}
	var p curve.G1Affine
	_, err := p.MultiExp(bases, scalars, ecc.MultiExpConfig{})
	return p, err
}

// The executor's synthesize and finalize stages give a job's commitments to
// the backend's commitment MSMs, and the proofs verify.
func TestExecutorCommitsWithTheBackend(t *testing.T) {
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &circuits.RangeCheck{})
	if err != nil {
		t.Fatal(err)
	}
	r := ccs.(*cs.R1CS)
	pk, vk, err := keygen.Setup(r, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := &prover.Keys{Circuit: "rangecheck", CS: r, PK: pk, VK: vk, Hash: "rangecheck-executor"}
	var inputs []witness.Witness
	for i := range 3 {
		w, err := frontend.NewWitness(circuits.NewRangeCheck(uint64(1000003+i)), ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, w)
	}
	st, err := store.OpenInMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := &committingBackend{}
	svc, _ := startServiceOn(t, st, b, actors.Config{WorkersPerDevice: 2})
	reps, err := svc.Run(context.Background(), []Submission{{JobRequest: JobRequest{ID: "commit", Keys: k, Partitions: 3, Inputs: inputs}}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].Proved != 3 || reps[0].State != StateDone {
		t.Fatalf("%d/3 proved, state %s", reps[0].Proved, reps[0].State)
	}
	recs, err := st.Proofs("commit")
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		proof := &groth16bls.Proof{}
		if _, err := proof.ReadFrom(bytes.NewReader(rec.Proof)); err != nil {
			t.Fatal(err)
		}
		public, err := inputs[rec.Index].Public()
		if err != nil {
			t.Fatal(err)
		}
		if err := groth16.Verify(proof, vk, public); err != nil {
			t.Fatalf("partition %d: gnark's verifier: %v", rec.Index, err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.commits != 3 || b.knowledge != 3 {
		t.Fatalf("the backend computed %d commitments and %d proofs of knowledge, want 3 and 3", b.commits, b.knowledge)
	}
}

// The executor asks the cores to hold while it has partitions and none is
// prepared and waiting for its compute, and not once its partitions are
// gone.
func TestExecutorHoldsWhileTheDeviceWaits(t *testing.T) {
	e := NewExecutor(prover.CPU{}, nil)
	if e.hold(); e.holding {
		t.Fatal("an executor without partitions holds")
	}
	a, b := &partition{}, &partition{}
	e.mu.Lock()
	e.parts[actors.PartitionID{Job: "j", Partition: 0}] = a
	e.parts[actors.PartitionID{Job: "j", Partition: 1}] = b
	e.hold()
	held := e.holding
	e.mu.Unlock()
	if !held {
		t.Fatal("two partitions synthesizing, none waiting: not held")
	}
	for _, step := range []struct {
		st   *partition
		on   bool
		want bool
	}{{a, true, false}, {b, true, false}, {a, false, false}, {a, false, false}, {b, false, true}} {
		e.setWaiting(step.st, step.on)
		if e.holding != step.want {
			t.Fatalf("after setWaiting(%v): holding %v, want %v (%d waiting)", step.on, e.holding, step.want, e.waiting)
		}
	}
	e.setWaiting(a, true)
	e.Computing(actors.PartitionID{Job: "j", Partition: 0})
	if !e.holding {
		t.Fatal("the one prepared partition computes, none waits: not held")
	}
	e.setWaiting(a, true) // a retry, prepared again
	e.Release(actors.PartitionID{Job: "j", Partition: 0})
	if !e.holding || e.waiting != 0 {
		t.Fatalf("released the waiting partition: holding %v, %d waiting", e.holding, e.waiting)
	}
	e.Release(actors.PartitionID{Job: "j", Partition: 1})
	if e.holding {
		t.Fatal("no partitions left, still holding")
	}

	// A whole job: the hold ends with it.
	k := testKeys(t)
	st, err := store.OpenInMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, _ := startServiceOn(t, st, prover.CPU{}, actors.Config{WorkersPerDevice: 2})
	reps, err := svc.Run(context.Background(), []Submission{{JobRequest: JobRequest{ID: "hold", Keys: k, Seed: []byte("hold"), Partitions: 4}}}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].Proved != 4 {
		t.Fatalf("%d/4 proved", reps[0].Proved)
	}
	svc.exec.mu.Lock()
	defer svc.exec.mu.Unlock()
	if svc.exec.holding || svc.exec.waiting != 0 {
		t.Fatalf("after the job: holding %v, %d waiting", svc.exec.holding, svc.exec.waiting)
	}
}
