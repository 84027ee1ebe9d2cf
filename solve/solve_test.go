package solve

import (
	"errors"
	"fmt"
	"maps"
	"math/big"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/witness"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	csolver "github.com/consensys/gnark/constraint/solver"
	"github.com/consensys/gnark/frontend"
	fcs "github.com/consensys/gnark/frontend/cs"
	"github.com/consensys/gnark/frontend/cs/r1cs"
	"github.com/consensys/gnark/std/rangecheck"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/internal/par"
)

// compiled holds the systems compile made, by name and target: sha2's
// smallest takes seconds, and several tests read it.
var compiled sync.Map

type compiledKey struct {
	name   string
	target int
}

type compiledSystem struct {
	r *cs.R1CS
	c circuits.Circuit
	l circuits.Layout
}

func compile(t testing.TB, name string, target int) (*cs.R1CS, circuits.Circuit, circuits.Layout) {
	t.Helper()
	if v, ok := compiled.Load(compiledKey{name, target}); ok {
		s := v.(compiledSystem)
		return s.r, s.c, s.l
	}
	c, err := circuits.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Layout(target)
	if err != nil {
		t.Fatal(err)
	}
	ccs, err := circuits.Compile(c, l)
	if err != nil {
		t.Fatal(err)
	}
	compiled.Store(compiledKey{name, target}, compiledSystem{ccs.(*cs.R1CS), c, l})
	return ccs.(*cs.R1CS), c, l
}

// fullWitness is gnark's witness of one partition.
func fullWitness(t testing.TB, c circuits.Circuit, l circuits.Layout, part int) witness.Witness {
	t.Helper()
	a, err := c.Assign(l, []byte("solve-test"), part)
	if err != nil {
		t.Fatal(err)
	}
	w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func witnessOf(t testing.TB, c circuits.Circuit, l circuits.Layout, part int) fr.Vector {
	return fullWitness(t, c, l, part).Vector().(fr.Vector)
}

func gnarkSolve(t testing.TB, r *cs.R1CS, c circuits.Circuit, l circuits.Layout, part int) *cs.R1CSSolution {
	t.Helper()
	sol, err := r.Solve(fullWitness(t, c, l, part), gnarkFixed()...)
	if err != nil {
		t.Fatal(err)
	}
	return sol.(*cs.R1CSSolution)
}

// program compiles a circuit and lays it out for this solver.
func program(t testing.TB, name string, target int) (*Program, *cs.R1CS, circuits.Circuit, circuits.Layout) {
	t.Helper()
	r, c, l := compile(t, name, target)
	p, err := Compile(r)
	if err != nil {
		t.Fatal(err)
	}
	return p, r, c, l
}

func firstDiff(a, b fr.Vector) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if !a[i].Equal(&b[i]) {
			return i
		}
	}
	return -1
}

// Every wire and every constraint evaluation equals gnark's, on the
// circuits (sha's bits come from hints, and its levels are wide enough to be
// solved in parallel at 2^16; sha2's lookups are divisions, batched, and its
// hints gnark's std ones; its smallest instance, 157,756 constraints;
// porep at 2^16 and porep-sha at 2^17 have challenges solved as parts on
// their own cores).
func TestMatchesGnark(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target int
	}{{"mimc", 1 << 12}, {"porep", 1 << 12}, {"sha", 1 << 16}, {"porep", 1 << 16}, {"porep-sha", 1 << 12}, {"porep-sha", 1 << 17}, {"sha2", 1 << 12}} {
		t.Run(fmt.Sprintf("%s/%d", tc.name, tc.target), func(t *testing.T) {
			p, r, c, l := program(t, tc.name, tc.target)
			for part := range 2 {
				want := gnarkSolve(t, r, c, l, part)
				// The second partition's groups and wide levels run on the
				// cores' pool, in a lane, the first's on goroutines.
				var lane *par.Lane
				if part == 1 {
					lane = par.NewLane()
				}
				got, err := p.SolveOn(lane, witnessOf(t, c, l, part), Hints{Gnark: fixedHints()})
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range []struct {
					what      string
					got, want fr.Vector
				}{{"W", got.W, want.W}, {"A", got.A, want.A}, {"B", got.B, want.B}, {"C", got.C, want.C}} {
					if i := firstDiff(v.got, v.want); i >= 0 {
						t.Fatalf("partition %d: %s differs from gnark's at %d (lengths %d, %d)", part, v.what, i, len(v.got), len(v.want))
					}
				}
			}
		})
	}
}

