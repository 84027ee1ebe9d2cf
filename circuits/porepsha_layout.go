package circuits

import (
	"fmt"
	"math/bits"
	"sync"
)

// porepSHAUnits are the constraints of PoRepSHA's parts at one round count:
//
//	count = fixed + challenges·(challenge + depth·level + (parents−1)·block) + fill·round
//
// where challenge is a challenge with one parent block and no path. At one
// round per compression, constant words of SHA-256's initial state survive
// a few compressions and make each extra parent block cost a little less
// than the one before: there block is 0 and layouts keep one block.
type porepSHAUnits struct {
	fixed, challenge, level, block, round int
}

func (u porepSHAUnits) count(sh porepSHAShape) int {
	return u.fixed + sh.challenges*u.perChallenge(sh.depth, sh.parents) + sh.fill*u.round
}

func (u porepSHAUnits) perChallenge(depth, parents int) int {
	return u.challenge + depth*u.level + (parents-1)*u.block
}

// porepSHAUnitsFor measures the units at a round count from compilations of
// the smallest instances. From four rounds on it uses shapes that layouts do
// not (no path, no parent block), so that full SHA-256 takes five
// compressions: there no constant word of SHA-256's initial state is left in
// a compression's output, so a level costs the same over any label and a
// first parent block costs what every further one does.
func porepSHAUnitsFor(rounds int, links bool) (porepSHAUnits, error) {
	key := porepSHACostKey{rounds, links}
	if v, ok := porepSHACosts.Load(key); ok {
		return v.(porepSHAUnits), nil
	}
	u, err := porepSHAFixedUnits()
	if err != nil {
		return u, err
	}
	count := func(depth, parents int) (int, error) {
		return porepSHACount(porepSHAShape{challenges: 1, depth: depth, parents: parents, rounds: rounds, links: links})
	}
	one, err := count(0, 1)
	if err != nil {
		return u, err
	}
	u.challenge = one - u.fixed
	if rounds >= 4 {
		bare, err := count(0, 0)
		if err != nil {
			return u, err
		}
		path, err := count(1, 0)
		if err != nil {
			return u, err
		}
		u.level, u.block = path-bare, one-bare
		porepSHACosts.Store(key, u)
		return u, nil
	}
	// Below four rounds constant words survive into the nodes, and a level
	// costs a constraint more or less over a label than over a node: the
	// level is measured between depths one and two, and the first goes
	// with the challenge.
	path, err := count(1, 1)
	if err != nil {
		return u, err
	}
	deeper, err := count(2, 1)
	if err != nil {
		return u, err
	}
	u.level = deeper - path
	u.challenge = path - u.level - u.fixed
	if rounds > 1 {
		two, err := count(0, 2)
		if err != nil {
			return u, err
		}
		u.block = two - one
	}
	porepSHACosts.Store(key, u)
	return u, nil
}

// porepSHAFixedUnits measures the units that do not depend on the round
// count or on links (the replica id's bits; a fill round), on one-round
// instances.
var porepSHAFixedUnits = sync.OnceValues(func() (porepSHAUnits, error) {
	base := porepSHAShape{challenges: 1, parents: 1, rounds: 1}
	c0, err := porepSHACount(base)
	if err != nil {
		return porepSHAUnits{}, err
	}
	two, filled := base, base
	two.challenges++
	filled.fill++
	c2, err := porepSHACount(two)
	if err != nil {
		return porepSHAUnits{}, err
	}
	cf, err := porepSHACount(filled)
	if err != nil {
		return porepSHAUnits{}, err
	}
	return porepSHAUnits{fixed: c0 - (c2 - c0), round: cf - c0}, nil
})

// porepSHACostKey is what the units depend on.
type porepSHACostKey struct {
	rounds int
	links  bool
}

var porepSHACosts sync.Map // porepSHACostKey → porepSHAUnits

