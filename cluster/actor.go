package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/cuzk/cuzk/actors"
	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
)

// Local messages of the cluster actor (never sent between hosts).
type (
	tickMsg       struct{}
	distributeMsg struct{ sub runner.Submission }
	cancelMsg     struct{ id string }
	statusMsg     struct{}
	// provedMsg: a leased partition this member ran has ended; abandoned
	// when this member's service stopped under it (its owner's lease
	// expires: no failure is reported against the partition).
	provedMsg struct {
		result    *cuzkv1.ClusterResult
		abandoned bool
	}
)

// Status is what a node knows of the cluster.
type Status struct {
	Address string
	Members []string // up, sorted
	Live    []Lease  // leases of the jobs it owns, live now
	Running []string // leases it runs for owners (its own included), sorted
	Unacked int      // results sent and not yet acknowledged
}

// nodeState is the cluster actor: the owner's lease table over the jobs of
// this member, and the leases this member runs for owners. Only the actor's
// goroutine touches it; proving runs on goroutines that report back with
// messages.
type nodeState struct {
	n   *Node
	svc *runner.Service
	st  *store.Store
	m   *nodeMetrics

	// Owner side.
	leases  *Leases
	jobs    map[string]runner.Submission
	members map[string]string // up member address -> its member id
	asked   map[string]bool   // hello sent, no answer yet
	// heard is when each member last answered a hello: every member is
	// asked each heartbeat, so silence says what the provider may not
	// (see liveness).
	heard map[string]time.Time
	since time.Time // when this node started
	// left holds the member ids this member saw leave: protoactor blocks
	// them for good, and this member refuses their hellos (see hello).
	left map[string]bool
	// gone: the addresses where members left, until one is listed there
	// again, each asked for a hello now and then (see probeGone).
	gone map[string]*goneAddr
	// refusedBy: the addresses of the members that refused this member's
	// hello, with how many other members each listed (see refused).
	refusedBy map[string]int
	// lists: the addresses each member listed here last said it lists
	// (see refused).
	lists map[string][]string

	// Member side.
	running map[string]*leaseRun // by lease id
}

// leaseRun is one partition this member runs for an owner.
type leaseRun struct {
	lease  *cuzkv1.ClusterLease
	cancel context.CancelFunc
	result *cuzkv1.ClusterResult // set once proved (or failed)
	sentAt time.Time             // when the result was first sent
	lastAt time.Time             // when it was last sent
}

func newNodeState(n *Node, svc *runner.Service, st *store.Store, m *nodeMetrics) *nodeState {
	return &nodeState{n: n, svc: svc, st: st, m: m, leases: NewLeases(n.opt.LeaseTTL, n.opt.MaxAttempts, n.epoch),
		jobs: map[string]runner.Submission{}, members: map[string]string{}, asked: map[string]bool{},
		heard: map[string]time.Time{}, since: time.Now(), left: map[string]bool{},
		gone: map[string]*goneAddr{}, refusedBy: map[string]int{}, lists: map[string][]string{},
		running: map[string]*leaseRun{}}
}

func (s *nodeState) self() string { return s.n.system.Address() }

func pidOf(addr string) *actor.PID { return actor.NewPID(addr, actorName) }