// sha at 2^16 has levels above parallelLevel (the checks that its inputs
// are bits): its comparison with gnark covers the parallel path.
func TestSHAHasParallelLevels(t *testing.T) {
	p, _, _, _ := program(t, "sha", 1<<16)
	n := 0
	for _, s := range p.segs {
		if s.parallel {
			n += s.hi - s.lo
		}
	}
	if n == 0 {
		t.Fatalf("no level of %d or more ops in sha at 2^14 (%d segments)", parallelLevel, len(p.segs))
	}
}

// porep-sha's challenges share no wire: at 2^17 (two challenges, ten fill
// rounds) most of its ops are solved in parts, a group per core, and every
// group's ops are a run in level order that reads only its own wires, the
// head's and those of earlier segments.
func TestPoRepSHASolvesInParts(t *testing.T) {
	r, _, _ := compile(t, "porep-sha", 1<<17)
	p, err := layOut(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := len(p.segs)
	p.splitSegments(4)
	inGroups, groups := 0, 0
	solvedAt := make([]int, p.nbWires) // wire → 1 + the segment that solves it, or its group's index in it
	for i := range solvedAt {
		if i < p.nbPublic+p.nbSecret {
			solvedAt[i] = -1
		}
	}
	for si, s := range p.segs {
		if s.groups == nil {
			for i := s.lo; i < s.hi; i++ {
				p.solves(i, func(w uint32) { solvedAt[w] = -1 })
			}
			continue
		}
		inGroups += s.hi - s.lo
		groups += len(s.groups) - 1
		for g := 0; g+1 < len(s.groups); g++ {
			mark := 1 + si*64 + g
			for i := s.groups[g]; i < s.groups[g+1]; i++ {
				p.reads(i, func(w uint32) {
					if solvedAt[w] != -1 && solvedAt[w] != mark {
						t.Fatalf("op %d of group %d reads wire %d, solved elsewhere (%d) or later", i, g, w, solvedAt[w])
					}
				})
				p.solves(i, func(w uint32) { solvedAt[w] = mark })
			}
		}
		for i := s.lo; i < s.hi; i++ {
			p.solves(i, func(w uint32) { solvedAt[w] = -1 })
		}
	}
	t.Logf("%d ops: %d segments, then %d, %d ops in %d groups", len(p.ops), before, len(p.segs), inGroups, groups)
	if inGroups < len(p.ops)/2 || groups < 2 {
		t.Errorf("%d of %d ops in %d groups: want most ops in two groups or more", inGroups, len(p.ops), groups)
	}
}

// A linked porep-sha layout gives each compression's input as a private
// link, so its parts are compressions, not challenges: split for sixteen
// cores, the largest group holds a fraction of what it holds unlinked,
// where each of the two challenges is one part.
func TestPoRepSHALinksShortenTheLongestGroup(t *testing.T) {
	c, err := circuits.Lookup("porep-sha")
	if err != nil {
		t.Fatal(err)
	}
	linked, err := c.Layout(1 << 17)
	if err != nil {
		t.Fatal(err)
	}
	if linked["links"] != 1 {
		t.Fatalf("layout %s is not linked", linked)
	}
	unlinked := maps.Clone(linked)
	delete(unlinked, "links")
	largest := func(l circuits.Layout) (int, int) {
		ccs, err := circuits.Compile(c, l)
		if err != nil {
			t.Fatal(err)
		}
		p, err := layOut(ccs.(*cs.R1CS), nil)
		if err != nil {
			t.Fatal(err)
		}
		p.splitSegments(16)
		most := 0
		for _, s := range p.segs {
			if s.groups == nil {
				most = max(most, s.hi-s.lo) // a segment solved in order
				continue
			}
			for g := 0; g+1 < len(s.groups); g++ {
				most = max(most, s.groups[g+1]-s.groups[g])
			}
		}
		return most, len(p.ops)
	}
	lMost, lOps := largest(linked)
	uMost, uOps := largest(unlinked)
	t.Logf("largest group: linked %d of %d ops, unlinked %d of %d", lMost, lOps, uMost, uOps)
	if uMost < uOps/4 {
		t.Errorf("unlinked: largest group %d of %d ops, want a challenge's (over a quarter)", uMost, uOps)
	}
	if lMost > lOps/8 {
		t.Errorf("linked: largest group %d of %d ops, want an eighth or less", lMost, lOps)
	}
}

// Each op is in one segment: solved once, on one core or spread over
// several (sha2's wide levels follow sequential ones).
func TestSegmentsSolveEachOpOnce(t *testing.T) {
	p, _, _, _ := program(t, "sha2", 1<<12)
	next := 0
	for _, s := range p.segs {
		if s.lo != next || s.hi <= s.lo {
			t.Fatalf("segment [%d, %d) after ops [0, %d)", s.lo, s.hi, next)
		}
		next = s.hi
	}
	if next != len(p.ops) {
		t.Fatalf("segments end at op %d of %d", next, len(p.ops))
	}
}

// sha's bit decompositions (api.ToBinary) take the path without big.Int:
// its comparison with gnark covers that path.
func TestSHABitsAreNative(t *testing.T) {
	p, _, _, _ := program(t, "sha", 1<<12)
	native := 0
	for _, h := range p.hints {
		if h.std == stdBits {
			native++
		}
	}
	if native == 0 || native != len(p.hints) {
		t.Fatalf("%d of %d hints decomposed natively", native, len(p.hints))
	}
}

func TestUnsatisfiedNamesConstraint(t *testing.T) {
	p, r, c, l := program(t, "mimc", 1<<12)
	w := witnessOf(t, c, l, 0)
	w[0].SetUint64(12345) // the public digest
	_, err := p.Solve(w)
	if !errors.Is(err, ErrUnsatisfied) || !strings.Contains(err.Error(), "constraint #") {
		t.Fatalf("got %v, want ErrUnsatisfied naming the constraint", err)
	}
	full := fullWitness(t, c, l, 0)
	copy(full.Vector().(fr.Vector), w)
	if _, err := r.Solve(full); err == nil {
		t.Fatal("gnark accepts the witness this solver refused")
	}
}

func TestRefusesBadSizes(t *testing.T) {
	p, _, c, l := program(t, "mimc", 1<<12)
	w := witnessOf(t, c, l, 0)
	if _, err := p.Solve(w[:len(w)-1]); err == nil {
		t.Error("a short witness was accepted")
	}
	res := &Result{W: make(fr.Vector, p.Wires()), A: make(fr.Vector, p.Constraints()), B: make(fr.Vector, 1), C: make(fr.Vector, p.Constraints())}
	if err := p.SolveInto(w, res); err == nil {
		t.Error("a short B was accepted")
	}
}

// A hint the registry does not know is taken from the options: Compile's
// (solver.WithHints) or SolveWith's; without either the solve fails naming it.
type unregisteredHint struct{ X, Y frontend.Variable }

func privateHint(_ *big.Int, in, out []*big.Int) error {
	out[0].Add(in[0], big.NewInt(1))
	return nil
}

func (c *unregisteredHint) Define(api frontend.API) error {
	r, err := api.Compiler().NewHint(privateHint, 1, c.X)
	if err != nil {
		return err
	}
	api.AssertIsEqual(r[0], c.Y)
	return nil
}

// gadgetProgram compiles a small test circuit to an R1CS and lays it out.
func gadgetProgram(t *testing.T, c frontend.Circuit) (*Program, *cs.R1CS) {
	t.Helper()
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, c)
	if err != nil {
		t.Fatal(err)
	}
	r := ccs.(*cs.R1CS)
	p, err := Compile(r)
	if err != nil {
		t.Fatal(err)
	}
	return p, r
}