// porepSHACount compiles a shape, checked or not, and counts its constraints.
func porepSHACount(sh porepSHAShape) (int, error) {
	s, err := compileShape(sh)
	if err != nil {
		return 0, err
	}
	return s.GetNbConstraints(), nil
}

// porepSHARounds are the round counts a layout may cut the compressions to,
// full SHA-256 first.
var porepSHARounds = []int{64, 32, 16, 8, 4, 2, 1}

// porepSHALinked says whether the layouts Layout picks link their chains
// (see PoRepSHA): they do, so that a partition's solve is not one
// challenge's chain.
const porepSHALinked = true

// porepSHADepthCap is the deepest tree for a target: log2(target) − 12,
// within 1..16, so that a job's tree (2^depth labels) stays quick to build.
func porepSHADepthCap(target int) int {
	return min(16, max(1, bits.Len(uint(target))-1-12))
}

// Layout implements Circuit. It takes the deepest tree up to the depth cap
// and, at that depth, the most rounds per compression with which one
// challenge fits the target; then as many challenges as fit, as many more
// parent blocks per challenge as fit, and fill rounds for the rest. The
// count never passes the target (but for targets below the smallest
// instance, a few thousand constraints), so a target of 2^k gets a domain
// of 2^k.
func (PoRepSHA) Layout(target int) (Layout, error) {
	if err := checkTarget(target); err != nil {
		return nil, err
	}
	for depth := porepSHADepthCap(target); depth >= 1; depth-- {
		sh, ok, err := porepSHAFit(target, depth)
		if err != nil {
			return nil, err
		}
		if ok {
			return sh.layout(), nil
		}
	}
	return porepSHAShape{challenges: 1, depth: 1, parents: 1, rounds: 1, links: porepSHALinked}.layout(), nil
}

// porepSHAFit lays out a target at a depth, if one challenge fits. The cost
// of a challenge grows with the rounds, so the search may run either way;
// large targets start from 64 rounds, small ones from one, so that neither
// measures the costs of round counts it cannot use.
func porepSHAFit(target, depth int) (porepSHAShape, bool, error) {
	fits := func(rounds int) (porepSHAUnits, bool, error) {
		u, err := porepSHAUnitsFor(rounds, porepSHALinked)
		return u, err == nil && u.fixed+u.perChallenge(depth, 1) <= target, err
	}
	rounds, best := 0, porepSHAUnits{}
	if target >= 1<<19 {
		for _, r := range porepSHARounds {
			u, ok, err := fits(r)
			if err != nil {
				return porepSHAShape{}, false, err
			}
			if ok {
				rounds, best = r, u
				break
			}
		}
	} else {
		for i := len(porepSHARounds) - 1; i >= 0; i-- {
			u, ok, err := fits(porepSHARounds[i])
			if err != nil {
				return porepSHAShape{}, false, err
			}
			if !ok {
				break
			}
			rounds, best = porepSHARounds[i], u
		}
	}
	if rounds == 0 {
		return porepSHAShape{}, false, nil
	}
	u := best
	sh := porepSHAShape{depth: depth, rounds: rounds, parents: 1, links: porepSHALinked}
	one := u.perChallenge(depth, 1)
	sh.challenges = (target - u.fixed) / one
	left := target - u.fixed - sh.challenges*one
	if u.block > 0 {
		more := left / (sh.challenges * u.block)
		sh.parents += more
		left -= more * sh.challenges * u.block
	}
	sh.fill = left / u.round
	return sh, true, nil
}

// Constraints implements Circuit.
func (PoRepSHA) Constraints(l Layout) (int, error) {
	sh, err := porepSHAShapeOf(l)
	if err != nil {
		return 0, err
	}
	u, err := porepSHAUnitsFor(sh.rounds, sh.links)
	if err != nil {
		return 0, fmt.Errorf("porep-sha costs at %d rounds: %w", sh.rounds, err)
	}
	return u.count(sh), nil
}