// Receive implements actor.Actor.
func (s *nodeState) Receive(ctx actor.Context) {
	defer s.gauges()
	switch m := ctx.Message().(type) {
	case *pcluster.ClusterTopology:
		s.topology(ctx, m)
	case tickMsg:
		s.tick(ctx)
	case distributeMsg:
		ctx.Respond(errOrNil(s.distribute(ctx, m.sub)))
	case cancelMsg:
		ctx.Respond(errOrNil(s.cancel(ctx, m.id)))
	case statusMsg:
		ctx.Respond(s.status())

	// Owner side.
	case *cuzkv1.ClusterMemberInfo:
		s.answered(m)
		if id, up := s.members[m.Member]; up {
			s.heard[m.Member] = time.Now()
			if id == m.MemberId {
				s.lists[m.Member] = m.Lists
			}
		}
		if _, up := s.members[m.Member]; up && s.asked[m.Member] {
			delete(s.asked, m.Member)
			slog.Info("cluster: member up", "member", m.Member, "slots", m.Slots)
			s.leases.MemberUp(m.Member, int(m.Slots))
			s.assign(ctx)
		}
	case *cuzkv1.ClusterLeaseReply:
		if !m.Accepted {
			s.m.leases.WithLabelValues("refused").Inc()
			slog.Warn("cluster: lease refused", "lease", m.LeaseId, "err", m.Error)
			s.failLease(m.LeaseId, m.Error)
			s.assign(ctx)
		}
	case *cuzkv1.ClusterHeartbeat:
		ctx.Respond(&cuzkv1.ClusterHeartbeatReply{Revoked: s.leases.Heartbeat(m.Member, m.LeaseIds, time.Now())})
	case *cuzkv1.ClusterResult:
		ctx.Respond(s.result(ctx, m))

	// Member side.
	case *cuzkv1.ClusterHello:
		ctx.Respond(s.hello(m))
	case *cuzkv1.ClusterHelloRefused:
		s.refused(m)
	case *cuzkv1.ClusterLease:
		ctx.Respond(s.take(ctx, m))
	case *cuzkv1.ClusterHeartbeatReply:
		s.revoked(m.Revoked)
	case *cuzkv1.ClusterResultAck:
		if r := s.running[m.LeaseId]; r != nil && r.result != nil {
			if !m.Recorded {
				slog.Info("cluster: result dropped by its owner", "lease", m.LeaseId, "reason", m.Reason)
			}
			delete(s.running, m.LeaseId)
		}
	case provedMsg:
		if m.abandoned {
			delete(s.running, m.result.LeaseId)
			return
		}
		if r := s.running[m.result.LeaseId]; r != nil {
			outcome := "proved"
			if m.result.Error != "" {
				outcome = "failed"
			}
			s.m.ran.WithLabelValues(outcome).Inc()
			r.result, r.sentAt = m.result, time.Now()
			s.sendResult(ctx, r)
		}
	}
}

func errOrNil(err error) any {
	if err != nil {
		return err
	}
	return struct{}{}
}

// topology follows the members the provider sees: a new one is asked what
// it runs, one gone has its leases ended.
func (s *nodeState) topology(ctx actor.Context, t *pcluster.ClusterTopology) {
	for _, m := range t.Left {
		s.left[m.Id] = true
		s.memberGone(ctx, m.Address(), m.Id)
	}
	for _, m := range t.Members {
		addr := m.Address()
		if id, up := s.members[addr]; up && id != m.Id {
			// Restarted at the same address: the old process's leases
			// died with it.
			s.left[id] = true
			s.memberGone(ctx, addr, id)
		}
		if _, up := s.members[addr]; !up {
			s.dropGone(addr)
			delete(s.refusedBy, addr)
			s.members[addr] = m.Id
			s.asked[addr] = true
			s.heard[addr] = time.Now()
			ctx.Request(pidOf(addr), s.helloMsg())
		}
	}
}

// suspect stops leasing to a member whose lease expired (it is dead, or
// cut off while the provider still sees it) until it answers a hello again:
// else its free slots would draw every partition that waits.
func (s *nodeState) suspect(addr string) {
	if _, up := s.members[addr]; up {
		s.leases.MemberUp(addr, 0)
		s.asked[addr] = true
	}
}

func (s *nodeState) memberGone(ctx actor.Context, addr, id string) {
	if cur, up := s.members[addr]; !up || cur != id {
		return
	}
	delete(s.members, addr)
	delete(s.asked, addr)
	delete(s.heard, addr)
	delete(s.lists, addr)
	s.wentAway(addr, time.Now())
	ended := s.leases.MemberDown(addr)
	if len(ended) > 0 {
		slog.Warn("cluster: member left; its leases end", "member", addr, "leases", len(ended))
	} else {
		slog.Info("cluster: member left", "member", addr)
	}
	for _, a := range ended {
		s.svc.ClusterRunning(actors.PartitionID{Job: a.Job, Partition: a.Partition}, runner.Running{})
	}
	s.assign(ctx)
}

