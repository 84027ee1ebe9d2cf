package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
)

// Distributor proves a service's jobs over the members of a cluster
// (package cluster). The service records the job and tracks it as any
// other; the distributor leases its partitions to members and reports back
// through the service's Cluster* methods, which record each proof in the
// store before the partition counts as proved.
type Distributor interface {
	// Distribute takes over job sub, recorded in the store already: its
	// partitions sub.Pending (nil: all) are to be proved. It must not
	// block on the proving.
	Distribute(sub Submission) error
	// Cancel stops a job Distribute took: no more leases, its partitions
	// not proved recorded cancelled (ClusterCancelled), then ClusterJobDone.
	Cancel(id string) error
}

// distributed reports whether sub goes to the cluster: the service has
// one, the job is not a member's leased partition, and any member can have
// its witnesses: made from its seed (an example circuit), or witness files
// small enough to go with each lease (MaxLeasedWitness). Witnesses held in
// memory stay on this member: they are not recorded, and a restarted owner
// could not lease them again.
func (s *Service) distributed(sub Submission) bool {
	if s.opt.Cluster == nil || sub.Local || len(sub.Inputs) > 0 {
		return false
	}
	for _, w := range sub.Witnesses {
		if w.Size <= 0 || w.Size > MaxLeasedWitness {
			return false
		}
	}
	return true
}

// distribute records a job the cluster proves and hands it over; start's
// caller holds submitMu and has tracked the job.
func (s *Service) distribute(sub Submission, spec actors.JobSpec) error {
	err := s.journal.RecordJob(spec)
	if err == nil {
		err = s.opt.Cluster.Distribute(sub)
	}
	if err != nil {
		s.untrack(sub.ID)
		return fmt.Errorf("submit job %s to the cluster: %w", sub.ID, err)
	}
	return nil
}

// Submission returns the recorded submission of job id, as Resume would
// make it, with its keys loaded through the service: a cluster member uses
// it to prove a partition of a job another member owns. Pending lists the
// partitions neither proved nor failed.
func (s *Service) Submission(id string) (Submission, error) {
	return ResumeRequest(s.st, id, func(dir, circuit string, l circuits.Layout) (*prover.Keys, error) {
		return s.Keys(dir, circuit, l, nil)
	})
}

// ClusterRunning records that partition p of a distributed job runs at r
// (a member's device), for Status; a zero r.Member clears it.
func (s *Service) ClusterRunning(p actors.PartitionID, r Running) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.jobs[p.Job]
	if t == nil || !t.cluster {
		return
	}
	if r.Member == "" {
		delete(t.live, p.Partition)
		return
	}
	t.live[p.Partition] = r
}

// ErrDuplicate: a proof arrived for a partition that is proved already; the
// first proof stays, this one is dropped.
var ErrDuplicate = errors.New("partition proved already")

// ClusterProved records the proof of partition p of a distributed job, run
// at r, durably (its files in the job's directory, then the store, synced)
// and reports it as EvPartitionDone. A partition proved already fails with
// ErrDuplicate and changes nothing.
func (s *Service) ClusterProved(p actors.PartitionID, proof, public []byte, t prover.Timings, r Running) error {
	err := s.journal.PartitionProved(p, proof, public, t)
	if errors.Is(err, store.ErrAlreadyProved) {
		return fmt.Errorf("proof of %s from %s: %w", p, r.Member, ErrDuplicate)
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	if tr := s.jobs[p.Job]; tr != nil && tr.cluster {
		delete(tr.live, p.Partition)
		tr.ran[p.Partition] = r
		tr.took[p.Partition] = map[string]time.Duration(t)
	}
	s.mu.Unlock()
	s.emit(actors.Event{Kind: actors.EvPartitionDone, Partition: p, Device: r.Device, Worker: r.Worker})
	return nil
}

// ClusterCancelled records partition p of a distributed job cancelled.
func (s *Service) ClusterCancelled(p actors.PartitionID) error {
	if err := s.journal.RecordCancelled(p); err != nil {
		return err
	}
	s.emit(actors.Event{Kind: actors.EvPartitionCancelled, Partition: p, Worker: -1})
	return nil
}

// ClusterJobDone ends a distributed job: Wait returns. why is empty when
// every partition was proved.
func (s *Service) ClusterJobDone(id, why string) {
	s.emit(actors.Event{Kind: actors.EvJobDone, Partition: actors.PartitionID{Job: id}, Worker: -1, Err: why})
}

// emit reports an event of a distributed job to the service and its
// observers, as the actors report their own.
func (s *Service) emit(e actors.Event) {
	s.Observe(e)
	if s.opt.Observer != nil {
		s.opt.Observer.Observe(e)
	}
}

// placements returns where each partition of job id was last placed in the
// cluster, from the store; nil when it has none or cannot be read.
func (s *Service) placements(id string) map[int]Running {
	if s.opt.Cluster == nil {
		return nil
	}
	pls, err := s.st.Placements(id)
	if err != nil {
		slog.Warn("read placements", "job", id, "err", err)
		return nil
	}
	out := make(map[int]Running, len(pls))
	for i, pl := range pls {
		out[i] = Running{Device: pl.Device, Worker: pl.Worker, Member: pl.Member}
	}
	return out
}

// ClusterFailed records partition p of a distributed job failed for good,
// with the reason, and reports it as EvPartitionFailed.
func (s *Service) ClusterFailed(p actors.PartitionID, reason string) error {
	if err := s.journal.RecordFailed(p, reason); err != nil {
		return err
	}
	s.emit(actors.Event{Kind: actors.EvPartitionFailed, Partition: p, Worker: -1, Err: reason})
	return nil
}
