package runner

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
)

// Param keys a job records so that resume can run it again.
const (
	ParamTarget = "target" // the constraint target the keys were made for
	ParamKeys   = "keys"   // the key set's directory
	ParamOut    = "out"    // the proof output directory
	ParamLayout = "layout" // the circuit layout, for the record
)

// Journal makes a job durable, step by step: what the scheduler decides
// (actors.Journal: a job accepted, an attempt started, a partition failed for
// good) and what the executor produces (a partition synthesized, a proof).
// PartitionProved returns only once the proof is durable, so a partition
// reported done is never lost.
type Journal interface {
	actors.Journal
	PartitionSynthesized(p actors.PartitionID) error
	PartitionProved(p actors.PartitionID, proof, public []byte, t prover.Timings) error
}

// StoreJournal is the Journal over a store. Every call returns once the
// change is on disk.
type StoreJournal struct {
	st *store.Store

	mu   sync.Mutex
	jobs map[string]store.Job // what RecordJob writes for a new job
}

// NewStoreJournal returns a journal over st.
func NewStoreJournal(st *store.Store) *StoreJournal {
	return &StoreJournal{st: st, jobs: map[string]store.Job{}}
}

// Expect tells the journal the record of a job about to be submitted.
func (j *StoreJournal) Expect(req Submission) {
	// Absolute paths, so that resume works from any directory.
	keys, out := absPath(req.Keys.Dir), req.Out
	if out != "" {
		out = absPath(out)
	}
	params := map[string]string{ParamKeys: keys, ParamOut: out}
	switch {
	case len(req.Inputs) > 0:
		params[ParamWitnesses] = witnessesInMemory
	case len(req.Witnesses) > 0:
		params[ParamWitnesses] = encodeWitnessFiles(req.Witnesses)
	default:
		params[ParamTarget], params[ParamLayout] = strconv.Itoa(req.Target), req.Keys.Layout.String()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.jobs[req.ID] = store.Job{
		ID: req.ID, Circuit: req.Keys.Circuit, Constraints: int64(req.Keys.Constraints()),
		KeyHash: req.Keys.Hash, NumPartitions: req.Partitions, Priority: store.Priority(req.Priority),
		Seed: req.Seed, Params: params,
	}
}

// Forget drops what Expect kept of job id, once the job has ended.
func (j *StoreJournal) Forget(id string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.jobs, id)
}

// RecordJob implements actors.Journal: a new job is written before the
// scheduler accepts it; a resumed one must still be there with the same keys.
func (j *StoreJournal) RecordJob(spec actors.JobSpec) error {
	j.mu.Lock()
	rec, ok := j.jobs[spec.ID]
	j.mu.Unlock()
	if !ok {
		return fmt.Errorf("job %s: not expected by the journal", spec.ID)
	}
	err := j.st.CreateJob(rec)
	if errors.Is(err, store.ErrExists) {
		old, gerr := j.st.Job(spec.ID)
		if gerr != nil {
			return gerr
		}
		if old.KeyHash != rec.KeyHash {
			return fmt.Errorf("job %s was started with key set %.16s, these keys are %.16s: refusing to mix proofs of different keys",
				spec.ID, old.KeyHash, rec.KeyHash)
		}
		return nil
	}
	return err
}

// RecordAttempt implements actors.Journal.
func (j *StoreJournal) RecordAttempt(p actors.PartitionID) error {
	_, err := j.st.StartAttempt(p.Job, p.Partition)
	return err
}

// RecordCancelled implements actors.Journal.
func (j *StoreJournal) RecordCancelled(p actors.PartitionID) error {
	return j.st.Cancel(p.Job, p.Partition)
}

// RecordFailed implements actors.Journal.
func (j *StoreJournal) RecordFailed(p actors.PartitionID, reason string) error {
	return j.st.MarkFailed(p.Job, p.Partition, reason)
}

// PartitionSynthesized implements Journal.
func (j *StoreJournal) PartitionSynthesized(p actors.PartitionID) error {
	return j.st.MarkSynthesized(p.Job, p.Partition)
}

// PartitionProved implements Journal.
func (j *StoreJournal) PartitionProved(p actors.PartitionID, proof, public []byte, t prover.Timings) error {
	return j.st.MarkProved(p.Job, p.Partition, proof, public, map[string]time.Duration(t))
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
