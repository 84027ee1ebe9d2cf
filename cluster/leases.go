package cluster

import (
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"time"
)

// Errors of the lease table; a result refused with one is dropped, never
// recorded.
var (
	// ErrUnknownLease: the result's lease was not issued for that partition
	// by this owner (an owner restarted since, or a stray message).
	ErrUnknownLease = errors.New("unknown lease")
	// ErrProved: the partition was proved already, by another lease.
	ErrProved = errors.New("partition proved already")
	// ErrUnknownJob: the owner is not proving that job (it ended or was
	// cancelled).
	ErrUnknownJob = errors.New("job not distributed by this owner")
	// ErrRecorded: the proof of that lease is recorded already: its
	// member sent it again before the acknowledgement reached it.
	ErrRecorded = errors.New("proof of this lease recorded already")
)

// Lease is one partition of an owned job handed to one member.
type Lease struct {
	ID        string
	Job       string
	Partition int
	Member    string
	Expires   time.Time
}

// Leases is the owner's table of its jobs' partitions: which wait, which
// are leased to which member until when, which are proved. It is a pure
// state machine, as the actors are: messages and the time go in, decisions
// come out, and the caller does the I/O (records placements and proofs,
// sends leases and revocations). The node drives it on the wall clock, the
// simulator on its virtual clock.
//
// Invariants (check): a partition is queued, leased (live) or proved, never
// two of these; a live lease is held by one member and counted in that
// member's load; a proved partition is never leased again.
type Leases struct {
	ttl         time.Duration
	maxAttempts int
	epoch       string
	seq         uint64
	// cursor is where the search for the freest member starts: it moves
	// past each member picked, and starts where the epoch's hash says, so
	// that owners do not all break ties toward the same member.
	cursor int

	jobs    map[string]*ownedJob
	order   []string // job ids, oldest first: partitions are leased in this order
	members map[string]*memberLoad
	live    map[string]*Lease // by lease id
}

type ownedJob struct {
	id        string
	queue     []int
	proved    map[int]bool
	provedBy  map[int]string // the lease whose proof was recorded
	failures  map[int]int
	issued    map[int]map[string]bool // every lease id issued for a partition
	leased    map[int]string          // the live lease of a partition
	remaining int                     // partitions neither proved nor failed for good
	failed    int
}

type memberLoad struct {
	slots int
	live  int
	up    bool
}

// NewLeases returns an empty table. ttl is how long a lease lives without a
// heartbeat; a partition whose leases failed maxAttempts times fails for
// good. epoch makes this owner's lease ids unique over its restarts.
func NewLeases(ttl time.Duration, maxAttempts int, epoch string) *Leases {
	h := fnv.New32a()
	h.Write([]byte(epoch))
	return &Leases{ttl: ttl, maxAttempts: max(maxAttempts, 1), epoch: epoch, cursor: int(h.Sum32() % (1 << 20)),
		jobs: map[string]*ownedJob{}, members: map[string]*memberLoad{}, live: map[string]*Lease{}}
}

// AddJob starts tracking job id with its partitions pending (all n when
// pending is nil). adopt are leases a previous run of this owner issued and
// recorded (placements of partitions still pending): they are live again
// until now+ttl, so a member still proving one is not undercut, and their
// results are accepted.
func (l *Leases) AddJob(id string, n int, pending []int, adopt []Lease, now time.Time) error {
	if _, ok := l.jobs[id]; ok {
		return fmt.Errorf("job %s: distributed already", id)
	}
	if pending == nil {
		pending = make([]int, n)
		for i := range pending {
			pending[i] = i
		}
	}
	j := &ownedJob{id: id, proved: map[int]bool{}, provedBy: map[int]string{}, failures: map[int]int{}, issued: map[int]map[string]bool{},
		leased: map[int]string{}, remaining: len(pending)}
	isPending := map[int]bool{}
	for _, p := range pending {
		if p < 0 || p >= n || isPending[p] {
			return fmt.Errorf("job %s: pending partition %d of %d (or listed twice)", id, p, n)
		}
		isPending[p] = true
	}
	for i := range n {
		if !isPending[i] {
			j.proved[i] = true // final before this run: proved, failed or cancelled
		}
	}
	for _, a := range adopt {
		if !isPending[a.Partition] || j.leased[a.Partition] != "" || a.ID == "" || a.Member == "" {
			continue
		}
		a.Job, a.Expires = id, now.Add(l.ttl)
		l.take(j, a)
	}
	for _, p := range pending {
		if j.leased[p] == "" {
			j.queue = append(j.queue, p)
		}
	}
	l.jobs[id] = j
	l.order = append(l.order, id)
	return nil
}

// take makes lease a live.
func (l *Leases) take(j *ownedJob, a Lease) {
	lease := a
	l.live[a.ID] = &lease
	j.leased[a.Partition] = a.ID
	if j.issued[a.Partition] == nil {
		j.issued[a.Partition] = map[string]bool{}
	}
	j.issued[a.Partition][a.ID] = true
	l.member(a.Member).live++
}

