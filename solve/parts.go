package solve

import (
	"os"
	"runtime"
	"slices"
)

// A circuit of bits solves level by level on one core when its levels are
// narrow: porep-sha's are a few hundred ops wide, below parallelLevel, so
// its solve ran on one core however many it had. But its challenges are
// independent: each reads the replica id's bits and its own inputs, never
// another challenge's wires. The program, or where it does not split each
// long sequential segment, is therefore split into parts that share no
// wire: a head (its first few levels, the bits every part reads), then the
// parts, packed into one group per core and solved at once, each group in
// level order.

// splitMin is the fewest ops of a sequential segment worth splitting.
const splitMin = 1 << 14

// splitLargest is how much of a segment its largest part may hold for a
// split to be worth it.
const splitLargest = 0.75

// splitSegments splits the program into independent parts; cores is how
// many groups to pack them into. It tries the whole program first: where
// it splits (porep-sha, porep), the parts run from the head to the end
// without a barrier, the wide levels included, each group on one core.
// Else each long sequential segment is split on its own.
func (p *Program) splitSegments(cores int) {
	if cores < 2 || len(p.ops) < splitMin {
		return
	}
	def := make([]int32, p.nbWires) // wire → the range's op that solves it, -1 for none
	for i := range def {
		def[i] = -1
	}
	if whole := p.split(segment{lo: 0, hi: len(p.ops)}, def, cores); whole[len(whole)-1].groups != nil {
		p.segs = whole
		return
	}
	var out []segment
	for _, s := range p.segs {
		if s.parallel || s.hi-s.lo < splitMin {
			out = append(out, s)
			continue
		}
		out = append(out, p.split(s, def, cores)...)
	}
	p.segs = out
}

// solves calls f with each wire op i solves.
func (p *Program) solves(i int, f func(w uint32)) {
	o := &p.ops[i]
	if o.kind == opHint {
		h := &p.hints[o.cid]
		for w := h.out0; w < h.out0+h.n; w++ {
			f(w)
		}
		return
	}
	if o.at != inNone {
		f(o.x)
	}
}

// reads calls f with each wire op i reads.
func (p *Program) reads(i int, f func(w uint32)) {
	o := &p.ops[i]
	if o.kind == opHint {
		for _, in := range p.hints[o.cid].inputs {
			for _, t := range in {
				f(t.wire)
			}
		}
		return
	}
	for _, t := range p.terms[o.l:o.end] {
		f(t.wire)
	}
}

// split returns segment s as a head and a segment of groups, or as it is.
func (p *Program) split(s segment, def []int32, cores int) []segment {
	n := s.hi - s.lo
	level := make([]int32, n) // each op's level within the segment
	for i, l := 0, int32(0); i < n; i++ {
		level[i] = l
		if p.ops[s.lo+i].last {
			l++
		}
		p.solves(s.lo+i, func(w uint32) { def[w] = int32(i) })
	}
	defer func() {
		for i := range n {
			p.solves(s.lo+i, func(w uint32) { def[w] = -1 })
		}
	}()

	// The head depth whose largest part is smallest.
	parent := make([]int32, n)
	var find func(x int32) int32
	find = func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	size := make([]int32, n) // a root's part's ops
	parts := func(head int32) (largest int32) {
		for i := range parent {
			parent[i], size[i] = int32(i), 0
		}
		for i := range n {
			if level[i] < head {
				continue
			}
			p.reads(s.lo+i, func(w uint32) {
				d := def[w]
				if d < 0 || level[d] < head {
					return
				}
				a, b := find(int32(i)), find(d)
				if a != b {
					parent[a] = b
				}
			})
		}
		for i := range n {
			if level[i] >= head {
				r := find(int32(i))
				size[r]++
				largest = max(largest, size[r])
			}
		}
		return largest
	}
	// Each try is a pass over every op. A head of one level comes first
	// (porep-sha's challenges all read the replica id's bits, solved by
	// one hint in level 0); where it leaves nearly everything in one part
	// (a chain, as mimc's), no other head is tried.
	best, bestLargest, last := int32(-1), int32(n), int32(-1)
	for _, head := range []int32{1, 0, 2, 3} {
		l := parts(head)
		last = head
		if l < bestLargest {
			best, bestLargest = head, l
		}
		if bestLargest <= int32(n/4) || (head == 1 && float64(l) > 0.9*float64(n)) {
			break
		}
	}
	if best < 0 || float64(bestLargest) > splitLargest*float64(n) {
		return []segment{s}
	}
	if last != best {
		parts(best) // the union-find holds the last head's parts
	}

	// Pack the parts into groups, largest first, each into the group
	// with the fewest ops.
	var roots []int32
	for r := range size {
		if size[r] > 0 {
			roots = append(roots, int32(r))
		}
	}
	slices.SortFunc(roots, func(a, b int32) int {
		if size[a] != size[b] {
			return int(size[b] - size[a])
		}
		return int(a - b)
	})
	groups := min(cores, len(roots))
	load := make([]int, groups)
	groupOf := make([]int32, n) // root → its group
	for _, r := range roots {
		g := 0
		for k := range load {
			if load[k] < load[g] {
				g = k
			}
		}
		groupOf[r] = int32(g)
		load[g] += int(size[r])
	}

	// The new order: the head, then each group, every run in the
	// segment's order (a level's ops before the next level's).
	start := make([]int, groups+1)
	headN := 0
	for i := range n {
		if level[i] < best {
			headN++
		}
	}
	start[0] = headN
	for g := range groups {
		start[g+1] = start[g] + load[g]
	}
	order := make([]int, n) // new position → old position in the segment
	at := slices.Clone(start[:groups])
	h := 0
	for i := range n {
		if level[i] < best {
			order[h] = i
			h++
			continue
		}
		g := groupOf[find(int32(i))]
		order[at[g]] = i
		at[g]++
	}
	ops := make([]op, n)
	for k, i := range order {
		ops[k] = p.ops[s.lo+i]
	}
	// A run flushes its divisions where its level changes.
	ends := append([]int{0}, start...)
	for r := 0; r+1 < len(ends); r++ {
		for k := ends[r]; k < ends[r+1]; k++ {
			ops[k].last = k+1 == ends[r+1] || level[order[k]] != level[order[k+1]]
		}
	}
	copy(p.ops[s.lo:s.hi], ops)

	var out []segment
	if headN > 0 {
		out = append(out, segment{lo: s.lo, hi: s.lo + headN})
	}
	bounds := make([]int, groups+1)
	for g := range bounds {
		bounds[g] = s.lo + start[g]
	}
	out = append(out, segment{lo: s.lo + headN, hi: s.hi, groups: bounds})
	return out
}

// compileCores is how many groups Compile packs parts into: GOMAXPROCS, or
// 1 (no split) with CUZK_SOLVE_PARTS=off, to measure against.
func compileCores() int {
	if os.Getenv("CUZK_SOLVE_PARTS") == "off" {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}