func TestUnregisteredHint(t *testing.T) {
	p, r := gadgetProgram(t, &unregisteredHint{})
	w := fr.Vector{fr.NewElement(41), fr.NewElement(42)} // X, Y: both secret
	_, err := p.Solve(w)
	if !errors.Is(err, ErrMissingHint) || !strings.Contains(err.Error(), "privateHint") {
		t.Fatalf("without the hint: got %v, want ErrMissingHint naming privateHint", err)
	}
	if _, err := p.SolveWith(w, map[csolver.HintID]csolver.Hint{csolver.GetHintID(privateHint): privateHint}); err != nil {
		t.Fatalf("hint given to SolveWith: %v", err)
	}
	withHint, err := Compile(r, csolver.WithHints(privateHint))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := withHint.Solve(w); err != nil {
		t.Fatalf("hint given to Compile: %v", err)
	}
	if _, err := withHint.Solve(fr.Vector{fr.NewElement(41), fr.NewElement(41)}); !errors.Is(err, ErrUnsatisfied) {
		t.Fatalf("wrong Y: got %v, want ErrUnsatisfied", err)
	}
}

// BenchmarkSolve compares gnark's solver with this one on mimc (one chain,
// solved in order) and sha (wide levels and hints).
func BenchmarkSolve(b *testing.B) {
	for _, tc := range []struct {
		name   string
		target int
	}{{"mimc", 1 << 16}, {"sha", 1 << 16}} {
		p, r, c, l := program(b, tc.name, tc.target)
		w := fullWitness(b, c, l, 0)
		v := w.Vector().(fr.Vector)
		b.Run(fmt.Sprintf("%s/gnark", tc.name), func(b *testing.B) {
			for b.Loop() {
				if _, err := r.Solve(w); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%s/cuzk", tc.name), func(b *testing.B) {
			for b.Loop() {
				res, err := p.Solve(v)
				if err != nil {
					b.Fatal(err)
				}
				p.Release(res) // as prover.Solution.Release does after prep
			}
		})
	}
}

// Results released are reused, and Reserve readies them ahead.
func TestResultsReused(t *testing.T) {
	p, r, c, l := program(t, "mimc", 1<<12)
	p.Reserve(2)
	if n := p.Reusable(); n != 2 {
		t.Fatalf("%d reusable after Reserve(2)", n)
	}
	a, err := p.Solve(witnessOf(t, c, l, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(a.W)
	p.Release(a)
	// The reused vectors hold the last solve's values: the next solve must
	// overwrite every one of them.
	b, err := p.Solve(witnessOf(t, c, l, 1))
	if err != nil {
		t.Fatal(err)
	}
	if &b.W[0] != &a.W[0] {
		t.Error("a released result was not reused")
	}
	if firstDiff(b.W, want) < 0 {
		t.Error("the second partition's wires equal the first's")
	}
	fresh, err := Compile(r)
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := fresh.Solve(witnessOf(t, c, l, 1))
	for _, v := range []struct {
		what      string
		got, want fr.Vector
	}{{"W", b.W, c2.W}, {"A", b.A, c2.A}, {"B", b.B, c2.B}, {"C", b.C, c2.C}} {
		if i := firstDiff(v.got, v.want); i >= 0 {
			t.Fatalf("solve into reused vectors: %s differs from a fresh solve at %d", v.what, i)
		}
	}
	p.Release(&Result{W: make(fr.Vector, 1)}) // wrong sizes: ignored
	if n := p.Reusable(); n != 1 {
		t.Fatalf("%d reusable, want 1 (the reserved one not yet taken)", n)
	}
}

// BenchmarkConcurrent runs 1 to 4 solves of mimc at 2^18 at once, as a GPU
// device's workers do, and reports the time per constraint of each solve.
func BenchmarkConcurrent(b *testing.B) {
	p, _, c, l := program(b, "mimc", 1<<18)
	v := witnessOf(b, c, l, 0)
	for _, n := range []int{1, 2, 3, 4} {
		p.Reserve(n)
		b.Run(fmt.Sprintf("solves=%d", n), func(b *testing.B) {
			for b.Loop() {
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() {
						res, err := p.Solve(v)
						if err != nil {
							b.Error(err)
							return
						}
						p.Release(res)
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(p.Constraints()), "ns/constraint")
		})
	}
}

// divCircuit has constraints whose unknown wire is a factor (L or R), not
// the output: api.Div gives res·y = x with res unknown.
type divCircuit struct {
	X, Y frontend.Variable
	Q    frontend.Variable `gnark:",public"`
}

func (c *divCircuit) Define(api frontend.API) error {
	api.AssertIsEqual(api.Mul(api.DivUnchecked(c.X, c.Y), 3), c.Q)
	return nil
}

// Unknown factors are solved as gnark solves them: by division where the
// other factor is not zero, left at zero where both sides are zero, and a
// failure where only the other factor is.
func TestUnknownFactorMatchesGnark(t *testing.T) {
	p, r := gadgetProgram(t, &divCircuit{})
	factors := 0
	for _, o := range p.ops {
		if o.kind == opR1C && (o.at == inL || o.at == inR) {
			factors++
		}
	}
	if factors == 0 {
		t.Fatal("no constraint solves for a factor")
	}
	var x, y, q fr.Element
	x.SetUint64(12)
	y.SetUint64(5)
	q.Div(&x, &y)
	q.Mul(&q, new(fr.Element).SetUint64(3))
	for _, tc := range []struct {
		name    string
		x, y, q fr.Element
		ok      bool
	}{{"divides", x, y, q, true}, {"zero by zero", fr.Element{}, fr.Element{}, fr.Element{}, true}, {"by zero", x, fr.Element{}, fr.Element{}, false}} {
		w, err := frontend.NewWitness(&divCircuit{X: tc.x, Y: tc.y, Q: tc.q}, ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Solve(w.Vector().(fr.Vector))
		want, gerr := r.Solve(w)
		if (err == nil) != tc.ok || (gerr == nil) != tc.ok {
			t.Fatalf("%s: cuzk %v, gnark %v; want success %v", tc.name, err, gerr, tc.ok)
		}
		if !tc.ok {
			if !errors.Is(err, ErrUnsatisfied) {
				t.Errorf("%s: %v, want ErrUnsatisfied", tc.name, err)
			}
			continue
		}
		ws := want.(*cs.R1CSSolution)
		for _, v := range []struct {
			what      string
			got, want fr.Vector
		}{{"W", got.W, ws.W}, {"A", got.A, ws.A}, {"B", got.B, ws.B}, {"C", got.C, ws.C}} {
			if i := firstDiff(v.got, v.want); i >= 0 {
				t.Fatalf("%s: %s differs from gnark's at %d", tc.name, v.what, i)
			}
		}
	}
}

// gnark's commitments draw two random values outside a prover: the BSB22
// commitment hint's placeholder and the mask of the committed wires
// (internal/hints.Randomize). Fixed values in their place make two solves
// comparable and leave the Pedersen commitment out of the solver's time.
func commitmentStub(_ *big.Int, _ []*big.Int, out []*big.Int) error {
	out[0].SetString("0x1d5f0cbb2c6c7ef3a0e2a8a4b7c1d3e5f60718293a4b5c6d7e8f90a1b2c3d4e5", 0)
	return nil
}

func maskStub(_ *big.Int, _ []*big.Int, out []*big.Int) error {
	for i, o := range out {
		o.SetInt64(int64(1000 + i))
	}
	return nil
}

// randomizeHint is gnark's internal hint of random values, found by name.
const randomizeHint = "github.com/consensys/gnark/internal/hints.Randomize"

var fixedHints = sync.OnceValue(func() map[csolver.HintID]csolver.Hint {
	m := map[csolver.HintID]csolver.Hint{csolver.GetHintID(fcs.Bsb22CommitmentComputePlaceholder): commitmentStub}
	for _, h := range csolver.GetRegisteredHints() {
		if csolver.GetHintName(h) == randomizeHint {
			m[csolver.GetHintID(h)] = maskStub
		}
	}
	if len(m) != 2 {
		panic(randomizeHint + " is not registered")
	}
	return m
})

// gnarkFixed is fixedHints as options of gnark's solver.
func gnarkFixed() []csolver.Option {
	var opts []csolver.Option
	for id, h := range fixedHints() {
		opts = append(opts, csolver.OverrideHint(id, h))
	}
	return opts
}

// BenchmarkSHA2 compares the solvers on gnark's std sha2 (lookups, range
// checks and a commitment: bound by the lookups' inversions) at 2^18 and,
// without -short, 2^20.
func BenchmarkSHA2(b *testing.B) {
	sizes := []int{1 << 18, 1 << 20}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, target := range sizes {
		p, r, c, l := program(b, "sha2", target)
		w := fullWitness(b, c, l, 0)
		v := w.Vector().(fr.Vector)
		name := fmt.Sprintf("2^%d", bits.Len(uint(target))-1)
		b.Run(name+"/gnark", func(b *testing.B) {
			for b.Loop() {
				if _, err := r.Solve(w, gnarkFixed()...); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/cuzk", func(b *testing.B) {
			for b.Loop() {
				res, err := p.SolveWith(v, fixedHints())
				if err != nil {
					b.Fatal(err)
				}
				p.Release(res)
			}
		})
	}
}

// sha2's lookups are levels of more divisions than a batch holds, so its
// comparison with gnark covers full batches, batches finished at a level's
// end, and levels spread over cores.
func TestSHA2DivisionsAreBatched(t *testing.T) {
	p, _, _, _ := program(t, "sha2", 1<<12)
	most, inLevel := 0, 0
	for _, o := range p.ops {
		if o.kind == opR1C && (o.at == inL || o.at == inR) {
			inLevel++
		}
		if o.last {
			most, inLevel = max(most, inLevel), 0
		}
	}
	if most <= divisionBatch {
		t.Fatalf("at most %d divisions in a level, a batch holds %d", most, divisionBatch)
	}
}

// sha2's lookup counts take the path without big.Int: its comparison with
// gnark covers that path.
func TestSHA2CountsAreNative(t *testing.T) {
	p, _, _, _ := program(t, "sha2", 1<<12)
	counts, native := 0, 0
	for _, h := range p.hints {
		if h.name == countHint {
			counts++
			if h.table != nil {
				native++
			}
		}
	}
	if counts == 0 || native != counts {
		t.Fatalf("%d of %d lookup counts native", native, counts)
	}
}

// rangeCircuit checks that X has at most 10 bits with gnark's range checks,
// a log-derivative argument over a table of limbs.
type rangeCircuit struct{ X, Y frontend.Variable }

func (c *rangeCircuit) Define(api frontend.API) error {
	rangecheck.New(api).Check(c.X, 10)
	api.AssertIsEqual(api.Add(c.X, 1), c.Y)
	return nil
}

// A prover's decomposition that puts the whole value in its first limb
// satisfies the recomposition and queries a value that is not in the table
// of limbs: the count fails, in both solvers, where the honest
// decomposition solves as gnark does.
func TestLookupOutOfTable(t *testing.T) {
	p, r := gadgetProgram(t, &rangeCircuit{})
	native := 0
	for _, h := range p.hints {
		if h.table != nil {
			native++
		}
	}
	if native != 1 {
		t.Fatalf("%d native lookup counts, want 1", native)
	}
	oneLimb := func(_ *big.Int, in, out []*big.Int) error {
		for i := range out {
			out[i].SetUint64(0)
		}
		out[0].Set(in[2])
		return nil
	}
	decompose := csolver.GetHintID(rangecheck.DecomposeHint)
	w, err := frontend.NewWitness(&rangeCircuit{X: 1000, Y: 1001}, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.SolveWith(w.Vector().(fr.Vector), fixedHints())
	if err != nil {
		t.Fatal(err)
	}
	want, err := r.Solve(w, gnarkFixed()...)
	if err != nil {
		t.Fatal(err)
	}
	if i := firstDiff(got.W, want.(*cs.R1CSSolution).W); i >= 0 {
		t.Fatalf("W differs from gnark's at %d", i)
	}
	cheat := maps.Clone(fixedHints())
	cheat[decompose] = oneLimb
	_, err = p.SolveWith(w.Vector().(fr.Vector), cheat)
	_, gerr := r.Solve(w, append(gnarkFixed(), csolver.OverrideHint(decompose, oneLimb))...)
	if err == nil || gerr == nil || !strings.Contains(err.Error(), "not in table") {
		t.Fatalf("one limb: cuzk %v, gnark %v; want both to fail, cuzk's naming the table", err, gerr)
	}
}

// A solve into the caller's A, B and C (a backend's staging memory, dirty
// from an earlier partition) writes every element of them, as a solve into
// its own vectors does, and its release keeps only W for the next such solve.
func TestSolveIntoCallersVectors(t *testing.T) {
	p, r, c, l := program(t, "porep-sha", 1<<12)
	p.Reserve(1)
	fresh, err := Compile(r)
	if err != nil {
		t.Fatal(err)
	}
	n := p.Constraints()
	stage := make(fr.Vector, 3*n+5) // a staging buffer: the three vectors and more
	for i := range stage {
		stage[i].SetUint64(uint64(7*i + 3)) // an earlier partition's values
	}
	a, b, cv := stage[:n], stage[n:2*n], stage[2*n:3*n]
	var w0 *fr.Element
	for part := range 2 {
		res, err := p.SolveOnInto(nil, witnessOf(t, c, l, part), Hints{}, a, b, cv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if &res.A[0] != &a[0] || &res.B[0] != &b[0] || &res.C[0] != &cv[0] {
			t.Fatal("the result's A, B, C are not the vectors given")
		}
		want, err := fresh.Solve(witnessOf(t, c, l, part))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct {
			what      string
			got, want fr.Vector
		}{{"W", res.W, want.W}, {"A", res.A, want.A}, {"B", res.B, want.B}, {"C", res.C, want.C}} {
			if i := firstDiff(v.got, v.want); i >= 0 {
				t.Fatalf("partition %d: %s differs from a solve into the solver's own vectors at %d", part, v.what, i)
			}
		}
		if part == 1 && &res.W[0] != w0 {
			t.Error("the released W was not reused by the next solve into given vectors")
		}
		w0 = &res.W[0]
		p.Release(res)
		if res.A != nil {
			t.Fatal("a released result still holds the caller's A")
		}
	}
	if _, err := p.SolveOnInto(nil, witnessOf(t, c, l, 0), Hints{}, a[:n-1], b, cv, nil); err == nil {
		t.Fatal("A one element short accepted")
	}
	// The wires into the caller's memory too: W is that memory, and the
	// pool keeps nothing of it; the next solve without it gets a W again.
	wv := make(fr.Vector, p.Wires())
	res, err := p.SolveOnInto(nil, witnessOf(t, c, l, 1), Hints{}, a, b, cv, wv)
	if err != nil {
		t.Fatal(err)
	}
	want, err := fresh.Solve(witnessOf(t, c, l, 1))
	if err != nil {
		t.Fatal(err)
	}
	if &res.W[0] != &wv[0] || firstDiff(res.W, want.W) >= 0 || firstDiff(res.C, want.C) >= 0 {
		t.Fatal("a solve into the caller's W: not that vector, or other values")
	}
	p.Release(res)
	if res.W != nil || len(p.freeW) != 1 || p.freeW[0].W != nil {
		t.Fatal("the pool kept the caller's W")
	}
	if res, err = p.SolveOnInto(nil, witnessOf(t, c, l, 0), Hints{}, a, b, cv, nil); err != nil || len(res.W) != p.Wires() || &res.W[0] == &wv[0] {
		t.Fatalf("a solve after a lent W got no W of its own (%v)", err)
	}
	p.Release(res)
	if _, err := p.SolveOnInto(nil, witnessOf(t, c, l, 0), Hints{}, a, b, cv, wv[1:]); err == nil {
		t.Fatal("W one element short accepted")
	}
	p.ReserveW(3, false)
	if len(p.freeW) != 3 || p.freeW[2].A != nil || len(p.freeW[2].W) != p.Wires() {
		t.Fatalf("ReserveW(3): %d results of W alone ready", len(p.freeW))
	}
	p.ReserveW(4, true)
	if len(p.freeW) != 4 || p.freeW[3].W != nil || len(p.freeW[3].kind) != p.Wires() {
		t.Fatalf("ReserveW(4, lent W): %d results ready, the last with %d wires", len(p.freeW), len(p.freeW[3].W))
	}
	// A plain solve after them still gets vectors of its own.
	res, err = p.Solve(witnessOf(t, c, l, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.A) != n || &res.A[0] == &a[0] {
		t.Fatal("a plain solve got no A of its own")
	}
}

// A program holds its terms in a slice of their size, not of the call
// data's bound (about twice as many for porep-sha: 4.5 GiB at 2^27).
func TestProgramHoldsItsTermsOnly(t *testing.T) {
	for _, name := range []string{"porep-sha", "mimc", "sha"} {
		r, _, _ := compile(t, name, 1<<14)
		p, err := Compile(r)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.terms) == 0 || cap(p.terms) > len(p.terms)+len(p.terms)/8 {
			t.Errorf("%s: %d terms in a slice of %d", name, len(p.terms), cap(p.terms))
		}
	}
}

// A run calls its yield every yieldOps ops (a lane's group gives its core to
// the lanes due earlier meanwhile), and solves as without it.
func TestRunYields(t *testing.T) {
	p, _, c, l := program(t, "porep-sha", 1<<14)
	w := witnessOf(t, c, l, 0)
	want, err := p.Solve(w)
	if err != nil {
		t.Fatal(err)
	}
	res := p.get()
	res.W[0].SetOne()
	copy(res.W[1:], w)
	(&values{w: res.W, kind: res.kind}).mark(0, uint32(1+len(w)))
	yields := 0
	if err := p.runYielding(res, 0, len(p.ops), Hints{}, func() { yields++ }); err != nil {
		t.Fatal(err)
	}
	if n := (len(p.ops) + yieldOps - 1) / yieldOps; yields != n {
		t.Fatalf("%d yields over %d ops, want %d", yields, len(p.ops), n)
	}
	if i := firstDiff(res.W, want.W); i >= 0 {
		t.Fatalf("W differs at %d from the solve without yields", i)
	}
}
