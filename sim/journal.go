package sim

import (
	"sync"

	"github.com/cuzk/cuzk/actors"
)

// memJournal is the simulator's stand-in for the store: it survives a
// simulated process crash (it belongs to the world, not to the process) so
// that the restarted engine can resume. Proofs are durable once a partition is
// reported done (finalize writes the proof before it reports), so the journal
// learns of them from EvPartitionDone.
type memJournal struct {
	mu     sync.Mutex
	jobs   []actors.JobSpec
	known  map[string]bool
	proved map[actors.PartitionID]bool
	failed map[actors.PartitionID]bool
	// duplicates counts partitions reported proved twice; the invariant is zero.
	duplicates int
}

func newMemJournal() *memJournal {
	return &memJournal{known: map[string]bool{}, proved: map[actors.PartitionID]bool{}, failed: map[actors.PartitionID]bool{}}
}

// RecordJob implements actors.Journal.
func (j *memJournal) RecordJob(job actors.JobSpec) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.known[job.ID] {
		j.known[job.ID] = true
		job.Pending = nil
		j.jobs = append(j.jobs, job)
	}
	return nil
}

// RecordAttempt implements actors.Journal.
func (j *memJournal) RecordAttempt(actors.PartitionID) error { return nil }

// RecordCancelled implements actors.Journal: a cancelled partition, like a
// failed one, is not resumed.
func (j *memJournal) RecordCancelled(p actors.PartitionID) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.failed[p] = true
	return nil
}

// RecordFailed implements actors.Journal.
func (j *memJournal) RecordFailed(p actors.PartitionID, _ string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.failed[p] = true
	return nil
}

func (j *memJournal) recordProved(p actors.PartitionID) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.proved[p] {
		j.duplicates++
	}
	j.proved[p] = true
}

// unfinished returns, in submission order, every recorded job that still has
// partitions neither proved nor failed, with Pending set to those.
func (j *memJournal) unfinished() []actors.JobSpec {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []actors.JobSpec
	for _, job := range j.jobs {
		var pending []int
		for i := 0; i < job.Partitions; i++ {
			p := actors.PartitionID{Job: job.ID, Partition: i}
			if !j.proved[p] && !j.failed[p] {
				pending = append(pending, i)
			}
		}
		if len(pending) > 0 {
			job.Pending = pending
			out = append(out, job)
		}
	}
	return out
}
