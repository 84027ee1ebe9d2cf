package store

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// CreateJob records j and its NumPartitions pending partitions in one batch,
// so that after a crash the job is either all there or absent. It fails with
// ErrExists if the id is taken and ErrInvalid if j does not validate. A zero
// j.Created is set from Options.Now.
func (s *Store) CreateJob(j Job) (err error) {
	const op = "create job"
	release, err := s.begin(op)
	if err != nil {
		return err
	}
	defer release()
	defer s.guard(op, &err)

	now := s.opts.Now()
	if j.Created.IsZero() {
		j.Created = now
	}
	// Round(0) drops the monotonic reading, which does not survive a
	// round trip through the store.
	j.Created = j.Created.Round(0).UTC()
	if err := j.validate(); err != nil {
		return fmt.Errorf("store %s: %s: %w", s.dir, op, err)
	}

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	switch _, err := s.get(jobKey(j.ID)); {
	case err == nil:
		return fmt.Errorf("store %s: %s %s: %w", s.dir, op, j.ID, ErrExists)
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("store %s: %s %s: %w", s.dir, op, j.ID, err)
	}

	b := s.db.NewBatch()
	set := func(k, v []byte) {
		if err == nil {
			err = b.Set(k, v, nil)
		}
	}
	set(jobKey(j.ID), encodeJob(&j))
	if len(j.Seed) > 0 {
		set(seedKey(j.ID), envelope(j.Seed))
	}
	if len(j.Witness) > 0 {
		set(witnessKey(j.ID), envelope(j.Witness))
	}
	for i := range j.NumPartitions {
		set(partKey(j.ID, i), encodePart(&Partition{Job: j.ID, Index: i, State: Pending, Updated: now}))
	}
	set(createdKey(j.ID, j.Created), nil)
	set(unfinishedKey(j.ID), nil)
	if err == nil {
		err = s.commit(b)
	} else {
		b.Close()
	}
	if err != nil {
		return fmt.Errorf("store %s: %s %s: %w", s.dir, op, j.ID, err)
	}
	return nil
}

// StartAttempt durably counts a new attempt at partition idx of job jobID and
// returns its number (1 for the first). It is refused for a final partition:
// ErrAlreadyProved for a proved one, ErrTransition for a failed one.
func (s *Store) StartAttempt(jobID string, idx int) (attempt int, err error) {
	p, err := s.transition(jobID, idx, opStartAttempt, func(p *Partition) error {
		p.Attempts++
		return nil
	})
	return p.Attempts, err
}

// MarkSynthesized records that partition idx of job jobID has its witness.
func (s *Store) MarkSynthesized(jobID string, idx int) error {
	_, err := s.transition(jobID, idx, opSynthesized, nil)
	return err
}

// MarkProved records the proof and public inputs of partition idx of job
// jobID, with the time each stage took. It returns once they are on disk. A
// proved partition is final: proving it again fails with ErrAlreadyProved and
// leaves the first proof in place.
func (s *Store) MarkProved(jobID string, idx int, proof, public []byte, timings map[string]time.Duration) error {
	_, err := s.transition(jobID, idx, opProved, func(p *Partition) error {
		if len(proof) == 0 {
			return fmt.Errorf("empty proof: %w", ErrInvalid)
		}
		p.Proof = append([]byte(nil), proof...)
		p.Public = append([]byte(nil), public...)
		p.Timings = maps.Clone(timings)
		return nil
	})
	return err
}

// MarkFailed records that partition idx of job jobID failed for good, with
// the reason. Retries are the scheduler's business: it calls MarkFailed
// once it has given up (the attempts count survives restarts to help it).
func (s *Store) MarkFailed(jobID string, idx int, reason string) error {
	_, err := s.transition(jobID, idx, opFailed, func(p *Partition) error {
		p.LastError = reason
		return nil
	})
	return err
}

// Cancel records that partition idx of job jobID will not be proved: its job
// was cancelled. A proved partition stays proved (ErrAlreadyProved).
func (s *Store) Cancel(jobID string, idx int) error {
	_, err := s.transition(jobID, idx, opCancel, nil)
	return err
}

// Reopen makes failed partition idx of job jobID pending again, so that a
// resume tries it anew (its attempts and last error are kept), and puts the
// job back among the unfinished ones, in one durable batch. Only a failed
// partition reopens: any other is refused with ErrTransition.
func (s *Store) Reopen(jobID string, idx int) error {
	_, err := s.transition(jobID, idx, opReopen, nil)
	return err
}