// tick: the owner expires leases and leases what waits; the member
// heartbeats its leases and resends unacknowledged results.
func (s *nodeState) tick(ctx actor.Context) {
	now := time.Now()
	for _, a := range s.leases.Expire(now) {
		s.m.leases.WithLabelValues("expired").Inc()
		slog.Warn("cluster: lease expired; the partition waits again", "lease", a.ID, "job", a.Job, "partition", a.Partition, "member", a.Member)
		s.svc.ClusterRunning(actors.PartitionID{Job: a.Job, Partition: a.Partition}, runner.Running{})
		s.suspect(a.Member)
	}
	s.assign(ctx)
	s.liveness(ctx, now)
	byOwner := map[string][]string{}
	for id, r := range s.running {
		byOwner[r.lease.Owner] = append(byOwner[r.lease.Owner], id)
		if r.result != nil {
			if now.Sub(r.sentAt) > s.n.opt.ResultRetention {
				slog.Warn("cluster: result never acknowledged; dropped", "lease", id, "owner", r.lease.Owner)
				delete(s.running, id)
				continue
			}
			if now.Sub(r.lastAt) >= s.n.opt.Heartbeat {
				s.sendResult(ctx, r)
			}
		}
	}
	for owner, ids := range byOwner {
		sort.Strings(ids)
		ctx.Request(pidOf(owner), &cuzkv1.ClusterHeartbeat{Member: s.self(), LeaseIds: ids})
	}
	if err := s.leases.Check(); err != nil {
		slog.Error("cluster: lease table invariant broken", "err", err)
	}
}

// distribute takes over a job its service recorded.
func (s *nodeState) distribute(ctx actor.Context, sub runner.Submission) error {
	if _, ok := s.jobs[sub.ID]; ok {
		return fmt.Errorf("job %s: distributed already", sub.ID)
	}
	pls, err := s.st.Placements(sub.ID)
	if err != nil {
		return err
	}
	var adopt []Lease
	for _, pl := range pls {
		if !pl.Proved {
			adopt = append(adopt, Lease{ID: pl.Lease, Partition: pl.Index, Member: pl.Member})
		}
	}
	if err := s.leases.AddJob(sub.ID, sub.Partitions, sub.Pending, adopt, time.Now()); err != nil {
		return err
	}
	s.jobs[sub.ID] = sub
	for _, a := range s.leases.Live() {
		if a.Job == sub.ID {
			s.svc.ClusterRunning(actors.PartitionID{Job: a.Job, Partition: a.Partition},
				runner.Running{Stage: "leased", Device: -1, Worker: -1, Member: a.Member})
		}
	}
	if s.leases.Done(sub.ID) {
		s.finish(sub.ID)
		return nil
	}
	s.assign(ctx)
	return nil
}

