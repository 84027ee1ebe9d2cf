package solve

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cuzk/cuzk/internal/par"
)

// Teams: the cores a solve's groups leave idle help its largest groups.
//
// A porep-sha challenge is one part: a chain of SHA-256 compressions, each
// 256 levels of about 170 ops (a round's XORs, sums and bit
// decompositions). Its group runs on one core, so a partition's solve takes
// one challenge's time however many cores are idle: at 2^22 seven groups of
// 578,000 ops in 3,330 levels keep seven of 16 cores busy for about 50 ms on
// the H200, and at 2^20 two such groups keep two busy for 40 ms. A lone
// job's GPU waits for that first solve.
//
// The ops of one level of a group read no wire that level solves (gnark's
// levels), so several cores may solve a level between them, if each waits
// for the level to be done before it starts the next. A level is about 15 µs
// of one core's work: a barrier of a few hundred nanoseconds leaves most of
// it to share. So when a solve has more cores than groups, each core left
// over joins a large group as a helper:
//
//   - The group's leader (the group's own chunk) publishes each level in
//     turn. Leader and helpers claim its ops in slices (one compare-and-swap
//     a slice), solve them, and count them done; the leader publishes the
//     next level once the count is the level's size.
//   - The leader never waits for a helper to arrive: with none it claims
//     every slice itself. A helper only waits for a leader that has already
//     started (the pool hands a Range's chunks out in order, leaders first),
//     and while it waits it yields to earlier lanes, so that a later
//     partition's helper does not hold a core an earlier partition wants.
//   - Each slice flushes its batched divisions before it counts itself
//     done, so the next level reads every wire of this one.
//
// With the lanes (par.Lane) the earliest partition's leaders and helpers
// take the cores first; a later partition's solve gets them when it ends.
// CUZK_SOLVE_TEAMS=off keeps every group on one core, to measure against.

// teamMin is the fewest ops of a group worth helping, and teamWidth the
// fewest ops a level of it has on average: narrower levels would spend
// more on the barrier than the helpers save.
const (
	teamMin   = 1 << 14
	teamWidth = 64
)

// teamSlice is the fewest ops a slice of a level holds.
const teamSlice = 16

// teamsOff reads CUZK_SOLVE_TEAMS.
var teamsOff = sync.OnceValue(func() bool {
	return strings.EqualFold(strings.TrimSpace(os.Getenv("CUZK_SOLVE_TEAMS")), "off")
})

// teamCores is how many cores a solve's groups may use between them; tests
// set it above the machine's to exercise the helpers on two cores.
var teamCores = func() int { return runtime.GOMAXPROCS(0) }

// groupLevels returns, for each group of bounds, the op bounds of its
// levels (levels[j] to levels[j+1]), or nil for a group too small or too
// narrow to help.
func (p *Program) groupLevels(bounds []int) [][]int32 {
	out := make([][]int32, len(bounds)-1)
	any := false
	for g := range out {
		lo, hi := bounds[g], bounds[g+1]
		if hi-lo < teamMin {
			continue
		}
		lv := []int32{int32(lo)}
		for i := lo; i < hi; i++ {
			if p.ops[i].last || i+1 == hi {
				lv = append(lv, int32(i+1))
			}
		}
		if (hi-lo)/(len(lv)-1) < teamWidth {
			continue
		}
		out[g], any = lv, true
	}
	if !any {
		return nil
	}
	return out
}

// helpersFor assigns the cores the groups leave idle: helper k helps group
// assign[k]. Each goes to the group with the most ops per member.
func helpersFor(bounds []int, levels [][]int32, cores int) (assign []int) {
	n := cores - (len(bounds) - 1)
	if n <= 0 || levels == nil || teamsOff() {
		return nil
	}
	members := make([]int, len(levels))
	for range n {
		best, bestLoad := -1, 0
		for g, lv := range levels {
			if lv == nil {
				continue
			}
			if load := (bounds[g+1] - bounds[g]) / (members[g] + 1); best < 0 || load > bestLoad {
				best, bestLoad = g, load
			}
		}
		members[best]++
		assign = append(assign, best)
	}
	return assign
}

