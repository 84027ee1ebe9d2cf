package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"connectrpc.com/connect"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/circuits"
	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
)

// Request limits, beyond MaxRequestBytes.
const (
	// MaxPartitions is the most partitions of one job (the store's limit).
	MaxPartitions = store.MaxPartitions
	// MaxIdempotencyKey is the longest idempotency key, in bytes.
	MaxIdempotencyKey = 256
	// MaxSeed is the longest seed, in bytes.
	MaxSeed = 4096
)

// SubmitProof implements ProvingEngineHandler.
func (s *Server) SubmitProof(ctx context.Context, req *connect.Request[cuzkv1.SubmitProofRequest]) (*connect.Response[cuzkv1.SubmitProofResponse], error) {
	out, err := s.submit(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

// submission is a checked SubmitProofRequest.
type submission struct {
	key     keyRef
	sub     runner.Submission
	idemKey string
	// witnesses of an outside circuit, written to files once the keys are
	// loaded and checked against them.
	witnesses [][]byte
}

// check validates m and returns the job it asks for, without its keys.
func (s *Server) check(m *cuzkv1.SubmitProofRequest) (*submission, error) {
	if o := m.GetOutside(); o != nil {
		return s.checkOutside(m, o)
	}
	ex := m.GetExample()
	if ex == nil {
		return nil, invalid("a job needs a circuit: example (a key set and a seed) or outside (a key set and witnesses)")
	}
	ref, err := s.keyRef(ex.GetKeys())
	if err != nil {
		return nil, err
	}
	if m.Partitions < 1 || m.Partitions > MaxPartitions {
		return nil, invalid("partitions must be 1 to %d, got %d", MaxPartitions, m.Partitions)
	}
	prio, id, err := checkJob(m)
	if err != nil {
		return nil, err
	}
	if len(ex.Seed) > MaxSeed {
		return nil, invalid("seed is %d bytes, at most %d", len(ex.Seed), MaxSeed)
	}
	seed := ex.Seed
	if len(seed) == 0 {
		seed = randomBytes(16)
	}
	return &submission{key: ref, idemKey: m.IdempotencyKey, sub: runner.Submission{
		JobRequest: runner.JobRequest{ID: id, Seed: seed, Partitions: int(m.Partitions), Priority: prio},
		Target:     ref.target, Out: filepath.Join(s.opt.Out, id)}}, nil
}

// checkJob checks what every job has, whatever its circuit: its priority and
// its idempotency key, which names the job.
func checkJob(m *cuzkv1.SubmitProofRequest) (actors.Priority, string, error) {
	prio, err := priorityFrom(m.Priority)
	if err != nil {
		return 0, "", err
	}
	if len(m.IdempotencyKey) > MaxIdempotencyKey {
		return 0, "", invalid("idempotency_key is %d bytes, at most %d", len(m.IdempotencyKey), MaxIdempotencyKey)
	}
	return prio, JobID(m.IdempotencyKey), nil
}

// checkOutside validates a job of a circuit made outside cuzk: a key set
// directory under --keys (cuzk setup --r1cs made it) and one witness per
// partition.
func (s *Server) checkOutside(m *cuzkv1.SubmitProofRequest, o *cuzkv1.OutsideCircuit) (*submission, error) {
	name := o.GetKeySet()
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return nil, invalid("outside.key_set must name one directory under --keys, got %q", name)
	}
	if len(o.Witnesses) < 1 || len(o.Witnesses) > MaxPartitions {
		return nil, invalid("outside.witnesses: want 1 to %d, one per partition, got %d", MaxPartitions, len(o.Witnesses))
	}
	if m.Partitions != 0 && int(m.Partitions) != len(o.Witnesses) {
		return nil, invalid("partitions %d with %d witnesses: a job has one partition per witness", m.Partitions, len(o.Witnesses))
	}
	prio, id, err := checkJob(m)
	if err != nil {
		return nil, err
	}
	return &submission{key: keyRef{dir: filepath.Join(s.opt.Keys, name), name: name}, idemKey: m.IdempotencyKey,
		witnesses: o.Witnesses, sub: runner.Submission{
			JobRequest: runner.JobRequest{ID: id, Partitions: len(o.Witnesses), Priority: prio},
			Out:        filepath.Join(s.opt.Out, id)}}, nil
}

// writeWitnesses keeps an outside job's witnesses in files beside its proofs
// (a resume reads them from there) and checks them against the keys.
func writeWitnesses(sm *submission) error {
	dir := filepath.Join(sm.sub.Out, "witnesses")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return connect.NewError(connect.CodeInternal, err)
	}
	paths := make([]string, len(sm.witnesses))
	for i, w := range sm.witnesses {
		paths[i] = filepath.Join(dir, fmt.Sprintf("partition-%02d.witness", i))
		if err := runner.WriteFileSync(paths[i], w); err != nil {
			return connect.NewError(connect.CodeInternal, err)
		}
	}
	wits, err := runner.CheckWitnessFiles(sm.sub.Keys, paths)
	if err != nil {
		os.RemoveAll(dir)
		return invalid("outside.witnesses: %w", err)
	}
	sm.sub.Witnesses = wits
	return nil
}

