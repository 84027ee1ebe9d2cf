package solve

import (
	"sync"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/internal/par"
)

// withTeamCores makes solves in this test see n cores for their teams, so
// that the helpers run on a machine of two.
func withTeamCores(t *testing.T, n int) {
	old := teamCores
	teamCores = func() int { return n }
	t.Cleanup(func() { teamCores = old })
}

// A team's level is solved by several cores at once: none of its ops may
// read a wire another op of the same level solves, and the levels must
// cover the group exactly.
func TestTeamLevelsAreIndependent(t *testing.T) {
	p, _, _, _ := program(t, "porep-sha", 1<<17)
	solvedIn := make([]int32, p.nbWires) // wire → 1 + the op solving it in the level under test
	teams := 0
	for _, s := range p.segs {
		for g, lv := range s.levels {
			if lv == nil {
				continue
			}
			teams++
			if int(lv[0]) != s.groups[g] || int(lv[len(lv)-1]) != s.groups[g+1] {
				t.Fatalf("group %d's levels cover [%d, %d), the group is [%d, %d)", g, lv[0], lv[len(lv)-1], s.groups[g], s.groups[g+1])
			}
			for j := 0; j+1 < len(lv); j++ {
				for i := lv[j]; i < lv[j+1]; i++ {
					p.solves(int(i), func(w uint32) { solvedIn[w] = i + 1 })
				}
				for i := lv[j]; i < lv[j+1]; i++ {
					p.reads(int(i), func(w uint32) {
						if o := solvedIn[w]; o != 0 {
							t.Fatalf("group %d, level %d: op %d reads wire %d, which op %d of the same level solves", g, j, i, w, o-1)
						}
					})
				}
				for i := lv[j]; i < lv[j+1]; i++ {
					p.solves(int(i), func(w uint32) { solvedIn[w] = 0 })
				}
			}
			t.Logf("group %d: %d ops in %d levels", g, lv[len(lv)-1]-lv[0], len(lv)-1)
		}
	}
	if teams == 0 {
		t.Fatal("porep-sha at 2^17 has no group large and wide enough for helpers")
	}
}

// With helpers every wire and evaluation is still gnark's, on goroutines
// and on the pool's lanes, several solves at once; the helpers did solve
// part of the groups.
func TestTeamsMatchGnark(t *testing.T) {
	withTeamCores(t, 8)
	var mu sync.Mutex
	helped, solves := int64(0), 0
	teamsSolved = func(ts []*team) {
		mu.Lock()
		defer mu.Unlock()
		solves++
		for _, tm := range ts {
			if tm != nil {
				helped += tm.helped.Load()
			}
		}
	}
	t.Cleanup(func() { teamsSolved = nil })
	for _, name := range []string{"porep-sha", "porep"} {
		target := map[string]int{"porep-sha": 1 << 17, "porep": 1 << 16}[name]
		p, r, c, l := program(t, name, target)
		var wg sync.WaitGroup
		for part := range 3 {
			want := gnarkSolve(t, r, c, l, part)
			vec := witnessOf(t, c, l, part)
			wg.Go(func() {
				var lane *par.Lane
				if part > 0 {
					lane = par.NewLane()
				}
				got, err := p.SolveOn(lane, vec, Hints{Gnark: fixedHints()})
				if err != nil {
					t.Error(err)
					return
				}
				for _, v := range []struct {
					what      string
					got, want fr.Vector
				}{{"W", got.W, want.W}, {"A", got.A, want.A}, {"B", got.B, want.B}, {"C", got.C, want.C}} {
					if i := firstDiff(v.got, v.want); i >= 0 {
						t.Errorf("%s partition %d: %s differs from gnark's at %d", name, part, v.what, i)
					}
				}
			})
		}
		wg.Wait()
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d solves with teams, %d ops solved by helpers", solves, helped)
	if solves == 0 || helped == 0 {
		t.Fatalf("%d solves with teams, %d ops by helpers: the helpers did not run", solves, helped)
	}
}

// A constraint that fails in a helper's slice fails the solve, and the
// solve ends.
func TestTeamsFailAsOneCore(t *testing.T) {
	withTeamCores(t, 8)
	p, _, c, l := program(t, "porep-sha", 1<<17)
	vec := witnessOf(t, c, l, 0)
	vec[1].SetUint64(12345) // the replica id: every challenge's hashes disagree with the root
	if _, err := p.SolveOn(nil, vec, Hints{Gnark: fixedHints()}); err == nil {
		t.Fatal("a wrong public input solved")
	}
}
