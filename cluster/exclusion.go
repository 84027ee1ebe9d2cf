package cluster

import (
	"fmt"
	"slices"
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
//     for a hello, once a TTL (probeGone); one that answers under an id it
//     saw leave is alive and lost to it for good: it is the one that was
//     cut off (answered). Once the cut heals, either refusals (rule 1) or
//     answers (this rule) reach it;
//  3. still cut off, it hears nothing: every other member it lists has been
//     silent for three TTLs (liveness);
//  4. two members cut off from each other only (a route between two hosts
//     lost, both reaching the rest) see each other leave while the others
//     see nothing. Neither lists the other again, and neither is lone: the
//     owner of a job would never lease to the other, a GPU idle for good.
//     So a member that lists others asks the addresses where members left
//     for a hello too, at intervals doubling from a TTL to 64 TTLs (a dead
//     address costs a failed connect now and then); one that saw it leave
//     refuses it, and rule 5 (or, where the others do not list both, rule
//     1) decides: the one that exits comes back as a new member each
//     lists. Such a refusal, from an address where this member saw a
//     member leave, counts only if half the others it lists or more still
//     list that address (each answer to a hello says what its member
//     lists): a member cut off from everyone, woken with
//     its provider having seen only some of the others leave, would else
//     refuse, and exclude, a member that rightly saw it go;
//  5. of such a pair one exit is enough: once either comes back under a new
//     id, each lists the other again. A refusal from an address where this
//     member saw a member leave, while half the others it lists or more
//     list both that address and this member, is a pair's: the member at
//     the lower address exits on it, whatever the count (with four members
//     or more, one refusal is never half), and the one at the higher
//     address does not count it. Where only one of the two saw the other
//     leave (this member still lists the refuser), the refused one exits
//     on a refusal from a member the others list, while they list it too:
//     the refuser will never take it back.

// maxGone bounds the addresses where members left that a member asks for a
// hello.
const maxGone = 64

// maxProbeEvery bounds, in TTLs, the interval at which a member that lists
// others asks an address where a member left for a hello (rule 4).
const maxProbeEvery = 64

// goneAddr is an address where a member left: when, when it was last
// asked for a hello, and how often it is asked while this member lists
// others.
type goneAddr struct {
	left, asked time.Time
	every       time.Duration
}

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

// hello answers a member's hello with what this member runs and the other
// members it lists, or refuses a member id it saw leave.
func (s *nodeState) hello(m *cuzkv1.ClusterHello) proto.Message {
	if m.MemberId != "" && s.left[m.MemberId] {
		return &cuzkv1.ClusterHelloRefused{Member: s.self(), MemberId: m.MemberId, Others: int32(s.others())}
	}
	lists := make([]string, 0, len(s.members))
	for addr := range s.members {
		if addr != s.self() {
			lists = append(lists, addr)
		}
	}
	slices.Sort(lists)
	return &cuzkv1.ClusterMemberInfo{Member: s.self(), MemberId: s.n.system.ID, Slots: int32(s.n.opt.Slots), Lists: lists}
}

// refused counts a refusal of this member's hello; refused by half the
// members it knows of or more (those its provider lists and those that
// refused it), counting only refusers that list another member, it is out.
// A refuser at an address where this member saw a member leave counts only
// while this member lists no other, or while half the others it lists or
// more still list that address (vouched): else it is the one cut off, from
// the others too, and its refusal of members that saw it go says nothing.
// Where the others list both the refuser and this member, that refusal
// decides alone (rule 5): from an address where this member saw a member
// leave (a pair cut off from each other), this member exits if its address
// is the lower; from a member it lists, it exits.
func (s *nodeState) refused(m *cuzkv1.ClusterHelloRefused) {
	if m.MemberId != s.n.system.ID || m.Member == s.self() {
		return // an answer to an earlier run at this address
	}
	s.refusedBy[m.Member] = int(m.Others)
	peers, refusers := s.others(), 0
	lone := peers == 0
	// Whether the others list this member too: then a refusal decides alone.
	selfVouched := !lone && s.vouched(s.self())
	for addr, others := range s.refusedBy {
		if _, up := s.members[addr]; !up {
			if !lone && !s.vouched(addr) {
				continue
			}
			if selfVouched {
				if s.self() < addr {
					s.n.exclude(fmt.Errorf("cluster %s: cut off from member %s only (each saw the other leave, the others list both): this member, at the lower address, leaves (protoactor never takes a member id back): restart it to rejoin as a new member",
						s.n.opt.Name, addr))
					return
				}
				continue // the pair's other member leaves (rule 5)
			}
			peers++
		} else if selfVouched && others > 0 && s.vouched(addr) {
			s.n.exclude(fmt.Errorf("cluster %s: member %s saw this member leave and refuses it, and the others list both (protoactor never takes a member id back): restart it to rejoin as a new member",
				s.n.opt.Name, addr))
			return
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

// vouched reports whether half the other members this member lists or more
// said, in their last answer, that they list addr; members that refused
// this member are left out (their last answer predates the refusal).
func (s *nodeState) vouched(addr string) bool {
	others, listing := 0, 0
	for m := range s.members {
		if m == s.self() {
			continue
		}
		if _, refused := s.refusedBy[m]; refused {
			continue
		}
		others++
		if slices.Contains(s.lists[m], addr) {
			listing++
		}
	}
	return others > 0 && 2*listing >= others
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

// probeGone asks the addresses where members left for a hello: each once a
// TTL while this member lists no other (rule 2), else at intervals doubling
// from a TTL up to maxProbeEvery TTLs (rule 4).
func (s *nodeState) probeGone(send func(addr string), now time.Time) {
	ttl := s.n.opt.LeaseTTL
	lone := s.others() == 0
	for addr, g := range s.gone {
		since := now.Sub(g.asked)
		if since < g.every && (!lone || since < ttl) {
			continue
		}
		send(addr)
		g.asked = now
		if !lone {
			g.every = min(2*g.every, maxProbeEvery*ttl)
		}
	}
}

// wentAway records that the member at addr left.
func (s *nodeState) wentAway(addr string, now time.Time) {
	if addr == s.self() {
		return
	}
	if _, known := s.gone[addr]; !known && len(s.gone) >= maxGone {
		oldest := ""
		for a, g := range s.gone {
			if oldest == "" || g.left.Before(s.gone[oldest].left) {
				oldest = a
			}
		}
		s.dropGone(oldest)
	}
	s.gone[addr] = &goneAddr{left: now, asked: now, every: s.n.opt.LeaseTTL}
	s.n.probed.Store(addr, true)
}

// dropGone stops asking addr for hellos, and logging failed connects to it.
func (s *nodeState) dropGone(addr string) {
	delete(s.gone, addr)
	s.n.probed.Delete(addr)
}
