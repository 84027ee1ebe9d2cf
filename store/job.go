package store

import (
	"fmt"
	"strings"
	"time"
)

// Priority orders jobs in the scheduler's queue. Its values are those of
// actors.Priority, so a conversion between the two is exact.
type Priority int

// Priorities, as in cuzk's gRPC API.
const (
	PriorityLow Priority = iota
	PriorityNormal
	PriorityHigh
	PriorityCritical
)

var priorityNames = [...]string{"LOW", "NORMAL", "HIGH", "CRITICAL"}

func (p Priority) String() string {
	if p.valid() {
		return priorityNames[p]
	}
	return fmt.Sprintf("priority(%d)", int(p))
}

func (p Priority) valid() bool { return p >= 0 && int(p) < len(priorityNames) }

// ParsePriority reads LOW, NORMAL, HIGH or CRITICAL (any case).
func ParsePriority(s string) (Priority, error) {
	for i, n := range priorityNames {
		if strings.EqualFold(s, n) {
			return Priority(i), nil
		}
	}
	return 0, fmt.Errorf("unknown priority %q (want LOW, NORMAL, HIGH or CRITICAL): %w", s, ErrInvalid)
}

// Job is a proving job: NumPartitions proofs of one circuit under one proving
// key set, and what is needed to run it again after a crash.
type Job struct {
	// ID names the job: 1 to MaxIDLen characters from [A-Za-z0-9._-].
	ID string
	// Circuit names the circuit, for instance "porep".
	Circuit string
	// Constraints is the number of constraints of one partition.
	Constraints int64
	// KeyHash is the content hash of the proving key set the job was
	// submitted against; resume refuses to mix keys by comparing it.
	KeyHash string
	// NumPartitions is the number of partitions, 1 to MaxPartitions.
	NumPartitions int
	Priority      Priority
	// Created is set by CreateJob from Options.Now when zero.
	Created time.Time
	// Seed and Witness are the inputs needed to re-run the job: the job's
	// seed bytes and opaque witness-input bytes. Either may be empty. They
	// are loaded by Store.Job and left nil in a JobSummary.
	Seed    []byte
	Witness []byte
	// Params holds free-form parameters of the submitter.
	Params map[string]string
}

// Limits on what CreateJob accepts.
const (
	MaxIDLen      = 128
	MaxPartitions = 100000
)

func validID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("job id %q: want 1 to %d characters: %w", id, MaxIDLen, ErrInvalid)
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			// The id is part of every key of the job; '/' and
			// non-printable bytes would make one job's keys a prefix
			// of another's.
			return fmt.Errorf("job id %q: character %q not in [A-Za-z0-9._-]: %w", id, c, ErrInvalid)
		}
	}
	return nil
}

func (j *Job) validate() error {
	if err := validID(j.ID); err != nil {
		return err
	}
	if j.NumPartitions < 1 || j.NumPartitions > MaxPartitions {
		return fmt.Errorf("job %s: %d partitions, want 1 to %d: %w", j.ID, j.NumPartitions, MaxPartitions, ErrInvalid)
	}
	if j.Constraints < 0 {
		return fmt.Errorf("job %s: negative constraints %d: %w", j.ID, j.Constraints, ErrInvalid)
	}
	if !j.Priority.valid() {
		return fmt.Errorf("job %s: %v: %w", j.ID, j.Priority, ErrInvalid)
	}
	if j.Created.UnixNano() < 0 {
		return fmt.Errorf("job %s: created %v is before 1970: %w", j.ID, j.Created, ErrInvalid)
	}
	return nil
}

// JobSummary is a job without its inputs, with the progress of its
// partitions.
type JobSummary struct {
	Job
	Pending     int // not yet synthesized (includes partitions never started)
	Synthesized int
	Proved      int
	Failed      int
	Cancelled   int
	// Attempts is the sum of the attempts of the job's partitions.
	Attempts int
	// Updated is when a partition record of the job was last written: for a
	// finished job, when it ended.
	Updated time.Time
}

// Finished reports whether every partition is proved, failed or cancelled:
// nothing is left to run.
func (s JobSummary) Finished() bool { return s.Proved+s.Failed+s.Cancelled == s.NumPartitions }

// Done reports whether every partition is proved: the job's proofs can be
// exported.
func (s JobSummary) Done() bool { return s.Proved == s.NumPartitions }
