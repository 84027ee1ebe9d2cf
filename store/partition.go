package store

import (
	"fmt"
	"time"
)

// State is where a partition is in its life. The order of the constants is the
// order of progress; proved and failed are both final.
type State uint8

// The states of a partition.
const (
	Pending     State = iota // created, not yet synthesized
	Synthesized              // witness synthesized in some attempt
	Proved                   // proof written; final
	Failed                   // failed for good; final unless reopened (Store.Reopen)
	Cancelled                // its job was cancelled before it was proved; final
)

var stateNames = [...]string{"pending", "synthesized", "proved", "failed", "cancelled"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Final reports whether no transition leaves s.
func (s State) Final() bool { return s == Proved || s == Failed || s == Cancelled }

func parseState(s string) (State, bool) {
	for i, n := range stateNames {
		if n == s {
			return State(i), true
		}
	}
	return 0, false
}

// Partition is the durable record of one partition of a job.
type Partition struct {
	Job   string
	Index int
	State State
	// Attempts counts StartAttempt calls; it never decreases.
	Attempts int
	// LastError is the reason given to MarkFailed.
	LastError string
	// Timings maps a stage name (synthesize, prep, stage, compute, b_g2,
	// finalize) to the time the proving attempt spent in it.
	Timings map[string]time.Duration
	// Updated is when the record was last written (Options.Now).
	Updated time.Time
	// Proof and Public are the proof (gnark's binary Groth16 encoding) and
	// the public inputs of a proved partition; both opaque to the store.
	Proof  []byte
	Public []byte
}

// ID names the partition as "job/index", as in errors and logs.
func (p Partition) ID() string { return fmt.Sprintf("%s/%d", p.Job, p.Index) }

// op is a change requested of a partition.
type op uint8

const (
	opStartAttempt op = iota
	opSynthesized
	opProved
	opFailed
	opReopen
	opCancel
)

var opNames = [...]string{"start attempt", "mark synthesized", "mark proved", "mark failed", "reopen", "cancel"}

func (o op) String() string { return opNames[o] }

// next is the partition state machine, in one place: the state after o is
// applied to a partition in state s, or why o is refused.
//
// StartAttempt leaves the state alone: a synthesized witness lives only in the
// memory of the process that computed it, so a new attempt synthesizes again
// and MarkSynthesized is accepted on a synthesized partition.
//
// Reopen is the one way out of a final state: a failed partition becomes
// pending again, for a new try (its attempts and last error are kept). It is
// refused for any other state.
func next(s State, o op) (State, error) {
	if o == opReopen {
		if s != Failed {
			return s, fmt.Errorf("%w: reopen a %s partition (only failed ones reopen)", ErrTransition, s)
		}
		return Pending, nil
	}
	switch s {
	case Proved:
		return s, ErrAlreadyProved
	case Failed, Cancelled:
		return s, fmt.Errorf("%w: %s a %s partition", ErrTransition, o, s)
	}
	switch o {
	case opStartAttempt:
		return s, nil
	case opSynthesized:
		return Synthesized, nil
	case opProved:
		return Proved, nil
	case opFailed:
		return Failed, nil
	case opCancel:
		return Cancelled, nil
	}
	panic(fmt.Sprintf("store: unknown op %d", o))
}

// checkForward asserts the invariants of one write of a partition record: the
// state never goes back, attempts never decrease, and a final state is never
// left but from failed to pending (reopen, checked by checkReopen instead). A
// violation is a bug in this package; it panics, and the panic is turned into
// an error at the API boundary.
func checkForward(before, after Partition) {
	if after.Job != before.Job || after.Index != before.Index {
		panic(fmt.Sprintf("store: invariant: partition %s rewritten as %s", before.ID(), after.ID()))
	}
	if after.Attempts < before.Attempts {
		panic(fmt.Sprintf("store: invariant: partition %s attempts %d -> %d", before.ID(), before.Attempts, after.Attempts))
	}
	if before.State.Final() && after.State != before.State {
		panic(fmt.Sprintf("store: invariant: partition %s left final state %s for %s", before.ID(), before.State, after.State))
	}
	if !after.State.Final() && after.State < before.State {
		panic(fmt.Sprintf("store: invariant: partition %s went back from %s to %s", before.ID(), before.State, after.State))
	}
	if (after.State == Proved) != (len(after.Proof) > 0) {
		panic(fmt.Sprintf("store: invariant: partition %s is %s with %d proof bytes", after.ID(), after.State, len(after.Proof)))
	}
}

// checkReopen asserts the invariants of a reopen: a failed partition becomes
// pending with its identity, attempts and proofless record kept.
func checkReopen(before, after Partition) {
	if after.Job != before.Job || after.Index != before.Index {
		panic(fmt.Sprintf("store: invariant: partition %s rewritten as %s", before.ID(), after.ID()))
	}
	if before.State != Failed || after.State != Pending || after.Attempts != before.Attempts || len(after.Proof) > 0 {
		panic(fmt.Sprintf("store: invariant: reopen of %s: %s (%d attempts) -> %s (%d attempts, %d proof bytes)",
			before.ID(), before.State, before.Attempts, after.State, after.Attempts, len(after.Proof)))
	}
}
