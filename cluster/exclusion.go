package cluster

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
)

// How a member finds out that the cluster no longer takes it.
//
// protoactor blocks the id of a member it saw leave, for good: its provider
// never lists that id again. A member frozen (SIGSTOP, a stalled host) or
// cut off past the providers' detection time is therefore out of the
// cluster once the others have seen it leave, though its process and its
// state carry on. It must find out, and exit, so that its daemon rejoins
// under a new id. It cannot count on protoactor to tell it: this version
// enforces the block nowhere on delivery (its endpoint reader answers a
// blocked member's connect with Blocked set and reads on; the writer
// ignores the flag), so its hellos still reach the others and their
// answers still reach it. Hence the answers say so:
//
//  1. a member refuses the hello of an id it saw leave (hello); a member
//     refused by half the others or more is out (refused). Only refusals
//     from members that list another member count: a member that lists
//     none may be the one cut off, refusing members that never saw it go;
//  2. a member that lists no other member (its own provider saw them all
//     leave, in a long cut) still asks the addresses where members left
//     for a hello, once a TTL (liveness); one that answers under an id it
//     saw leave is alive and lost to it for good: it is the one that was
//     cut off (answered). Once the cut heals, either refusals (rule 1) or
//     answers (this rule) reach it;
//  3. still cut off, it hears nothing: every other member it lists has been
//     silent for three TTLs (liveness).

// maxGone bounds the addresses where members left that a lone member asks
// for a hello.
const maxGone = 64

func (s *nodeState) helloMsg() *cuzkv1.ClusterHello {
	return &cuzkv1.ClusterHello{From: s.self(), MemberId: s.n.system.ID}
}

// others is how many members other than this one the provider lists.
func (s *nodeState) others() int {
	n := 0
	for addr := range s.members {
		if addr != s.self() {
			n++
		}
	}
	return n
}

// hello answers a member's hello with what this member runs, or refuses a
// member id it saw leave.
func (s *nodeState) hello(m *cuzkv1.ClusterHello) proto.Message {
	if m.MemberId != "" && s.left[m.MemberId] {
		return &cuzkv1.ClusterHelloRefused{Member: s.self(), MemberId: m.MemberId, Others: int32(s.others())}
	}
	return &cuzkv1.ClusterMemberInfo{Member: s.self(), MemberId: s.n.system.ID, Slots: int32(s.n.opt.Slots)}
}

// refused counts a refusal of this member's hello; refused by half the
// members it knows of or more (those its provider lists and those that
// refused it), counting only refusers that list another member, it is out.
func (s *nodeState) refused(m *cuzkv1.ClusterHelloRefused) {
	if m.MemberId != s.n.system.ID || m.Member == s.self() {
		return // an answer to an earlier run at this address
	}
	s.refusedBy[m.Member] = int(m.Others)
	peers, refusers := s.others(), 0
	for addr, others := range s.refusedBy {
		if _, up := s.members[addr]; !up {
			peers++
		}
		if others > 0 {
			refusers++
		}
	}
	if refusers > 0 && 2*refusers >= peers {
		s.n.exclude(fmt.Errorf("cluster %s: %d of the %d other members saw this member leave and refuse it (protoactor never takes a member id back): restart it to rejoin as a new member",
			s.n.opt.Name, refusers, peers))
	}
}

// answered: a member that lists no other, answered under an id it saw
// leave, was cut off from a cluster that carries on without it.
func (s *nodeState) answered(m *cuzkv1.ClusterMemberInfo) {
	if m.MemberId == "" || !s.left[m.MemberId] || s.others() > 0 {
		return
	}
	s.n.exclude(fmt.Errorf("cluster %s: member %s answers under the id this member saw leave, and this member lists no other: it was cut off, and protoactor never takes a member id back: restart it to rejoin as a new member",
		s.n.opt.Name, m.Member))
}

// probeGone asks the addresses where members left for a hello, once a TTL,
// while this member lists no other (see rule 2 above).
func (s *nodeState) probeGone(send func(addr string), now time.Time) {
	if s.others() > 0 || now.Sub(s.probed) < s.n.opt.LeaseTTL {
		return
	}
	s.probed = now
	for addr := range s.gone {
		send(addr)
	}
}

// wentAway records that the member at addr left.
func (s *nodeState) wentAway(addr string, now time.Time) {
	if addr == s.self() {
		return
	}
	if _, known := s.gone[addr]; !known && len(s.gone) >= maxGone {
		oldest := ""
		for a, at := range s.gone {
			if oldest == "" || at.Before(s.gone[oldest]) {
				oldest = a
			}
		}
		delete(s.gone, oldest)
	}
	s.gone[addr] = now
}
