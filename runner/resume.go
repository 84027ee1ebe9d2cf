package runner

import (
	"fmt"
	"strconv"

	"github.com/consensys/gnark/backend/witness"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
)

// JobRequest is what the actors need to prove a job.
type JobRequest struct {
	ID         string
	Keys       *prover.Keys
	Seed       []byte
	Partitions int
	Pending    []int // nil: all
	Priority   actors.Priority
	// Witnesses, for a user's circuit, are the partitions' witnesses, one
	// per partition (Partitions is their number; Seed is unused). Empty: an
	// example circuit, whose witnesses come from Seed.
	Witnesses []WitnessFile
	// Inputs are witnesses held in memory, one per partition, for callers
	// in Go (package engine). They are not recorded: a job of inputs cannot
	// be resumed by another process.
	Inputs []witness.Witness
	// Local runs the job on this service's devices even when it has a
	// Cluster: a cluster member proving a partition leased to it.
	Local bool
}

// Submission is a job request with what the store records beside it so that
// the job can be resumed: the constraint target its keys were made for and
// the directory its proof files go to (empty: none are written; the proofs
// are in the store).
type Submission struct {
	JobRequest
	Target int
	Out    string
}

// KeyLoader loads the key set of a circuit layout from a directory;
// prover.Load is one. A service passes one that keeps loaded keys.
type KeyLoader func(dir, circuit string, layout circuits.Layout) (*prover.Keys, error)

// ResumeRequest rebuilds the submission of a job recorded in st: its keys
// (loaded with load, or prover.Load when load is nil; refused if they
// changed since the job started) and, as Pending, the partitions neither
// proved nor failed. A synthesized partition is pending again: its witness
// lived in the memory of a process that is gone.
func ResumeRequest(st *store.Store, id string, load KeyLoader) (Submission, error) {
	if load == nil {
		load = prover.Load
	}
	job, err := st.Job(id)
	if err != nil {
		return Submission{}, err
	}
	var target int
	var layout circuits.Layout
	var wits []WitnessFile
	if s, ok := job.Params[ParamWitnesses]; ok {
		if s == witnessesInMemory {
			return Submission{}, fmt.Errorf("job %s: its witnesses were in the memory of the process that submitted it: it cannot be resumed", id)
		}
		// A user's circuit: the keys are whatever the directory holds (the
		// hash below says whether they are the job's), the witnesses the
		// files recorded.
		if wits, err = decodeWitnessFiles(s); err != nil {
			return Submission{}, fmt.Errorf("job %s: %w", id, err)
		}
	} else {
		if target, err = strconv.Atoi(job.Params[ParamTarget]); err != nil {
			return Submission{}, fmt.Errorf("job %s: record has no constraint target", id)
		}
		circ, err := circuits.Lookup(job.Circuit)
		if err != nil {
			return Submission{}, fmt.Errorf("job %s: %w", id, err)
		}
		if layout, err = circ.Layout(target); err != nil {
			return Submission{}, fmt.Errorf("job %s: %w", id, err)
		}
	}
	k, err := load(job.Params[ParamKeys], job.Circuit, layout)
	if err != nil {
		return Submission{}, fmt.Errorf("job %s: %w", id, err)
	}
	if k.Hash != job.KeyHash {
		return Submission{}, fmt.Errorf("job %s: the proving keys in %s changed since the job started (key hash %.16s, job recorded %.16s): refusing to mix proofs of different keys",
			id, k.Dir, k.Hash, job.KeyHash)
	}
	parts, err := st.Partitions(id)
	if err != nil {
		return Submission{}, err
	}
	pending := []int{}
	for _, p := range parts {
		if !p.State.Final() {
			pending = append(pending, p.Index)
		}
	}
	return Submission{
		JobRequest: JobRequest{ID: id, Keys: k, Seed: job.Seed, Partitions: job.NumPartitions,
			Pending: pending, Priority: actors.Priority(job.Priority), Witnesses: wits},
		Target: target,
		Out:    job.Params[ParamOut],
	}, nil
}

// ReopenFailed makes every failed partition of job id pending again
// (store.Reopen) and returns them, with the errors they had failed with.
func ReopenFailed(st *store.Store, id string) ([]store.Partition, error) {
	parts, err := st.Partitions(id)
	if err != nil {
		return nil, err
	}
	var out []store.Partition
	for _, p := range parts {
		if p.State != store.Failed {
			continue
		}
		if err := st.Reopen(id, p.Index); err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}
