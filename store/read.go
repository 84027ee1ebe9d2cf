package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// Proof is the proof of one proved partition.
type Proof struct {
	Index  int
	Proof  []byte
	Public []byte
}

// Job returns job id with its inputs (Seed, Witness).
func (s *Store) Job(id string) (j Job, err error) {
	const op = "job"
	release, err := s.begin(op)
	if err != nil {
		return Job{}, err
	}
	defer release()
	defer s.guard(op, &err)
	snap := s.db.NewSnapshot()
	defer snap.Close()
	j, err = jobFrom(snap, id)
	if err == nil {
		j.Seed, err = blobFrom(snap, seedKey(id))
	}
	if err == nil {
		j.Witness, err = blobFrom(snap, witnessKey(id))
	}
	if err != nil {
		return Job{}, fmt.Errorf("store %s: %s %s: %w", s.dir, op, id, err)
	}
	return j, nil
}

// Jobs returns every job, oldest first, with the progress of its partitions.
func (s *Store) Jobs() ([]JobSummary, error) {
	return s.summaries("jobs", createdPrefix, idFromCreatedKey)
}

// UnfinishedJobs returns the jobs that have a partition neither proved nor
// failed, oldest first: the jobs to resume after a restart. It reads an
// index, not every job.
func (s *Store) UnfinishedJobs() ([]JobSummary, error) {
	return s.summaries("unfinished jobs", unfinishedPrefix, func(k []byte) (string, error) {
		return strings.TrimPrefix(string(k), unfinishedPrefix), nil
	})
}

func (s *Store) summaries(op, prefix string, idOf func([]byte) (string, error)) (out []JobSummary, err error) {
	release, err := s.begin(op)
	if err != nil {
		return nil, err
	}
	defer release()
	defer s.guard(op, &err)
	fail := func(err error) ([]JobSummary, error) {
		return nil, fmt.Errorf("store %s: %s: %w", s.dir, op, err)
	}
	// One snapshot, so that the counts of every job are of one moment.
	snap := s.db.NewSnapshot()
	defer snap.Close()
	var ids []string
	err = scan(snap, []byte(prefix), func(k, _ []byte) error {
		id, err := idOf(k)
		if err == nil {
			err = validID(id)
		}
		ids = append(ids, id)
		return err
	})
	if err != nil {
		return fail(err)
	}
	for _, id := range ids {
		j, err := jobFrom(snap, id)
		if err != nil {
			return fail(fmt.Errorf("index %s names job %s: %w", prefix, id, err))
		}
		parts, err := partitionsFrom(snap, id)
		if err != nil {
			return fail(err)
		}
		out = append(out, summarize(j, parts))
	}
	slices.SortStableFunc(out, func(a, b JobSummary) int { return a.Created.Compare(b.Created) })
	return out, nil
}

func summarize(j Job, parts []Partition) JobSummary {
	sum := JobSummary{Job: j}
	for _, p := range parts {
		sum.Attempts += p.Attempts
		if p.Updated.After(sum.Updated) {
			sum.Updated = p.Updated
		}
		switch p.State {
		case Pending:
			sum.Pending++
		case Synthesized:
			sum.Synthesized++
		case Proved:
			sum.Proved++
		case Failed:
			sum.Failed++
		case Cancelled:
			sum.Cancelled++
		}
	}
	return sum
}

// Summary returns job id without its inputs, with the progress of its
// partitions.
func (s *Store) Summary(id string) (sum JobSummary, err error) {
	const op = "summary"
	release, err := s.begin(op)
	if err != nil {
		return JobSummary{}, err
	}
	defer release()
	defer s.guard(op, &err)
	snap := s.db.NewSnapshot()
	defer snap.Close()
	j, err := jobFrom(snap, id)
	if err != nil {
		return JobSummary{}, fmt.Errorf("store %s: %s %s: %w", s.dir, op, id, err)
	}
	parts, err := partitionsFrom(snap, id)
	if err != nil {
		return JobSummary{}, fmt.Errorf("store %s: %s %s: %w", s.dir, op, id, err)
	}
	return summarize(j, parts), nil
}

// Partitions returns the partitions of job jobID in index order.
func (s *Store) Partitions(jobID string) (parts []Partition, err error) {
	const op = "partitions"
	release, err := s.begin(op)
	if err != nil {
		return nil, err
	}
	defer release()
	defer s.guard(op, &err)
	snap := s.db.NewSnapshot()
	defer snap.Close()
	if _, err := jobFrom(snap, jobID); err != nil {
		return nil, fmt.Errorf("store %s: %s %s: %w", s.dir, op, jobID, err)
	}
	parts, err = partitionsFrom(snap, jobID)
	if err != nil {
		return nil, fmt.Errorf("store %s: %s %s: %w", s.dir, op, jobID, err)
	}
	return parts, nil
}

// Proofs returns the proofs of the proved partitions of job jobID in index
// order. A job is done when it has one proof per partition.
func (s *Store) Proofs(jobID string) ([]Proof, error) {
	parts, err := s.Partitions(jobID)
	if err != nil {
		return nil, err
	}
	var out []Proof
	for _, p := range parts {
		if p.State == Proved {
			out = append(out, Proof{Index: p.Index, Proof: p.Proof, Public: p.Public})
		}
	}
	return out, nil
}

func jobFrom(r reader, id string) (Job, error) {
	if err := validID(id); err != nil {
		return Job{}, err
	}
	k := jobKey(id)
	v, err := getFrom(r, k)
	if errors.Is(err, pebble.ErrNotFound) {
		return Job{}, fmt.Errorf("no job %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Job{}, err
	}
	return decodeJob(k, v)
}

// blobFrom returns the payload of an input key, nil if there is none.
func blobFrom(r reader, k []byte) ([]byte, error) {
	v, err := getFrom(r, k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return openEnvelope(k, v)
}

// partitionsFrom reads every partition of a job and checks that they are
// exactly the indexes 0..NumPartitions-1 that CreateJob wrote.
func partitionsFrom(r reader, jobID string) ([]Partition, error) {
	j, err := jobFrom(r, jobID)
	if err != nil {
		return nil, err
	}
	parts := make([]Partition, 0, j.NumPartitions)
	err = scan(r, partPrefix(jobID), func(k, v []byte) error {
		idx, err := indexFromPartKey(jobID, k)
		if err != nil {
			return err
		}
		if idx != len(parts) {
			return fmt.Errorf("job %s: partition %d where %d was expected: %w", jobID, idx, len(parts), ErrCorrupt)
		}
		p, err := decodePart(k, v)
		if err != nil {
			return err
		}
		parts = append(parts, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(parts) != j.NumPartitions {
		return nil, fmt.Errorf("job %s: %d partition records, want %d: %w", jobID, len(parts), j.NumPartitions, ErrCorrupt)
	}
	return parts, nil
}

// scan calls f with each key with prefix p and its value, in key order. The
// slices are valid only during the call.
func scan(r reader, p []byte, f func(k, v []byte) error) (err error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return pebbleError(err)
	}
	defer func() { err = pebbleError(errors.Join(err, it.Close())) }()
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if err := f(it.Key(), v); err != nil {
			return err
		}
	}
	return it.Error()
}
