package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Placement is where a partition of a job proved over a cluster was last
// leased: the lease, the member that holds it and, once its proof is
// recorded, the device and worker that ran it there. It lives beside the
// partition record (j/<id>/pl/<index>) and never changes the partition's
// state: the owner writes it before it sends the lease, so that a restarted
// owner knows which member's result to wait for.
type Placement struct {
	Job     string    `json:"job"`
	Index   int       `json:"index"`
	Lease   string    `json:"lease"`
	Member  string    `json:"member"`
	Device  int       `json:"device"`
	Worker  int       `json:"worker"`
	Proved  bool      `json:"proved,omitempty"` // the partition's proof came from this lease
	Updated time.Time `json:"updated"`
}

func placementPrefix(id string) []byte { return []byte(jobPrefix + id + "/pl/") }

func placementKey(id string, idx int) []byte {
	return fmt.Appendf(nil, "%s%s/pl/%06d", jobPrefix, id, idx)
}

// SetPlacement records pl for its partition, replacing the one before, and
// returns once it is on disk. The job and partition must exist.
func (s *Store) SetPlacement(pl Placement) (err error) {
	const op = "set placement"
	release, err := s.begin(op)
	if err != nil {
		return err
	}
	defer release()
	defer s.guard(op, &err)
	fail := func(err error) error {
		return fmt.Errorf("store %s: %s %s/%d: %w", s.dir, op, pl.Job, pl.Index, err)
	}
	if err := validID(pl.Job); err != nil {
		return fail(err)
	}
	if pl.Lease == "" || pl.Member == "" {
		return fail(fmt.Errorf("placement without lease or member: %w", ErrInvalid))
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := s.get(partKey(pl.Job, pl.Index)); errors.Is(err, pebble.ErrNotFound) {
		return fail(fmt.Errorf("no such partition: %w", ErrNotFound))
	} else if err != nil {
		return fail(err)
	}
	pl.Updated = s.opts.Now().Round(0).UTC()
	payload, err := json.Marshal(pl)
	if err != nil {
		return fail(err)
	}
	b := s.db.NewBatch()
	if err := b.Set(placementKey(pl.Job, pl.Index), envelope(payload), nil); err != nil {
		b.Close()
		return fail(err)
	}
	if err := s.commit(b); err != nil {
		return fail(err)
	}
	return nil
}

// Placements returns the placements recorded for job jobID's partitions, by
// partition index; partitions never leased have none.
func (s *Store) Placements(jobID string) (out map[int]Placement, err error) {
	const op = "placements"
	release, err := s.begin(op)
	if err != nil {
		return nil, err
	}
	defer release()
	defer s.guard(op, &err)
	if err := validID(jobID); err != nil {
		return nil, fmt.Errorf("store %s: %s: %w", s.dir, op, err)
	}
	out = map[int]Placement{}
	err = scan(s.db, placementPrefix(jobID), func(k, v []byte) error {
		payload, err := openEnvelope(k, v)
		if err != nil {
			return err
		}
		var pl Placement
		if err := json.Unmarshal(payload, &pl); err != nil {
			return fmt.Errorf("value of %q: %v: %w", k, err, ErrCorrupt)
		}
		if pl.Job != jobID || string(placementKey(pl.Job, pl.Index)) != string(k) {
			return fmt.Errorf("value of %q: placement of %s/%d under the wrong key: %w", k, pl.Job, pl.Index, ErrCorrupt)
		}
		out[pl.Index] = pl
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store %s: %s %s: %w", s.dir, op, jobID, err)
	}
	return out, nil
}
