// Package runner is the production twin of package sim: it runs the actors
// on the wall clock (NewRuntime) over real or emulated devices, executes each
// partition's stages on the prover (Executor), makes every step durable in a
// store (Journal), and proves jobs submitted at any time (Service), which
// prove, resume, bench and the daemon all use.
package runner

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark/backend/witness"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/internal/par"
	"github.com/cuzk/cuzk/prover"
)

// partition is what the executor holds for one partition between stages.
type partition struct {
	sol  *prover.Solution
	prep *prover.Prepared
	work *prover.Work // the device section of the prepared partition
	bg2  curve.G2Jac
	pub  []byte // the public witness in gnark's binary encoding
	// lane is the partition's place in the queue for the host's cores,
	// taken when the scheduler starts its first synthesis (Starting): it
	// starts them in the order the partitions are due, so the one due first
	// gets the cores first, in its solve and prep, and is ready for
	// the GPU soonest.
	lane *par.Lane
	// waiting: prepared, and its compute not yet started (under the
	// executor's mu; see Executor.hold).
	waiting bool

	mu      sync.Mutex
	timings prover.Timings
}

// computed is what the device section computed, nil before.
func (p *partition) computed() *prover.Computed {
	if p.work == nil {
		return nil
	}
	return p.work.Computed()
}

func (p *partition) took(stage string, start time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timings[stage] = time.Since(start)
}

// timingsCopy is how long each stage took, the device's included.
func (p *partition) timingsCopy() prover.Timings {
	p.mu.Lock()
	t := maps.Clone(p.timings)
	p.mu.Unlock()
	if p.work != nil {
		maps.Copy(t, p.work.Timings())
	}
	return t
}

// job is a job the executor knows how to run.
type job struct {
	keys      *prover.Keys
	seed      []byte
	witnesses []WitnessFile     // a user's circuit: one per partition
	inputs    []witness.Witness // or held in memory
	// ctx is cancelled with the job (cause ErrCancelled: its stages fail
	// with it from then on), so that its device work in flight stops at its
	// next step; and with the service.
	ctx    context.Context
	cancel context.CancelFunc
}

// cancelled says whether the job itself was cancelled (not the service).
func (j *job) cancelled() bool { return errors.Is(context.Cause(j.ctx), ErrCancelled) }

// ErrCancelled fails the stages of a cancelled job: a partition in flight
// stops at its next stage.
var ErrCancelled = errors.New("job cancelled")

// Executor runs the stages of partitions on the CPU and the backend. It
// implements actors.Executor.
type Executor struct {
	backend prover.Backend
	journal Journal
	rnd     io.Reader // the proofs' blinding; crypto/rand unless a test says
	// base is the context jobs' device work runs under (the service's
	// stages), guard admits that work; set before the first job.
	base  context.Context
	guard prover.Guard

	mu    sync.Mutex
	jobs  map[string]*job
	parts map[actors.PartitionID]*partition
	// waiting counts the partitions prepared whose compute has not
	// started; holding says whether the executor asks the host's cores to
	// hold (par.Hold): it does while it has partitions and none of them
	// waits for the device, so that the one due next gets them.
	waiting int
	holding bool
}

// NewExecutor returns an executor that computes with backend and records
// each partition's synthesis and proof in journal.
func NewExecutor(backend prover.Backend, journal Journal) *Executor {
	return &Executor{backend: backend, journal: journal, rnd: rand.Reader, base: context.Background(),
		jobs: map[string]*job{}, parts: map[actors.PartitionID]*partition{}}
}

// AddJob tells the executor how to build the witnesses of a job: from the
// files of a user's circuit when witnesses are given, else from the seed of
// an example circuit.
func (e *Executor) AddJob(id string, k *prover.Keys, seed []byte, witnesses []WitnessFile, inputs []witness.Witness) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithCancelCause(e.base)
	e.jobs[id] = &job{keys: k, seed: seed, witnesses: witnesses, inputs: inputs,
		ctx: ctx, cancel: func() { cancel(ErrCancelled) }}
}

// ForgetJob drops what AddJob kept of job id, once it has ended: its keys,
// witness files and inputs are then the collector's (a service runs for
// months), and its context is cancelled so that its parent lets it go. A
// stage of the job asked for after this fails as of an unknown job.
func (e *Executor) ForgetJob(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j, ok := e.jobs[id]; ok {
		j.cancel()
		delete(e.jobs, id)
	}
}

// Cancel makes every later stage of job id fail with ErrCancelled.
func (e *Executor) Cancel(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j, ok := e.jobs[id]; ok {
		j.cancel()
	}
}

func (e *Executor) get(p actors.PartitionID) (*job, *partition, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j, ok := e.jobs[p.Job]
	if !ok {
		return nil, nil, fmt.Errorf("partition %s: unknown job", p)
	}
	if j.cancelled() {
		return nil, nil, fmt.Errorf("partition %s: %w", p, ErrCancelled)
	}
	st, ok := e.parts[p]
	if !ok {
		st = &partition{timings: prover.Timings{}}
		e.parts[p] = st
		e.hold()
	}
	return j, st, nil
}

