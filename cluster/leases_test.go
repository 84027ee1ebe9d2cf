package cluster

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Unix(1000, 0)

func mustCheck(t *testing.T, l *Leases) {
	t.Helper()
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
}

// A job spreads over every member's free slots, one lease each in turn.
func TestAssignSpreadsOverMembers(t *testing.T) {
	l := NewLeases(time.Second, 3, "e")
	l.MemberUp("a", 2)
	l.MemberUp("b", 2)
	l.MemberUp("c", 2)
	if err := l.AddJob("j", 30, nil, nil, t0); err != nil {
		t.Fatal(err)
	}
	got := l.Assign(t0)
	if len(got) != 6 {
		t.Fatalf("%d leases for 6 slots", len(got))
	}
	per := map[string]int{}
	for _, a := range got {
		per[a.Member]++
	}
	for _, m := range []string{"a", "b", "c"} {
		if per[m] != 2 {
			t.Errorf("member %s got %d leases, want 2: %v", m, per[m], per)
		}
	}
	if more := l.Assign(t0); len(more) != 0 {
		t.Errorf("%d leases past the slots", len(more))
	}
	mustCheck(t, l)
}

// A member that dies (no heartbeat) loses its leases at their expiry; the
// partitions go elsewhere; a proof from the dead member that comes after
// the partition was proved elsewhere is refused, not recorded twice.
func TestExpiryRequeuesAndLateProofIsDropped(t *testing.T) {
	l := NewLeases(time.Second, 3, "e")
	l.MemberUp("a", 1)
	l.MemberUp("b", 1)
	if err := l.AddJob("j", 2, nil, nil, t0); err != nil {
		t.Fatal(err)
	}
	first := l.Assign(t0)
	var onB Lease
	for _, a := range first {
		if a.Member == "b" {
			onB = a
		}
	}
	// a keeps heartbeating; b is silent.
	for _, a := range first {
		if a.Member == "a" {
			l.Heartbeat("a", []string{a.ID}, t0.Add(900*time.Millisecond))
		}
	}
	expired := l.Expire(t0.Add(1100 * time.Millisecond))
	if len(expired) != 1 || expired[0].ID != onB.ID {
		t.Fatalf("expired %v, want b's lease %s", expired, onB.ID)
	}
	mustCheck(t, l)
	// a finishes its first partition and takes b's.
	for _, a := range first {
		if a.Member == "a" {
			if err := l.Accept(a.ID, "j", a.Partition); err != nil {
				t.Fatal(err)
			}
			l.Proved("j", a.Partition, a.ID)
		}
	}
	again := l.Assign(t0.Add(1200 * time.Millisecond))
	if len(again) != 1 || again[0].Member != "a" || again[0].Partition != onB.Partition {
		t.Fatalf("re-leased %v, want b's partition %d on a", again, onB.Partition)
	}
	if err := l.Accept(again[0].ID, "j", onB.Partition); err != nil {
		t.Fatal(err)
	}
	if _, done := l.Proved("j", onB.Partition, again[0].ID); !done {
		t.Fatal("job not done with both partitions proved")
	}
	if err := l.Accept(onB.ID, "j", onB.Partition); !errors.Is(err, ErrProved) {
		t.Fatalf("late proof from the expired lease: %v, want ErrProved", err)
	}
	if err := l.Accept(again[0].ID, "j", onB.Partition); !errors.Is(err, ErrRecorded) {
		t.Fatalf("the recorded proof sent again: %v, want ErrRecorded", err)
	}
	// Its heartbeat is answered with a revocation.
	if r := l.Heartbeat("b", []string{onB.ID}, t0.Add(2*time.Second)); len(r) != 1 || r[0] != onB.ID {
		t.Fatalf("revoked %v, want %s", r, onB.ID)
	}
	mustCheck(t, l)
}

// An expired lease's proof that comes before any other is taken, and the
// partition's new lease is revoked.
func TestExpiredLeaseProofFirstWins(t *testing.T) {
	l := NewLeases(time.Second, 3, "e")
	l.MemberUp("a", 1)
	if err := l.AddJob("j", 1, nil, nil, t0); err != nil {
		t.Fatal(err)
	}
	old := l.Assign(t0)[0]
	l.Expire(t0.Add(2 * time.Second))
	fresh := l.Assign(t0.Add(2 * time.Second))[0]
	if fresh.ID == old.ID {
		t.Fatal("the new lease reuses the old id")
	}
	if err := l.Accept(old.ID, "j", 0); err != nil {
		t.Fatalf("proof of the expired lease refused: %v", err)
	}
	revoke, done := l.Proved("j", 0, old.ID)
	if !done || len(revoke) != 1 || revoke[0].ID != fresh.ID {
		t.Fatalf("revoke %v done %v, want the new lease revoked and the job done", revoke, done)
	}
	mustCheck(t, l)
}