// transition applies o to one partition: read, check against the state
// machine (next), change, assert the invariants, write with Sync. When the
// partition is the job's last one to become final, the job leaves the
// unfinished index in the same batch.
func (s *Store) transition(jobID string, idx int, o op, change func(*Partition) error) (after Partition, err error) {
	opName := o.String()
	release, err := s.begin(opName)
	if err != nil {
		return Partition{}, err
	}
	defer release()
	defer s.guard(opName, &err)
	id := fmt.Sprintf("%s/%d", jobID, idx)
	fail := func(err error) (Partition, error) {
		return Partition{}, fmt.Errorf("store %s: %s %s: %w", s.dir, opName, id, err)
	}
	if err := validID(jobID); err != nil {
		return fail(err)
	}
	if idx < 0 || idx >= MaxPartitions {
		return fail(fmt.Errorf("index out of range: %w", ErrNotFound))
	}

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	key := partKey(jobID, idx)
	v, err := s.get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return fail(fmt.Errorf("no such partition: %w", ErrNotFound))
	}
	if err != nil {
		return fail(err)
	}
	before, err := decodePart(key, v)
	if err != nil {
		return fail(err)
	}
	state, err := next(before.State, o)
	if err != nil {
		return fail(err)
	}
	after = before
	after.State = state
	if change != nil {
		if err := change(&after); err != nil {
			return fail(err)
		}
	}
	after.Updated = s.opts.Now().Round(0).UTC()
	if o == opReopen {
		checkReopen(before, after)
	} else {
		checkForward(before, after)
	}

	b := s.db.NewBatch()
	if err := b.Set(key, encodePart(&after), nil); err != nil {
		b.Close()
		return fail(err)
	}
	if after.State.Final() && !before.State.Final() {
		last, err := s.othersFinal(jobID, idx)
		if err != nil {
			b.Close()
			return fail(err)
		}
		if last {
			if err := b.Delete(unfinishedKey(jobID), nil); err != nil {
				b.Close()
				return fail(err)
			}
		}
	}
	if before.State.Final() && !after.State.Final() {
		// Reopened: the job has work again.
		if err := b.Set(unfinishedKey(jobID), nil, nil); err != nil {
			b.Close()
			return fail(err)
		}
	}
	if err := s.commit(b); err != nil {
		return fail(err)
	}
	return after, nil
}

// othersFinal reports whether every partition of the job but idx is final.
// The caller holds writeMu, so no partition changes under it.
func (s *Store) othersFinal(jobID string, idx int) (bool, error) {
	parts, err := partitionsFrom(s.db, jobID)
	if err != nil {
		return false, err
	}
	for _, p := range parts {
		if p.Index != idx && !p.State.Final() {
			return false, nil
		}
	}
	return true, nil
}

// DeleteJob removes job id and everything recorded for it (its inputs, its
// partitions and their proofs, its placements and its index entries) in one
// durable batch. Only a finished job goes: one with a partition neither
// proved nor failed is refused with ErrTransition, since a resume would still
// prove it.
func (s *Store) DeleteJob(id string) (err error) {
	const op = "delete job"
	release, err := s.begin(op)
	if err != nil {
		return err
	}
	defer release()
	defer s.guard(op, &err)

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	j, err := jobFrom(s.db, id)
	if err != nil {
		return fmt.Errorf("store %s: %s %s: %w", s.dir, op, id, err)
	}
	switch _, err := s.get(unfinishedKey(id)); {
	case err == nil:
		return fmt.Errorf("store %s: %s %s: the job is unfinished: %w", s.dir, op, id, ErrTransition)
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("store %s: %s %s: %w", s.dir, op, id, err)
	}
	b := s.db.NewBatch()
	// j/<id>/ holds the inputs, partitions and placements; a job id never
	// holds '/', so the range is this job's alone.
	sub := []byte(jobPrefix + id + "/")
	err = errors.Join(b.Delete(jobKey(id), nil), b.DeleteRange(sub, prefixEnd(sub), nil), b.Delete(createdKey(id, j.Created), nil))
	if err == nil {
		err = s.commit(b)
	} else {
		b.Close()
	}
	if err != nil {
		return fmt.Errorf("store %s: %s %s: %w", s.dir, op, id, err)
	}
	return nil
}