// Starting implements actors.StageStarter: a partition's first synthesis
// takes its lane here, in the order the scheduler starts them; taken in
// RunStage, on the stages' goroutines, the lanes came in a random order
// (at porep-sha 2^22 the eight first syntheses finished 0, 1, 4, 3, 2, 5, …).
func (e *Executor) Starting(w actors.StageWork) {
	if w.Stage != actors.StageSynthesize {
		return
	}
	if _, st, err := e.get(w.Partition); err == nil {
		st.takeLane()
	}
}

// takeLane gives the partition its lane unless it has one (a retry keeps
// its place).
func (p *partition) takeLane() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lane == nil {
		p.lane = par.NewLane()
	}
}

// RunStage implements actors.Executor.
func (e *Executor) RunStage(ctx context.Context, w actors.StageWork) error {
	j, st, err := e.get(w.Partition)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	defer st.took(w.Stage.String(), time.Now())
	switch w.Stage {
	case actors.StageSynthesize:
		st.takeLane() // taken in Starting, unless the runtime does not call it
		wit, err := j.witness(w.Partition.Partition)
		if err != nil {
			return err
		}
		// A synthesis again (a retry) returns what the last one held.
		st.sol.Release()
		st.sol, err = prover.SynthesizeOn(st.lane, e.backend, j.keys, wit)
		if err != nil {
			return fmt.Errorf("partition %d: %w", w.Partition.Partition, err)
		}
		pub, err := wit.Public()
		if err == nil {
			st.pub, err = pub.MarshalBinary()
		}
		if err != nil {
			return fmt.Errorf("partition %d: public witness: %w", w.Partition.Partition, err)
		}
		if err := e.journal.PartitionSynthesized(w.Partition); err != nil {
			return fmt.Errorf("record synthesis of %s: %w", w.Partition, err)
		}
	case actors.StagePrep:
		if st.sol == nil {
			return fmt.Errorf("partition %s: prep before synthesize", w.Partition)
		}
		// A retried partition prepares again: return the last memory.
		if st.work != nil {
			st.work.Release()
			st.work = nil
		}
		st.prep.Release()
		st.prep, err = prover.PrepOn(st.lane, e.backend, j.keys, st.sol)
		if err != nil || st.prep.Memory != nil { // prep copied what it needs, or failed
			// (a failed prep leaves the solution its backend memory to return)
			st.sol.Release()
		}
		st.sol = nil
		e.setWaiting(st, err == nil)
		return err
	case actors.StageBG2:
		e.setWaiting(st, false) // the device work is over
		if st.prep == nil {
			return fmt.Errorf("partition %s: b_g2 before prep", w.Partition)
		}
		// A backend that computed b_g2 with the G1 MSMs left it in comp.
		if c := st.computed(); c != nil && c.B2 != nil {
			st.bg2 = *c.B2
			return nil
		}
		st.bg2, err = prover.BG2(ctx, j.keys, st.prep)
		return err
	case actors.StageFinalize:
		e.setWaiting(st, false)
		return e.finalize(w.Partition, j, st)
	default:
		return fmt.Errorf("partition %s: stage %s does not run on the CPU", w.Partition, w.Stage)
	}
	return nil
}

// witness is partition p's witness.
func (j *job) witness(p int) (witness.Witness, error) {
	n := max(len(j.inputs), len(j.witnesses))
	switch {
	case n == 0:
		return prover.Witness(j.keys, j.seed, p)
	case p < 0 || p >= n:
		return nil, fmt.Errorf("partition %d of a job of %d witnesses", p, n)
	case len(j.inputs) > 0:
		return j.inputs[p], nil
	}
	return j.witnesses[p].load(j.keys)
}

func (e *Executor) finalize(p actors.PartitionID, j *job, st *partition) error {
	comp := st.computed()
	if comp == nil || st.prep == nil {
		return fmt.Errorf("partition %s: finalize before compute", p)
	}
	proof, err := prover.FinalizeFor(e.backend, j.keys, comp, &st.bg2, st.prep, e.rnd)
	if err != nil {
		return fmt.Errorf("partition %d: %w", p.Partition, err)
	}
	var pb bytes.Buffer
	if _, err := proof.WriteTo(&pb); err != nil {
		return fmt.Errorf("encode proof of %s: %w", p, err)
	}
	if err := e.journal.PartitionProved(p, pb.Bytes(), st.pub, st.timingsCopy()); err != nil {
		return fmt.Errorf("record proof of %s: %w", p, err)
	}
	return nil
}