// JobID is the job id an idempotency key names: the same key always gives
// the same id, so the store finds a retried submission's job. An empty key
// gives a random id.
func JobID(idempotencyKey string) string {
	if idempotencyKey == "" {
		return "job-" + hex.EncodeToString(randomBytes(6))
	}
	h := sha256.Sum256([]byte(idempotencyKey))
	return "job-" + hex.EncodeToString(h[:12])
}

// setAside moves dir, where it exists, to dir.forgotten-TIME (and -2, -3...
// where that is taken) and returns its new path: a new job with a forgotten
// job's id then writes its proofs and witnesses to a directory of its own,
// not among the old job's files, which stay beside it.
func setAside(dir string, now time.Time) (string, error) {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("job directory: %w", err)
	}
	base := dir + ".forgotten-" + now.UTC().Format("20060102T150405Z")
	for i := 1; ; i++ {
		to := base
		if i > 1 {
			to = fmt.Sprintf("%s-%d", base, i)
		}
		if _, err := os.Lstat(to); errors.Is(err, os.ErrNotExist) {
			if err := os.Rename(dir, to); err != nil {
				return "", fmt.Errorf("set a forgotten job's directory aside: %w", err)
			}
			return to, nil
		} else if err != nil {
			return "", fmt.Errorf("set a forgotten job's directory aside: %w", err)
		}
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func (s *Server) submit(ctx context.Context, m *cuzkv1.SubmitProofRequest) (*cuzkv1.SubmitProofResponse, error) {
	sm, err := s.check(m)
	if err != nil {
		return nil, err
	}
	id := sm.sub.ID
	// A retried submission is answered without loading keys; keys load
	// outside the lock, so that a large key set does not hold up
	// submissions of others.
	if out, found, err := s.lookup(sm); found {
		return out, err
	}
	k, err := s.loadKeys(ctx, sm.key)
	if err != nil {
		return nil, err
	}
	sm.sub.Keys = k
	s.submitMu.Lock()
	defer s.submitMu.Unlock()
	if out, found, err := s.lookupLocked(sm); found {
		return out, err
	}
	// The store holds no job of this id; a directory of its name is a
	// forgotten job's (its idempotency key used again).
	if aside, err := setAside(sm.sub.Out, time.Now()); err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	} else if aside != "" {
		slog.Info("a forgotten job's files set aside", "job", id, "dir", aside)
	}
	if sm.witnesses != nil {
		if err := writeWitnesses(sm); err != nil {
			return nil, err
		}
	}
	if err := s.svc.Submit(sm.sub); err != nil {
		return nil, toConnect(err)
	}
	slog.Info("job submitted", "job", id, "circuit", k.Circuit, "constraints", k.Constraints(),
		"partitions", sm.sub.Partitions, "priority", sm.sub.Priority, "out", sm.sub.Out)
	pos, err := s.queuePosition(id)
	if err != nil {
		return nil, toConnect(err)
	}
	return &cuzkv1.SubmitProofResponse{JobId: id, QueuePosition: pos}, nil
}

func (s *Server) lookup(sm *submission) (*cuzkv1.SubmitProofResponse, bool, error) {
	s.submitMu.Lock()
	defer s.submitMu.Unlock()
	return s.lookupLocked(sm)
}

// lookupLocked finds the job a submission's idempotency key names; found is
// false when there is no key or no such job. The caller holds submitMu.
func (s *Server) lookupLocked(sm *submission) (out *cuzkv1.SubmitProofResponse, found bool, err error) {
	if sm.idemKey == "" {
		return nil, false, nil
	}
	js, err := s.svc.Status(sm.sub.ID)
	if isNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, toConnect(err)
	}
	out, err = s.existing(sm, js)
	return out, true, err
}