// assign leases waiting partitions: each lease is recorded (synced) before
// it is sent, so that an owner that restarts knows whose result to wait
// for.
func (s *nodeState) assign(ctx actor.Context) {
	for _, a := range s.leases.Assign(time.Now()) {
		sub := s.jobs[a.Job]
		p := actors.PartitionID{Job: a.Job, Partition: a.Partition}
		err := s.st.SetPlacement(store.Placement{Job: a.Job, Index: a.Partition, Lease: a.ID, Member: a.Member, Device: -1, Worker: -1})
		if err == nil {
			_, err = s.st.StartAttempt(a.Job, a.Partition)
		}
		if err != nil {
			slog.Error("cluster: record a lease", "lease", a.ID, "job", a.Job, "partition", a.Partition, "err", err)
			s.failLease(a.ID, err.Error())
			continue
		}
		l := &cuzkv1.ClusterLease{LeaseId: a.ID, JobId: a.Job, Partition: int32(a.Partition),
			Owner: s.self(), Circuit: sub.Keys.Circuit, Target: int64(sub.Target), KeyHash: sub.Keys.Hash, Seed: sub.Seed,
			NumPartitions: int32(sub.Partitions), Priority: int32(sub.Priority)}
		if len(sub.Witnesses) > 0 {
			// A job of witness files: the member has the key set under its
			// own --keys by the same name (the hash says whether it is the
			// same), and gets the partition's witness with the lease.
			w, err := sub.Witnesses[a.Partition].Read()
			if err != nil {
				slog.Error("cluster: read a partition's witness for its lease", "lease", a.ID, "job", a.Job, "partition", a.Partition, "err", err)
				s.failLease(a.ID, err.Error())
				continue
			}
			l.KeySet, l.Witness = filepath.Base(sub.Keys.Dir), w
		}
		s.m.leases.WithLabelValues("issued").Inc()
		s.svc.ClusterRunning(p, runner.Running{Stage: "leased", Device: -1, Worker: -1, Member: a.Member})
		ctx.Request(pidOf(a.Member), l)
	}
}

// failLease ends a live lease that failed; a partition that failed
// MaxAttempts times is recorded failed for good.
func (s *nodeState) failLease(id, why string) {
	live := s.leases.Live()
	var a *Lease
	for i := range live {
		if live[i].ID == id {
			a = &live[i]
		}
	}
	if a == nil {
		return
	}
	p := actors.PartitionID{Job: a.Job, Partition: a.Partition}
	s.svc.ClusterRunning(p, runner.Running{})
	if !s.leases.Failed(id) {
		return
	}
	if err := s.svc.ClusterFailed(p, why); err != nil {
		slog.Error("cluster: record a partition failed", "partition", p, "err", err)
	}
	if s.leases.Done(a.Job) {
		s.finish(a.Job)
	}
}

// result takes a partition's outcome from the member that ran it.
func (s *nodeState) result(ctx actor.Context, r *cuzkv1.ClusterResult) *cuzkv1.ClusterResultAck {
	ack := &cuzkv1.ClusterResultAck{LeaseId: r.LeaseId}
	if r.Error != "" {
		s.m.leases.WithLabelValues("failed").Inc()
		slog.Warn("cluster: a member could not prove its lease", "lease", r.LeaseId, "member", r.Member, "err", r.Error)
		s.failLease(r.LeaseId, fmt.Sprintf("on %s: %s", r.Member, r.Error))
		s.assign(ctx)
		ack.Reason = "failure noted"
		return ack
	}
	p := actors.PartitionID{Job: r.JobId, Partition: int(r.Partition)}
	if err := s.leases.Accept(r.LeaseId, r.JobId, int(r.Partition)); errors.Is(err, ErrRecorded) {
		ack.Recorded = true // sent again before our acknowledgement arrived
		return ack
	} else if err != nil {
		s.m.results.WithLabelValues("dropped").Inc()
		slog.Info("cluster: result dropped", "lease", r.LeaseId, "member", r.Member, "reason", err)
		ack.Reason = err.Error()
		return ack
	}
	where := runner.Running{Stage: "done", Device: int(r.Device), Worker: int(r.Worker), Member: r.Member}
	timings := prover.Timings{}
	for stage, us := range r.StageUs {
		timings[stage] = time.Duration(us) * time.Microsecond
	}
	err := s.svc.ClusterProved(p, r.Proof, r.Public, timings, where)
	switch {
	case errors.Is(err, runner.ErrDuplicate):
		s.m.results.WithLabelValues("dropped").Inc()
		ack.Reason = err.Error()
	case err != nil:
		// Not recorded: the member sends it again.
		slog.Error("cluster: record a proof", "partition", p, "err", err)
		ack.Reason = "not recorded: " + err.Error()
		return ack
	default:
		s.m.results.WithLabelValues("recorded").Inc()
		ack.Recorded = true
		s.trace(r)
		pl := store.Placement{Job: p.Job, Index: p.Partition, Lease: r.LeaseId, Member: r.Member,
			Device: int(r.Device), Worker: int(r.Worker), Proved: true}
		if err := s.st.SetPlacement(pl); err != nil {
			slog.Error("cluster: record where a partition was proved", "partition", p, "err", err)
		}
	}
	revoke, done := s.leases.Proved(p.Job, p.Partition, r.LeaseId)
	s.revoke(ctx, revoke)
	if done {
		s.finish(p.Job)
	}
	s.assign(ctx)
	return ack
}