// Kernel implements actors.Executor: the device section of p as data
// (gpu.Kernel.Work, a *prover.Work) that a device with a backend runs itself,
// and as Stage and Run with the executor's backend for any other device.
func (e *Executor) Kernel(p actors.PartitionID, device int) *gpu.Kernel {
	j, st, err := e.get(p)
	k := &gpu.Kernel{Partition: p.String()}
	if err == nil && st.prep == nil {
		err = fmt.Errorf("partition %s: device work before prep", p)
	}
	if err != nil {
		k.Run = func(context.Context) error { return err }
		return k
	}
	k.Size = j.keys.Constraints()
	k.Bytes = FootprintFor(e.backend, j.keys)
	if st.work == nil || st.work.Prep != st.prep {
		st.work = prover.NewWork(j.ctx, j.keys, st.prep)
		st.work.Guard = e.guard
	}
	w := st.work
	k.Work = w
	k.Stage = func(context.Context) error { return w.Stage(e.backend) }
	k.Run = func(context.Context) error { return w.Compute(e.backend) }
	return k
}

// Release implements actors.Executor.
func (e *Executor) Release(p actors.PartitionID) {
	e.mu.Lock()
	st := e.parts[p]
	delete(e.parts, p)
	if st != nil && st.waiting {
		st.waiting = false
		e.waiting--
	}
	e.hold()
	e.mu.Unlock()
	if st != nil {
		if st.work != nil {
			st.work.Release()
		}
		st.prep.Release()
		// Synthesized but never prepared: its vectors, and the backend's
		// memory the solver wrote into, go back.
		st.sol.Release()
	}
}

// setWaiting records whether st is prepared and waits for its compute.
func (e *Executor) setWaiting(st *partition, on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st.waiting != on {
		st.waiting = on
		if on {
			e.waiting++
		} else {
			e.waiting--
		}
	}
	e.hold()
}

// Computing records that p's compute started (the service sees the
// stage's start): it no longer waits.
func (e *Executor) Computing(p actors.PartitionID) {
	e.mu.Lock()
	st := e.parts[p]
	e.mu.Unlock()
	if st != nil {
		e.setWaiting(st, false)
	}
}

// hold asks the host's cores to hold (par.Hold) while the executor has
// partitions and none is prepared and waiting for its compute: the GPU
// will then wait for the partition due next, which should have the cores,
// the memory bandwidth and the caches to itself. In one lone porep-sha job
// at 2^22 on the H200 the first partition's solve, prep and copy took 94,
// 26 and 20 ms beside the seven partitions synthesized with it, against
// 50, 5 and 11 ms alone; and the second partition, solved beside the
// other eight while the first computed, was ready 18 ms after the first's
// compute ended. The caller holds e.mu.
func (e *Executor) hold() {
	want := e.waiting < holdReady() && len(e.parts) > 0
	if want != e.holding {
		e.holding = want
		par.Hold(want)
	}
}

// holdReady is how many prepared partitions waiting for their compute end
// the hold: 1, or CUZK_CPU_HOLD_READY (1 to 8). With 2 the later solves
// also stay off the cores while one partition waits; one porep-sha job on
// the H200 was as busy with 2 as with 1 (88-89 % at 2^22, 83-84 % at
// 2^20; docs/host-memory.md).
var holdReady = sync.OnceValue(func() int {
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("CUZK_CPU_HOLD_READY"))); err == nil && n >= 1 && n <= 8 {
		return n
	}
	return 1
})

// FootprintFor is the device memory one partition of k holds with backend
// b: the backend's own figure when it has one, else prover.DeviceFootprint.
func FootprintFor(b prover.Backend, k *prover.Keys) int64 {
	if f := prover.CapabilitiesOf(b).Footprint; f != nil {
		return f(k)
	}
	return prover.DeviceFootprint(k)
}

// StagedFor is the part of FootprintFor that the backend's Stage copies to
// the device (the actors' OpCopyIn): all of it unless the backend says
// less (prover.StagedSizer), never more.
func StagedFor(b prover.Backend, k *prover.Keys) int64 {
	fp := FootprintFor(b, k)
	if f := prover.CapabilitiesOf(b).Staged; f != nil {
		return min(max(f(k), 0), fp)
	}
	return fp
}

// ProofFile and PublicFile are the names of a partition's outputs.
func ProofFile(partition int) string  { return fmt.Sprintf("partition-%02d.proof", partition) }
func PublicFile(partition int) string { return fmt.Sprintf("partition-%02d.public", partition) }

// WriteProof writes a partition's proof (gnark's binary encoding) and public
// inputs to dir, durably.
func WriteProof(dir string, partition int, proof, public []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	for name, b := range map[string][]byte{ProofFile(partition): proof, PublicFile(partition): public} {
		if err := WriteFileSync(filepath.Join(dir, name), b); err != nil {
			return err
		}
	}
	return nil
}

// WriteFileSync writes b to path durably: to a temporary file, synced, then
// renamed.
func WriteFileSync(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}