// existing answers a submission whose idempotency key names a job the store
// holds: that job, if it is the one asked for.
func (s *Server) existing(sm *submission, js runner.JobStatus) (*cuzkv1.SubmitProofResponse, error) {
	if js.Circuit != sm.key.circuit.Name() || js.NumPartitions != sm.sub.Partitions {
		return nil, connect.NewError(connect.CodeAlreadyExists, fmt.Errorf(
			"idempotency key %q names job %s (%s, %d partitions), not a job of %s with %d partitions",
			sm.idemKey, js.ID, js.Circuit, js.NumPartitions, sm.key.circuit.Name(), sm.sub.Partitions))
	}
	pos, err := s.queuePosition(js.ID)
	if err != nil {
		return nil, toConnect(err)
	}
	return &cuzkv1.SubmitProofResponse{JobId: js.ID, QueuePosition: pos, Existing: true}, nil
}

// queuePosition is how many jobs this daemon runs that were submitted
// before id at its priority or higher.
func (s *Server) queuePosition(id string) (uint32, error) {
	jobs, err := s.svc.Jobs()
	if err != nil {
		return 0, err
	}
	var mine *runner.JobStatus
	for i := range jobs {
		if jobs[i].ID == id {
			mine = &jobs[i]
		}
	}
	if mine == nil || mine.State != runner.StateRunning {
		return 0, nil
	}
	prio, _ := actors.ParsePriority(mine.Priority)
	var n uint32
	for _, j := range jobs {
		if j.ID == id || j.State != runner.StateRunning || !j.Created.Before(mine.Created) {
			continue
		}
		if p, _ := actors.ParsePriority(j.Priority); p >= prio {
			n++
		}
	}
	return n, nil
}

// AwaitProof implements ProvingEngineHandler.
func (s *Server) AwaitProof(ctx context.Context, req *connect.Request[cuzkv1.AwaitProofRequest]) (*connect.Response[cuzkv1.AwaitProofResponse], error) {
	out, err := s.await(ctx, req.Msg.JobId, req.Msg.Timeout.AsDuration())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

// Prove implements ProvingEngineHandler.
func (s *Server) Prove(ctx context.Context, req *connect.Request[cuzkv1.ProveRequest]) (*connect.Response[cuzkv1.AwaitProofResponse], error) {
	if req.Msg.Submit == nil {
		return nil, invalid("submit is required")
	}
	sub, err := s.submit(ctx, req.Msg.Submit)
	if err != nil {
		return nil, err
	}
	out, err := s.await(ctx, sub.JobId, req.Msg.Timeout.AsDuration())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

func (s *Server) await(ctx context.Context, id string, timeout time.Duration) (*cuzkv1.AwaitProofResponse, error) {
	if id == "" {
		return nil, invalid("job_id is required")
	}
	if timeout < 0 {
		return nil, invalid("timeout %s: want zero (no limit) or more", timeout)
	}
	wctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	js, err := s.svc.Wait(wctx, id)
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		// Our timeout, not the caller's: answer with the status now.
		js, err := s.svc.Status(id)
		if err != nil {
			return nil, toConnect(err)
		}
		return &cuzkv1.AwaitProofResponse{Job: jobStatus(js, true), TimedOut: true}, nil
	}
	if err != nil {
		return nil, toConnect(err)
	}
	out := &cuzkv1.AwaitProofResponse{Job: jobStatus(js, true)}
	if js.State == runner.StateDone && s.opt.Store != nil {
		proofs, err := s.opt.Store.Proofs(id)
		if err != nil {
			return nil, toConnect(fmt.Errorf("proofs of job %s: %w", id, err))
		}
		for _, p := range proofs {
			out.Proofs = append(out.Proofs, &cuzkv1.PartitionProof{Index: uint32(p.Index), Proof: p.Proof, PublicInputs: p.Public})
		}
	}
	return out, nil
}

// GetJob implements ProvingEngineHandler.
func (s *Server) GetJob(ctx context.Context, req *connect.Request[cuzkv1.GetJobRequest]) (*connect.Response[cuzkv1.JobStatus], error) {
	if req.Msg.JobId == "" {
		return nil, invalid("job_id is required")
	}
	js, err := s.svc.Status(req.Msg.JobId)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(jobStatus(js, true)), nil
}

// CancelProof implements ProvingEngineHandler: the job's queued partitions
// are dropped, its running ones stop at their next stage boundary (one that
// finishes its proof first stays proved), and the store records it
// cancelled. A job that has ended fails with FailedPrecondition.
func (s *Server) CancelProof(ctx context.Context, req *connect.Request[cuzkv1.CancelProofRequest]) (*connect.Response[cuzkv1.CancelProofResponse], error) {
	id := req.Msg.JobId
	if id == "" {
		return nil, invalid("job_id is required")
	}
	if err := s.svc.Cancel(id); err != nil {
		return nil, toConnect(err)
	}
	slog.Info("job cancelled", "job", id)
	js, err := s.svc.Status(id)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&cuzkv1.CancelProofResponse{Job: jobStatus(js, true)}), nil
}