// revoke tells the members of leases that their work is no longer wanted.
func (s *nodeState) revoke(ctx actor.Context, leases []Lease) {
	by := map[string][]string{}
	for _, a := range leases {
		by[a.Member] = append(by[a.Member], a.ID)
	}
	s.m.leases.WithLabelValues("revoked").Add(float64(len(leases)))
	for member, ids := range by {
		ctx.Send(pidOf(member), &cuzkv1.ClusterHeartbeatReply{Revoked: ids})
	}
}

// finish ends a job whose partitions are all proved or failed for good.
func (s *nodeState) finish(id string) {
	failed := s.leases.Outcome(id)
	s.leases.Remove(id)
	delete(s.jobs, id)
	why := ""
	if failed > 0 {
		why = fmt.Sprintf("%d partitions failed", failed)
	}
	s.svc.ClusterJobDone(id, why)
}

// cancel stops a distributed job: its leases are revoked, its partitions
// not proved recorded cancelled.
func (s *nodeState) cancel(ctx actor.Context, id string) error {
	if _, ok := s.jobs[id]; !ok {
		return fmt.Errorf("job %s: %w", id, ErrUnknownJob)
	}
	revoke, unproved := s.leases.Remove(id)
	delete(s.jobs, id)
	s.revoke(ctx, revoke)
	var errs []error
	for _, p := range unproved {
		pid := actors.PartitionID{Job: id, Partition: p}
		s.svc.ClusterRunning(pid, runner.Running{})
		if err := s.svc.ClusterCancelled(pid); err != nil && !errors.Is(err, store.ErrAlreadyProved) {
			errs = append(errs, err)
		}
	}
	s.svc.ClusterJobDone(id, "job cancelled")
	return errors.Join(errs...)
}

func (s *nodeState) status() Status {
	st := Status{Address: s.self(), Live: s.leases.Live()}
	for addr := range s.members {
		if !s.asked[addr] {
			st.Members = append(st.Members, addr)
		}
	}
	sort.Strings(st.Members)
	for id, r := range s.running {
		st.Running = append(st.Running, id)
		if r.result != nil {
			st.Unacked++
		}
	}
	sort.Strings(st.Running)
	return st
}