func (l *Leases) member(addr string) *memberLoad {
	m := l.members[addr]
	if m == nil {
		m = &memberLoad{}
		l.members[addr] = m
	}
	return m
}

// MemberUp says member addr runs slots leases at once.
func (l *Leases) MemberUp(addr string, slots int) {
	m := l.member(addr)
	m.slots, m.up = max(slots, 0), true
}

// MemberDown says member addr left the cluster: its live leases end now and
// their partitions wait again. It returns those leases.
func (l *Leases) MemberDown(addr string) []Lease {
	if m := l.members[addr]; m != nil {
		m.up = false
	}
	var ended []Lease
	for _, id := range l.liveIDs() {
		if a := l.live[id]; a.Member == addr {
			ended = append(ended, l.requeue(a))
		}
	}
	return ended
}

// Members returns the members known up, sorted.
func (l *Leases) Members() []string {
	var out []string
	for addr, m := range l.members {
		if m.up {
			out = append(out, addr)
		}
	}
	sort.Strings(out)
	return out
}

// requeue ends live lease a and queues its partition again (at the front:
// it waited longest). The lease stays issued: its result is still taken.
func (l *Leases) requeue(a *Lease) Lease {
	l.drop(a)
	if j := l.jobs[a.Job]; j != nil && !j.proved[a.Partition] {
		j.queue = append([]int{a.Partition}, j.queue...)
	}
	return *a
}

// drop ends live lease a without queuing its partition.
func (l *Leases) drop(a *Lease) {
	delete(l.live, a.ID)
	if j := l.jobs[a.Job]; j != nil && j.leased[a.Partition] == a.ID {
		delete(j.leased, a.Partition)
	}
	if m := l.members[a.Member]; m != nil {
		m.live--
	}
}

// Assign leases waiting partitions to members with free slots, spreading
// them (the member with the most free slots first, one at a time), and
// returns the new leases, to be recorded and sent.
func (l *Leases) Assign(now time.Time) []Lease {
	var out []Lease
	for {
		addr := l.freest()
		if addr == "" {
			return out
		}
		j, p, ok := l.nextWaiting()
		if !ok {
			return out
		}
		l.seq++
		a := Lease{ID: fmt.Sprintf("%s-%d", l.epoch, l.seq), Job: j.id, Partition: p, Member: addr, Expires: now.Add(l.ttl)}
		l.take(j, a)
		out = append(out, a)
	}
}

// freest is the up member with the most free slots (ties: the first from
// the cursor on), or "" when none has one.
func (l *Leases) freest() string {
	members := l.Members()
	best, free, at := "", 0, 0
	for i := range members {
		j := (l.cursor + i) % len(members)
		m := l.members[members[j]]
		if f := m.slots - m.live; f > free {
			best, free, at = members[j], f, j
		}
	}
	if best != "" {
		l.cursor = at + 1
	}
	return best
}

// nextWaiting pops the first waiting partition of the oldest job with one.
func (l *Leases) nextWaiting() (*ownedJob, int, bool) {
	for _, id := range l.order {
		j := l.jobs[id]
		for len(j.queue) > 0 {
			p := j.queue[0]
			j.queue = j.queue[1:]
			if !j.proved[p] && j.leased[p] == "" {
				return j, p, true
			}
		}
	}
	return nil, 0, false
}

// Refused says the member did not take lease id (its keys differ, it is
// stopping): the partition waits again, and the refusal counts as a failed
// attempt.
func (l *Leases) Refused(id string) (gaveUp bool) {
	a := l.live[id]
	if a == nil {
		return false
	}
	return l.fail(a)
}

// fail ends live lease a after a failure: its partition waits again, or
// fails for good after maxAttempts failures.
func (l *Leases) fail(a *Lease) (gaveUp bool) {
	j := l.jobs[a.Job]
	if j == nil {
		l.drop(a)
		return false
	}
	j.failures[a.Partition]++
	if j.failures[a.Partition] >= l.maxAttempts {
		l.drop(a)
		j.proved[a.Partition] = true // final: not leased again
		j.remaining--
		j.failed++
		return true
	}
	l.requeue(a)
	return false
}

// Failed says lease id's member could not prove its partition; see fail.
// It returns whether the partition failed for good, and false for a lease
// that is not live.
func (l *Leases) Failed(id string) (gaveUp bool) {
	return l.Refused(id)
}

// Heartbeat extends the live leases among ids that member holds to now+ttl
// and returns the ids it should stop: those not live (expired, revoked) and
// not awaiting a result that would still be taken.
func (l *Leases) Heartbeat(member string, ids []string, now time.Time) (revoked []string) {
	for _, id := range ids {
		a := l.live[id]
		if a != nil && a.Member == member {
			a.Expires = now.Add(l.ttl)
			continue
		}
		revoked = append(revoked, id)
	}
	return revoked
}

// Expire ends the leases whose time passed: their partitions wait again.
// It returns them.
func (l *Leases) Expire(now time.Time) []Lease {
	var out []Lease
	for _, id := range l.liveIDs() {
		if a := l.live[id]; !now.Before(a.Expires) {
			out = append(out, l.requeue(a))
		}
	}
	return out
}

