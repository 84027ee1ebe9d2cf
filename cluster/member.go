package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/consensys/gnark/backend/witness"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/circuits"
	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
)

// leaseJobPrefix starts the id of the one-partition job a member runs for a
// lease, in its own store.
const leaseJobPrefix = "lease-"

func leaseJobID(lease string) string { return leaseJobPrefix + lease }

// prove runs leased partition l on this member's service: the keys under
// keyRoot must be the job's (same hash), the witness is the lease's (a job
// of witness files) or made from the job's seed as the owner would make it
// (an example circuit), and the partition is proved as a one-partition job
// of this member's own (its witness held in memory, so that no resume of
// this member takes it up: the owner leases it again). A failure is in the
// result's Error and returned.
func prove(ctx context.Context, svc *runner.Service, st *store.Store, keyRoot string, l *cuzkv1.ClusterLease) (*cuzkv1.ClusterResult, error) {
	res := &cuzkv1.ClusterResult{LeaseId: l.LeaseId, JobId: l.JobId, Partition: l.Partition, Device: -1, Worker: -1}
	fail := func(err error) (*cuzkv1.ClusterResult, error) {
		res.Error = err.Error()
		return res, err
	}
	k, w, err := leaseWitness(svc, keyRoot, l)
	if err != nil {
		return fail(err)
	}
	id := leaseJobID(l.LeaseId)
	sub := runner.Submission{JobRequest: runner.JobRequest{ID: id, Keys: k, Partitions: 1,
		Priority: actors.Priority(l.Priority), Inputs: []witness.Witness{w}, Local: true}, Target: int(l.Target)}
	if err := svc.Submit(sub); err != nil {
		return fail(err)
	}
	js, err := svc.Wait(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			stopLease(svc, id)
		}
		return fail(err)
	}
	// The lease job is this member's scratch: its proof goes to the owner,
	// which records it, so it leaves the store once read, proved or not.
	defer forgetLease(svc, id)
	if js.State != runner.StateDone {
		return fail(fmt.Errorf("partition %d: %s: %s", l.Partition, js.State, js.Error))
	}
	proofs, err := st.Proofs(id)
	if err != nil || len(proofs) != 1 {
		return fail(fmt.Errorf("read the proof of lease job %s: %d proofs, %v", id, len(proofs), err))
	}
	res.Proof, res.Public = proofs[0].Proof, proofs[0].Public
	if len(js.Partitions) == 1 {
		p := js.Partitions[0]
		if p.Ran != nil {
			res.Device, res.Worker = int32(p.Ran.Device), int32(p.Ran.Worker)
		}
		res.StageUs = map[string]int64{}
		for stage, ms := range p.StagesMS {
			res.StageUs[stage] = int64(ms * 1000)
		}
	}
	return res, nil
}

// leaseWitness loads lease l's keys from under keyRoot, refused if they are
// not the job's, and returns them with the partition's witness.
func leaseWitness(svc *runner.Service, keyRoot string, l *cuzkv1.ClusterLease) (*prover.Keys, witness.Witness, error) {
	var dir, which string
	var layout circuits.Layout
	if l.KeySet != "" {
		// A circuit made outside cuzk: its key set is named, its layout is
		// the constraint system's own.
		dir, which = filepath.Join(keyRoot, l.KeySet), "key set "+l.KeySet
	} else {
		circ, err := circuits.Lookup(l.Circuit)
		if err != nil {
			return nil, nil, err
		}
		if layout, err = circ.Layout(int(l.Target)); err != nil {
			return nil, nil, err
		}
		dir, which = prover.KeyDir(keyRoot, l.Circuit, int(l.Target)), fmt.Sprintf("keys for %s at %d constraints", l.Circuit, l.Target)
	}
	k, err := svc.Keys(dir, l.Circuit, layout, nil)
	if err != nil {
		return nil, nil, err
	}
	if k.Hash != l.KeyHash {
		return nil, nil, fmt.Errorf("this member's %s are %.16s, the job's %.16s: refusing to mix proofs of different keys",
			which, k.Hash, l.KeyHash)
	}
	var w witness.Witness
	if l.KeySet != "" {
		w, err = runner.DecodeWitness(k, fmt.Sprintf("the witness of lease %s", l.LeaseId), l.Witness)
	} else {
		w, err = prover.Witness(k, l.Seed, int(l.Partition))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("witness of partition %d: %w", l.Partition, err)
	}
	return k, w, nil
}

// cancelStaleLeases records cancelled the lease jobs an earlier run of this
// member left unfinished: their owners have leased those partitions again.
func cancelStaleLeases(svc *runner.Service, st *store.Store) error {
	sums, err := st.UnfinishedJobs()
	if err != nil {
		return fmt.Errorf("cluster: stale leases: %w", err)
	}
	for _, s := range sums {
		if !strings.HasPrefix(s.ID, leaseJobPrefix) {
			continue
		}
		if err := svc.Cancel(s.ID); err != nil {
			return fmt.Errorf("cluster: stale lease job %s: %w", s.ID, err)
		}
		slog.Info("cluster: cancelled a lease left by the last run", "job", s.ID)
		forgetLease(svc, s.ID)
	}
	return nil
}

// stopAfter bounds how long a revoked lease job may take to stop (a stage
// running when it is cancelled finishes first) before the member gives up
// forgetting it; a later start cancels and forgets what is left.
const stopAfter = time.Minute

// stopLease cancels lease job id, whose lease was revoked, and forgets it
// once the cancel has taken effect: the service's cancel only asks the
// actors to stop, and a job still running cannot be forgotten.
func stopLease(svc *runner.Service, id string) {
	if err := svc.Cancel(id); err != nil && !errors.Is(err, runner.ErrFinished) && !errors.Is(err, store.ErrNotFound) {
		if !errors.Is(err, runner.ErrClosed) {
			slog.Warn("cluster: stop a revoked lease", "job", id, "err", err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopAfter)
	defer cancel()
	if _, err := svc.Wait(ctx, id); err != nil {
		if !errors.Is(err, runner.ErrClosed) {
			slog.Warn("cluster: a revoked lease job did not stop; it stays in the store", "job", id, "err", err)
		}
		return
	}
	forgetLease(svc, id)
}

// forgetLease removes a finished lease job from the member's service and
// store. A failure only costs the store some space: it is logged.
func forgetLease(svc *runner.Service, id string) {
	if _, err := svc.Forget(id); err != nil && !errors.Is(err, store.ErrNotFound) {
		slog.Warn("cluster: keep a finished lease job", "job", id, "err", err)
	}
}