// team is one group solved level by level by its leader and its helpers.
type team struct {
	levels []int32
	// claim is 1 + the level published, in the high 32 bits (0: none
	// yet), and the offset of its next unclaimed op in the low ones.
	claim  atomic.Uint64
	done   atomic.Int64 // ops of the published level solved
	over   atomic.Bool  // the group is solved, or failed
	size   int          // 1 + the helpers assigned: a level's slices are sized for them
	helped atomic.Int64 // ops the helpers solved

	mu  sync.Mutex
	err error
}

func (t *team) fail(err error) {
	t.mu.Lock()
	t.err = errors.Join(t.err, err)
	t.mu.Unlock()
}

// claimed solves slices of the published level while any is left; it says
// whether it solved one.
func (p *Program) claimed(t *team, res *Result, hints Hints, io *hintIO, helper bool) bool {
	worked := false
	for {
		x := t.claim.Load()
		j := int(x>>32) - 1
		if j < 0 {
			return worked
		}
		lo, hi := int(t.levels[j]), int(t.levels[j+1])
		off := int(x & 0xffffffff)
		if lo+off >= hi {
			return worked
		}
		n := max(teamSlice, (hi-lo+2*t.size-1)/(2*t.size))
		if !t.claim.CompareAndSwap(x, x+uint64(n)) {
			continue
		}
		a, b := lo+off, min(lo+off+n, hi)
		if err := p.runSpan(res, a, b, hints, nil, io); err != nil {
			t.fail(err)
		}
		if helper {
			t.helped.Add(int64(b - a))
		}
		t.done.Add(int64(b - a))
		worked = true
	}
}

// lead solves t's group: each level published, solved with whoever helps,
// and waited for.
func (p *Program) lead(t *team, res *Result, hints Hints, yield func()) error {
	defer t.over.Store(true)
	var io hintIO
	for j := 0; j+1 < len(t.levels); j++ {
		if yield != nil && j%16 == 0 {
			yield()
		}
		size := int64(t.levels[j+1] - t.levels[j])
		t.done.Store(0)
		t.claim.Store(uint64(j+1) << 32)
		p.claimed(t, res, hints, &io, false)
		for spins := 0; t.done.Load() < size; spins++ {
			if spins&63 == 63 {
				runtime.Gosched()
			}
		}
		t.mu.Lock()
		err := t.err
		t.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// help solves slices of t's levels until the group is over.
func (p *Program) help(t *team, res *Result, hints Hints, yield func()) {
	var io hintIO
	for spins := 0; !t.over.Load(); spins++ {
		if p.claimed(t, res, hints, &io, true) {
			spins = 0
			continue
		}
		if spins&63 == 63 {
			if yield != nil {
				yield()
			}
			runtime.Gosched()
		}
	}
}

// runTeams is runGroups with helpers: chunk k < len(bounds)-1 leads group
// k, the others help the group assign gives them.
func (p *Program) runTeams(l *par.Lane, res *Result, bounds []int, levels [][]int32, assign []int, hints Hints) error {
	groups := len(bounds) - 1
	teams := make([]*team, groups)
	for _, g := range assign {
		if teams[g] == nil {
			teams[g] = &team{levels: levels[g], size: 1}
		}
		teams[g].size++
	}
	errs := make([]error, groups)
	var yield func()
	if l != nil {
		yield = l.Yield
	}
	n := groups + len(assign)
	l.Range(n, 1, n, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			switch {
			case k >= groups:
				p.help(teams[assign[k-groups]], res, hints, yield)
			case teams[k] != nil:
				errs[k] = p.lead(teams[k], res, hints, yield)
			default:
				errs[k] = p.runYielding(res, bounds[k], bounds[k+1], hints, yield)
			}
		}
	})
	if teamsSolved != nil {
		teamsSolved(teams)
	}
	return errors.Join(errs...)
}

// teamsSolved, when set (tests), is given each solve's teams at its end.
var teamsSolved func([]*team)