// A restarted owner adopts the leases it recorded: results of those leases
// are taken, results of leases it never recorded are dropped.
func TestRestartAdoptsRecordedLeases(t *testing.T) {
	l := NewLeases(time.Second, 3, "new")
	l.MemberUp("a", 4)
	adopt := []Lease{{ID: "old-1", Partition: 1, Member: "a"}, {ID: "old-9", Partition: 0, Member: "a"}}
	// Partition 0 was proved before the restart: only 1 and 2 are pending.
	if err := l.AddJob("j", 3, []int{1, 2}, adopt, t0); err != nil {
		t.Fatal(err)
	}
	got := l.Assign(t0)
	if len(got) != 1 || got[0].Partition != 2 {
		t.Fatalf("assigned %v, want only partition 2 (1 is adopted)", got)
	}
	if err := l.Accept("old-1", "j", 1); err != nil {
		t.Fatalf("adopted lease's proof refused: %v", err)
	}
	if err := l.Accept("old-0", "j", 1); !errors.Is(err, ErrUnknownLease) {
		t.Fatalf("unrecorded lease: %v, want ErrUnknownLease", err)
	}
	if err := l.Accept("old-9", "j", 0); !errors.Is(err, ErrProved) {
		t.Fatalf("proof of a partition proved before the restart: %v, want ErrProved", err)
	}
	mustCheck(t, l)
}

// A partition whose leases fail MaxAttempts times fails for good and the
// job ends.
func TestFailuresGiveUp(t *testing.T) {
	l := NewLeases(time.Second, 2, "e")
	l.MemberUp("a", 1)
	if err := l.AddJob("j", 1, nil, nil, t0); err != nil {
		t.Fatal(err)
	}
	if l.Failed(l.Assign(t0)[0].ID) {
		t.Fatal("gave up after one failure of two allowed")
	}
	if !l.Failed(l.Assign(t0)[0].ID) {
		t.Fatal("did not give up after two failures")
	}
	if !l.Done("j") || l.Outcome("j") != 1 {
		t.Fatalf("done %v failed %d, want done with 1 failed", l.Done("j"), l.Outcome("j"))
	}
	if more := l.Assign(t0); len(more) != 0 {
		t.Fatalf("a failed partition leased again: %v", more)
	}
	mustCheck(t, l)
}

// Random members dying, heartbeats, proofs (some late, some twice) never
// break the table's invariants, and every partition is proved exactly once.
func TestRandomFaultsProveEachPartitionOnce(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		l := NewLeases(time.Second, 1000, "e")
		members := []string{"a", "b", "c"}
		for _, m := range members {
			l.MemberUp(m, 1+r.IntN(3))
		}
		const n = 30
		if err := l.AddJob("j", n, nil, nil, t0); err != nil {
			t.Fatal(err)
		}
		proved := map[int]int{}
		var issued []Lease
		now := t0
		for step := 0; step < 5000 && !l.Done("j"); step++ {
			now = now.Add(time.Duration(r.IntN(300)) * time.Millisecond)
			issued = append(issued, l.Assign(now)...)
			switch r.IntN(6) {
			case 0: // a member dies or comes back
				m := members[r.IntN(len(members))]
				if r.IntN(2) == 0 {
					l.MemberDown(m)
				} else {
					l.MemberUp(m, 1+r.IntN(3))
				}
			case 1:
				l.Expire(now)
			case 2: // some member heartbeats all it holds
				m := members[r.IntN(len(members))]
				var ids []string
				for _, a := range l.Live() {
					if a.Member == m {
						ids = append(ids, a.ID)
					}
				}
				l.Heartbeat(m, ids, now)
			default: // a proof arrives from any lease ever issued
				if len(issued) == 0 {
					continue
				}
				a := issued[r.IntN(len(issued))]
				if l.Accept(a.ID, a.Job, a.Partition) == nil {
					proved[a.Partition]++
					l.Proved(a.Job, a.Partition, a.ID)
				}
			}
			if err := l.Check(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
		}
		if !l.Done("j") {
			t.Fatalf("seed %d: job not done", seed)
		}
		for p := range n {
			if proved[p] != 1 {
				t.Fatalf("seed %d: partition %d proved %d times", seed, p, proved[p])
			}
		}
	}
}