// Accept says whether the proof of partition p of job, from lease id, is to
// be recorded: the job is distributed here, the partition not proved, and
// the lease was issued for it (live or expired: a proof from an expired
// lease is as good, if it comes first). Nil means record it, then call
// Proved.
func (l *Leases) Accept(id, job string, p int) error {
	j := l.jobs[job]
	switch {
	case j == nil:
		return fmt.Errorf("proof of %s/%d: %w", job, p, ErrUnknownJob)
	case j.proved[p] && j.provedBy[p] == id:
		return fmt.Errorf("proof of %s/%d from lease %s: %w", job, p, id, ErrRecorded)
	case j.proved[p]:
		return fmt.Errorf("proof of %s/%d from lease %s: %w", job, p, id, ErrProved)
	case !j.issued[p][id]:
		return fmt.Errorf("proof of %s/%d from lease %s: %w", job, p, id, ErrUnknownLease)
	}
	return nil
}

// Proved says partition p of job is recorded proved, with the proof of
// lease id. It returns the live leases of that partition to revoke
// (another member still running it) and whether the job has no partition
// left.
func (l *Leases) Proved(job string, p int, id string) (revoke []Lease, done bool) {
	j := l.jobs[job]
	if j == nil || j.proved[p] {
		return nil, false
	}
	j.proved[p], j.provedBy[p] = true, id
	j.remaining--
	for i, q := range j.queue {
		if q == p {
			j.queue = append(j.queue[:i], j.queue[i+1:]...)
			break
		}
	}
	if id := j.leased[p]; id != "" {
		if a := l.live[id]; a != nil {
			l.drop(a)
			revoke = append(revoke, *a)
		}
	}
	return revoke, j.remaining == 0
}

// Outcome is how many partitions of a job failed for good; call it once
// Proved or Failed said the job is done.
func (l *Leases) Outcome(job string) (failed int) {
	if j := l.jobs[job]; j != nil {
		return j.failed
	}
	return 0
}

// Done reports whether job has no partition left to prove.
func (l *Leases) Done(job string) bool {
	j := l.jobs[job]
	return j != nil && j.remaining == 0
}

// Remove forgets job (it ended or was cancelled) and returns its live
// leases, to revoke, and its partitions never proved.
func (l *Leases) Remove(job string) (revoke []Lease, unproved []int) {
	j := l.jobs[job]
	if j == nil {
		return nil, nil
	}
	for _, id := range l.liveIDs() {
		if a := l.live[id]; a.Job == job {
			l.drop(a)
			revoke = append(revoke, *a)
		}
	}
	seen := map[int]bool{}
	for p := range j.proved {
		seen[p] = true
	}
	for _, p := range append(append([]int{}, j.queue...), keys(j.issued)...) {
		if !seen[p] {
			seen[p] = true
			unproved = append(unproved, p)
		}
	}
	sort.Ints(unproved)
	delete(l.jobs, job)
	for i, id := range l.order {
		if id == job {
			l.order = append(l.order[:i], l.order[i+1:]...)
			break
		}
	}
	return revoke, unproved
}

func keys(m map[int]map[string]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Live returns the live leases, sorted by id.
func (l *Leases) Live() []Lease {
	out := make([]Lease, 0, len(l.live))
	for _, id := range l.liveIDs() {
		out = append(out, *l.live[id])
	}
	return out
}

func (l *Leases) liveIDs() []string {
	ids := make([]string, 0, len(l.live))
	for id := range l.live {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Check verifies the table's invariants and returns the first broken one.
func (l *Leases) Check() error {
	load := map[string]int{}
	for id, a := range l.live {
		if a.ID != id {
			return fmt.Errorf("lease %s filed as %s", a.ID, id)
		}
		j := l.jobs[a.Job]
		if j == nil {
			return fmt.Errorf("lease %s of job %s, which is not distributed", id, a.Job)
		}
		if j.proved[a.Partition] {
			return fmt.Errorf("lease %s live for %s/%d, which is final", id, a.Job, a.Partition)
		}
		if j.leased[a.Partition] != id {
			return fmt.Errorf("lease %s live for %s/%d, whose lease is %q", id, a.Job, a.Partition, j.leased[a.Partition])
		}
		load[a.Member]++
	}
	for addr, m := range l.members {
		if m.live != load[addr] {
			return fmt.Errorf("member %s counts %d live leases, holds %d", addr, m.live, load[addr])
		}
	}
	for _, j := range l.jobs {
		queued := map[int]bool{}
		for _, p := range j.queue {
			if j.proved[p] || j.leased[p] != "" || queued[p] {
				return fmt.Errorf("partition %s/%d queued while final, leased or queued", j.id, p)
			}
			queued[p] = true
		}
		for p, id := range j.leased {
			if l.live[id] == nil {
				return fmt.Errorf("partition %s/%d leased by %s, which is not live", j.id, p, id)
			}
		}
	}
	return nil
}