// ForgetJob implements ProvingEngineHandler: an ended job goes from the store
// with its partitions and their proofs (runner.Service.Forget); the files
// under its out directory stay. A running or unfinished job fails with
// FailedPrecondition, an unknown one with NotFound.
func (s *Server) ForgetJob(ctx context.Context, req *connect.Request[cuzkv1.ForgetJobRequest]) (*connect.Response[cuzkv1.ForgetJobResponse], error) {
	id := req.Msg.JobId
	if id == "" {
		return nil, invalid("job_id is required")
	}
	js, err := s.svc.Forget(id)
	if err != nil {
		return nil, toConnect(err)
	}
	slog.Info("job forgotten", "job", id, "state", js.State)
	return connect.NewResponse(&cuzkv1.ForgetJobResponse{Job: jobStatus(js, false)}), nil
}

// RetryJob implements ProvingEngineHandler: an ended job's failed
// partitions are reopened and proved again (runner.Service.Retry). A running
// job, or one with nothing failed, fails with FailedPrecondition, an unknown
// one with NotFound; a job whose keys cannot be loaded keeps its partitions
// reopened for the next resume and fails with the reason.
func (s *Server) RetryJob(ctx context.Context, req *connect.Request[cuzkv1.RetryJobRequest]) (*connect.Response[cuzkv1.RetryJobResponse], error) {
	id := req.Msg.JobId
	if id == "" {
		return nil, invalid("job_id is required")
	}
	n, err := s.svc.Retry(id)
	if err != nil {
		return nil, toConnect(err)
	}
	slog.Info("retrying failed partitions", "job", id, "partitions", n)
	js, err := s.svc.Status(id)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&cuzkv1.RetryJobResponse{Job: jobStatus(js, true), Reopened: uint32(n)}), nil
}

// keyRef is a checked KeySetRef.
type keyRef struct {
	circuit circuits.Circuit // nil for an outside circuit's key set
	name    string           // an outside circuit's key set
	target  int
	layout  circuits.Layout
	dir     string
}

// circuitName is the circuit the key set's manifest must name.
func (r keyRef) circuitName() (string, error) {
	if r.circuit != nil {
		return r.circuit.Name(), nil
	}
	m, err := prover.ReadManifest(r.dir)
	if err != nil {
		return "", err
	}
	return m.Circuit, nil
}

func (s *Server) keyRef(r *cuzkv1.KeySetRef) (keyRef, error) {
	if r == nil || r.Circuit == "" {
		return keyRef{}, invalid("keys.circuit is required (%v)", circuits.Names())
	}
	circ, err := circuits.Lookup(r.Circuit)
	if err != nil {
		return keyRef{}, invalid("keys.circuit: %w", err)
	}
	if r.Constraints < 1 || r.Constraints > MaxConstraints {
		return keyRef{}, invalid("keys.constraints must be 1 to %d, got %d", MaxConstraints, r.Constraints)
	}
	target := int(r.Constraints)
	l, err := circ.Layout(target)
	if err != nil {
		return keyRef{}, invalid("keys.constraints: %w", err)
	}
	return keyRef{circuit: circ, target: target, layout: l, dir: prover.KeyDir(s.opt.Keys, circ.Name(), target)}, nil
}

// MaxConstraints bounds a key set's target constraints per partition: 2^27,
// past the largest domain a BLS12-381 key of cuzk's circuits is made for.
// What the host can hold is checked against free memory as well.
const MaxConstraints = 1 << 27

func priorityFrom(p cuzkv1.Priority) (actors.Priority, error) {
	switch p {
	case cuzkv1.Priority_PRIORITY_UNSPECIFIED, cuzkv1.Priority_PRIORITY_NORMAL:
		return actors.PriorityNormal, nil
	case cuzkv1.Priority_PRIORITY_LOW:
		return actors.PriorityLow, nil
	case cuzkv1.Priority_PRIORITY_HIGH:
		return actors.PriorityHigh, nil
	case cuzkv1.Priority_PRIORITY_CRITICAL:
		return actors.PriorityCritical, nil
	}
	return 0, invalid("priority %d: want LOW, NORMAL, HIGH or CRITICAL", p)
}

func isNotFound(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, prover.ErrNoKeys)
}

func isInvalid(err error) bool {
	return errors.Is(err, store.ErrInvalid) || errors.Is(err, runner.ErrInvalid)
}
