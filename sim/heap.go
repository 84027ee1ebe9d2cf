package sim

import "time"

// event is one entry of the virtual timeline. Events at the same instant run
// in the order they were scheduled (seq), which is what makes a run
// reproducible: the heap never compares anything that depends on addresses or
// map order.
type event struct {
	at    time.Duration
	seq   uint64
	epoch int // the process incarnation that scheduled it; see Kernel.Crash
	fn    func()
}

// eventHeap is a binary min-heap on (at, seq). It is written out rather than
// built on container/heap because the simulator spends most of its time here
// and the interface calls showed up in profiles.
type eventHeap []event

func (h eventHeap) less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s[n] = event{}
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