// take accepts a lease from an owner and starts proving it.
func (s *nodeState) take(ctx actor.Context, l *cuzkv1.ClusterLease) *cuzkv1.ClusterLeaseReply {
	reply := &cuzkv1.ClusterLeaseReply{LeaseId: l.LeaseId}
	if _, ok := s.running[l.LeaseId]; ok {
		reply.Accepted = true // sent twice
		return reply
	}
	if err := checkLease(l); err != nil {
		reply.Error = err.Error()
		return reply
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.running[l.LeaseId] = &leaseRun{lease: l, cancel: cancel}
	self, me := ctx.Self(), s.self()
	go func() {
		res, err := prove(runCtx, s.svc, s.st, s.n.opt.Keys, l)
		res.Member = me
		res.Spans = s.n.takeSpans(leaseJobID(l.LeaseId))
		s.n.system.Root.Send(self, provedMsg{result: res, abandoned: errors.Is(err, runner.ErrClosed)})
	}()
	reply.Accepted = true
	return reply
}

// revoked stops leases their owner no longer wants; a finished one keeps
// sending its result (an expired lease's proof is still taken if it comes
// first).
func (s *nodeState) revoked(ids []string) {
	for _, id := range ids {
		r := s.running[id]
		if r == nil || r.result != nil {
			continue
		}
		// The lease's goroutine (take) stops its job and forgets it once
		// stopped (stopLease).
		r.cancel()
		delete(s.running, id)
		s.m.ran.WithLabelValues("revoked").Inc()
	}
}

func (s *nodeState) sendResult(ctx actor.Context, r *leaseRun) {
	r.lastAt = time.Now()
	ctx.Request(pidOf(r.lease.Owner), r.result)
}

// checkLease refuses a lease that cannot name a partition.
func checkLease(l *cuzkv1.ClusterLease) error {
	switch {
	case l.LeaseId == "" || strings.ContainsAny(l.LeaseId, "/ "):
		return fmt.Errorf("lease id %q", l.LeaseId)
	case l.Owner == "":
		return errors.New("lease without owner")
	case l.NumPartitions < 1 || l.Partition < 0 || l.Partition >= l.NumPartitions:
		return fmt.Errorf("partition %d of %d", l.Partition, l.NumPartitions)
	case l.Circuit == "" || l.KeyHash == "":
		return errors.New("lease without circuit or key hash")
	case l.KeySet == "" && l.Target < 1:
		return fmt.Errorf("constraint target %d", l.Target)
	case l.KeySet != "" && (l.KeySet != filepath.Base(l.KeySet) || l.KeySet == "." || l.KeySet == ".."):
		return fmt.Errorf("key set %q: want one directory name", l.KeySet)
	case l.KeySet != "" && len(l.Witness) == 0:
		return fmt.Errorf("lease of key set %s without its witness", l.KeySet)
	}
	return nil
}

// gauges sets the figures that are states, not counts.
func (s *nodeState) gauges() {
	s.m.members.Set(float64(len(s.leases.Members())))
	s.m.live.Set(float64(len(s.leases.live)))
}

// trace writes the stages of a recorded proof on its member's device.
func (s *nodeState) trace(r *cuzkv1.ClusterResult) {
	t := s.n.opt.Trace
	if t == nil {
		return
	}
	p := fmt.Sprintf("%s/%d", r.JobId, r.Partition)
	for _, sp := range r.Spans {
		ts := time.Unix(0, sp.StartUnixNs).Sub(s.n.began)
		t.Span(fmt.Sprintf("member %s device %d", r.Member, sp.Device), fmt.Sprintf("worker %d", sp.Worker), sp.Stage,
			ts, time.Duration(sp.TookNs), "partition", p, "lease", r.LeaseId)
	}
}

// liveness asks every member for a hello each heartbeat. A member silent
// for a lease TTL gets no more leases until it answers (its provider may
// still list it: cut off from this host only). It also asks the addresses
// where members left, now and then (probeGone); and when every other
// member it lists has been silent for three TTLs, this member is cut off:
// excluded (see exclusion.go for the ways a member finds out that it is
// out).
func (s *nodeState) liveness(ctx actor.Context, now time.Time) {
	ttl := s.n.opt.LeaseTTL
	others, silent := 0, 0
	for addr := range s.members {
		ctx.Request(pidOf(addr), s.helloMsg())
		if addr == s.self() {
			continue
		}
		others++
		quiet := now.Sub(s.heard[addr])
		if quiet > ttl && !s.asked[addr] {
			slog.Warn("cluster: member silent; no leases until it answers", "member", addr, "silent", quiet.Round(time.Millisecond))
			s.suspect(addr)
		}
		if quiet > 3*ttl {
			silent++
		}
	}
	s.probeGone(func(addr string) { ctx.Request(pidOf(addr), s.helloMsg()) }, now)
	if others > 0 && silent == others && now.Sub(s.since) > 3*ttl {
		s.n.exclude(fmt.Errorf("cluster %s: no other member (of %d listed) has answered for %s: this member was cut off and the cluster no longer takes it; restart it to rejoin",
			s.n.opt.Name, others, 3*ttl))
	}
}
