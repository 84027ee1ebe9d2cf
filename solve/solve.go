// Package solve is cuzk's witness solver for gnark's BLS12-381 R1CS.
//
// gnark's own solver (cs.R1CS.Solve) decodes every instruction from the
// system's compressed call data on each solve, finds out at run time which
// wire of a constraint is the unknown one, and keeps an atomic count of the
// wires it set. None of that depends on the witness: which wire a constraint
// solves for, and in which order, is fixed by the circuit. Compile does that
// work once per circuit and lays the instructions out flat; Solve then only
// evaluates linear expressions and multiplies. The result is the same as
// gnark's: every wire's value and the evaluations A, B, C of the constraints'
// three linear expressions (TestMatchesGnark checks it value for value).
//
// Compile refuses what it does not handle (ErrUnsupported): blueprints other
// than gnark's generic R1C and hint ones (lookups, GKR) and systems it cannot
// order. Callers then use gnark's solver. Hints come from gnark's registry
// and from the options Compile is given (solver.WithHints); SolveWith takes
// more per solve, which is how the prover computes gnark's commitments. A
// hint found in none of them fails the solve with ErrMissingHint, naming it.
package solve

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	csolver "github.com/consensys/gnark/constraint/solver"

	"github.com/cuzk/cuzk/internal/par"
)

// ErrUnsupported is returned by Compile for systems this solver does not
// handle; gnark's solver handles them.
var ErrUnsupported = errors.New("not supported by cuzk's solver")

// ErrMissingHint says the circuit calls a hint that was not given to the
// solver (gnark's registry, solver.WithHints, or SolveWith's hints).
var ErrMissingHint = errors.New("hint is not registered")

// ErrUnsatisfied wraps a witness that does not satisfy a constraint.
var ErrUnsatisfied = errors.New("constraint is not satisfied")

// term is coef·wire, coef an index into the system's coefficients. Constant
// terms are rewritten as coef·(wire 0), the R1CS's constant one.
type term struct{ coef, wire uint32 }

const (
	opR1C = iota
	opHint
)

// Where a constraint's unknown wire sits.
const (
	inNone = iota
	inL
	inR
	inO
)

// op is one instruction. For an R1C, L is consts[kl] plus the terms
// terms[l:r], R is consts[kr] plus terms[r:o] and O is consts[ko] plus
// terms[o:end], all without the unknown term (consts[0] is zero: no
// constant); sl and sr are the shapes of L and R. x is the unknown wire and
// xcoef its coefficient, whose inverse is in inv unless it is ±1. For a hint,
// cid indexes hints.
type op struct {
	kind, at     uint8
	sl, sr       uint8
	last         bool // the last op of its level (see division)
	cid          uint32
	l, r, o, end uint32
	kl, kr, ko   uint32
	x, xcoef     uint32
}

// Shapes of a linear expression, for the common ones to skip the general loop.
const (
	leGeneral   = iota
	leWire      // one wire, coefficient 1, no constant
	leConstWire // a constant plus one wire with coefficient 1
	leTerm      // a constant (maybe zero) plus one term: 1 − b, 2·x
)

type hint struct {
	fn      csolver.Hint // nil: not registered at Compile
	id      csolver.HintID
	name    string
	std     stdHint      // gnark's std hint done without big.Int (see runStd)
	table   *lookupTable // gnark's lookup count, done without big.Int (see countLookups)
	inputs  [][]term
	out0, n uint32
}

// nBitsHint is the name of gnark's bit decomposition hint (api.ToBinary).
const nBitsHint = "github.com/consensys/gnark/std/math/bits.nBits"

// countHint is the name of the hint of gnark's log-derivative arguments
// (std/internal/logderivarg) that counts how often each table entry is
// queried: the inputs are the table's length, the row width, the table and
// the queries; output i is the count of entry i.
const countHint = "github.com/consensys/gnark/std/internal/logderivarg.countHint"

// lookupTable is a countHint's table when its entries are constants, rows
// of one element and no two alike, as in gnark's std lookups (uints'
// byte operations, the range checks): its index is built once, at Compile.
type lookupTable struct {
	index   map[fr.Element]uint32 // entry → its position
	queries int                   // the index of the first query among the hint's inputs
}

// segment is a run of ops solved in order, or, when parallel, one level of
// independent ops solved on several cores.
type segment struct {
	lo, hi   int
	parallel bool
	// groups, when set, are the bounds of runs that share no wire (see
	// parts.go), each solved in order on its own core: [groups[k],
	// groups[k+1]).
	groups []int
}

// Program is an R1CS compiled for solving. It is immutable and may be used by
// several goroutines at once.
type Program struct {
	nbWires, nbConstraints int
	nbPublic, nbSecret     int // as in the system, the constant wire included in nbPublic
	coefs                  []fr.Element
	small                  []int64               // coefficient id → its value when small, else notSmall (see eval)
	consts                 []fr.Element          // the constant parts of linear expressions; consts[0] is zero
	inv                    map[uint32]fr.Element // coefficient id → its inverse, for unknowns' coefficients other than ±1
	terms                  []term
	ops                    []op
	hints                  []hint
	segs                   []segment
	q                      *big.Int

	// free holds released results for Solve to reuse. It never holds more
	// than were in use at once, and keeps them: a sync.Pool would lose them
	// at every collection, and a new 2^20 result is 128 MiB to fault in and
	// zero (half again the time of a solve on the GPU machine).
	mu    sync.Mutex
	free  []*Result
	freeW []*Result // without A, B and C (SolveOnInto's)
}

// parallelLevel is the size from which a level's ops are spread over cores.
// Below it the cost of starting goroutines is more than the work.
const parallelLevel = 2048

// Compile lays out r for solving, with the hints of gnark's registry and of
// opts (gnark's solver options; only the hints are used). A system whose
// instructions do not decode (gnark's decoders panic on them) is refused
// with ErrUnsupported, not a panic.
func Compile(r *cs.R1CS, opts ...csolver.Option) (p *Program, err error) {
	defer func() {
		if v := recover(); v != nil {
			p, err = nil, fmt.Errorf("%w: the system does not decode: %v", ErrUnsupported, v)
		}
	}()
	return layOut(r, opts)
}

func layOut(r *cs.R1CS, opts []csolver.Option) (*Program, error) {
	if r.Type != constraint.SystemR1CS {
		return nil, fmt.Errorf("%w: not an R1CS", ErrUnsupported)
	}
	if r.GkrInfo.Is() {
		return nil, fmt.Errorf("%w: GKR", ErrUnsupported)
	}
	cfg, err := csolver.NewConfig(opts...)
	if err != nil {
		return nil, fmt.Errorf("solver options: %w", err)
	}
	p := &Program{
		nbWires:       r.GetNbPublicVariables() + r.GetNbSecretVariables() + r.GetNbInternalVariables(),
		nbConstraints: r.GetNbConstraints(),
		nbPublic:      r.GetNbPublicVariables(),
		nbSecret:      r.GetNbSecretVariables(),
		coefs:         r.Coefficients,
		consts:        make([]fr.Element, 1),
		inv:           map[uint32]fr.Element{},
		q:             ecc.BLS12_381.ScalarField(),
	}
	p.small = smallCoefs(p.coefs)
	solved := make([]bool, p.nbWires)
	for i := 0; i < p.nbPublic+p.nbSecret; i++ {
		solved[i] = true
	}
	var c constraint.R1C
	var h constraint.HintMapping
	seqStart := -1
	// flush ends the sequential segment, if any, at op end.
	flush := func(end int) {
		if seqStart >= 0 && seqStart < end {
			p.segs = append(p.segs, segment{lo: seqStart, hi: end})
		}
		seqStart = -1
	}
	// Sized once: growing them by append is most of Compile's time.
	p.ops = make([]op, 0, len(r.Instructions))
	p.terms = make([]term, 0, len(r.CallData)/2)
	var newly []uint32
	constIdx := map[fr.Element]uint32{}
	for _, level := range r.Levels {
		// Within a level no op depends on another, so the order of
		// solving is the level's and whatever order runs them in parallel.
		lo := len(p.ops)
		newly = newly[:0]
		for _, i := range level {
			pi := r.Instructions[i]
			bp := r.Blueprints[pi.BlueprintID]
			inst := pi.Unpack(&r.System)
			switch b := bp.(type) {
			case constraint.BlueprintR1C:
				b.DecompressR1C(&c, inst)
				o, x, err := p.addR1C(inst.ConstraintOffset, &c, solved, constIdx)
				if err != nil {
					return nil, err
				}
				p.ops = append(p.ops, o)
				if o.at != inNone {
					newly = append(newly, x)
				}
			case constraint.BlueprintHint:
				b.DecompressHint(&h, inst)
				// An unknown hint may still come with SolveWith.
				fn := cfg.HintFunctions[h.HintID]
				hh := hint{fn: fn, id: h.HintID, name: hintName(r, h.HintID), out0: h.OutputRange.Start, n: h.OutputRange.End - h.OutputRange.Start}
				fnName := ""
				if fn != nil {
					fnName = hintFuncName(fn)
				}
				hh.std = stdHintOf(fnName, len(h.Inputs), int(hh.n))
				if fnName == countHint {
					hh.table = p.lookupTable(h.Inputs, h.OutputRange.End-h.OutputRange.Start)
				}
				for _, in := range h.Inputs {
					ts := make([]term, 0, len(in))
					for _, t := range in {
						tt := termOf(t)
						if !solved[tt.wire] {
							return nil, fmt.Errorf("%w: hint %s reads wire %d before it is solved", ErrUnsupported, hh.name, tt.wire)
						}
						ts = append(ts, tt)
					}
					hh.inputs = append(hh.inputs, ts)
				}
				if int(h.OutputRange.End) > p.nbWires || h.OutputRange.End < h.OutputRange.Start {
					return nil, fmt.Errorf("%w: hint %s writes wires [%d, %d) of %d", ErrUnsupported, hh.name, h.OutputRange.Start, h.OutputRange.End, p.nbWires)
				}
				for w := h.OutputRange.Start; w < h.OutputRange.End; w++ {
					newly = append(newly, w)
				}
				p.ops = append(p.ops, op{kind: opHint, cid: uint32(len(p.hints))})
				p.hints = append(p.hints, hh)
			default:
				return nil, fmt.Errorf("%w: blueprint %T", ErrUnsupported, bp)
			}
		}
		if len(p.ops) > lo {
			p.ops[len(p.ops)-1].last = true
		}
		for _, w := range newly {
			if solved[w] {
				return nil, fmt.Errorf("%w: wire %d is solved twice", ErrUnsupported, w)
			}
			solved[w] = true
		}
		if len(level) >= parallelLevel {
			flush(lo) // this level's ops are not the segment's
			p.segs = append(p.segs, segment{lo: lo, hi: len(p.ops), parallel: true})
		} else if seqStart < 0 {
			seqStart = lo
		}
	}
	flush(len(p.ops))
	// SolveInto writes every element of A, B and C once: each constraint
	// must be one R1C op.
	seen := make([]bool, p.nbConstraints)
	for _, o := range p.ops {
		if o.kind != opR1C {
			continue
		}
		if int(o.cid) >= len(seen) || seen[o.cid] {
			return nil, fmt.Errorf("%w: constraint %d is out of range or in two instructions", ErrUnsupported, o.cid)
		}
		seen[o.cid] = true
	}
	for c, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("%w: constraint %d is in no instruction", ErrUnsupported, c)
		}
	}
	for w, ok := range solved {
		if !ok {
			return nil, fmt.Errorf("%w: wire %d is never solved", ErrUnsupported, w)
		}
	}
	p.splitSegments(compileCores())
	// The terms were sized by the call data, about twice what they take
	// (porep-sha: 5.5 M terms a million constraints in room for 10.2 M):
	// 4.5 GiB held for nothing at 2^27.
	if cap(p.terms) > len(p.terms)+len(p.terms)/8 {
		p.terms = slices.Clone(p.terms)
	}
	return p, nil
}

// lookupTable returns the table of a countHint of these inputs and n
// outputs, or nil where gnark's hint must run: a table that is not made of
// constants, rows of more than one element, a duplicate entry (gnark's hint
// then fails the solve), or inputs that are not what countHint takes.
func (p *Program) lookupTable(inputs []constraint.LinearExpression, n uint32) *lookupTable {
	constant := func(le constraint.LinearExpression) (fr.Element, bool) {
		var k fr.Element
		for _, t := range le {
			tt := termOf(t)
			if tt.wire != 0 || int(tt.coef) >= len(p.coefs) {
				return k, false
			}
			k.Add(&k, &p.coefs[tt.coef])
		}
		return k, true
	}
	if len(inputs) < 2 {
		return nil
	}
	nbTable, ok1 := constant(inputs[0])
	nbRow, ok2 := constant(inputs[1])
	if !ok1 || !ok2 || !nbRow.IsOne() || !nbTable.IsUint64() || nbTable.Uint64() != uint64(n) || n == 0 || len(inputs) <= 2+int(n) {
		return nil
	}
	t := &lookupTable{index: make(map[fr.Element]uint32, n), queries: 2 + int(n)}
	for i, le := range inputs[2:t.queries] {
		v, ok := constant(le)
		if !ok {
			return nil
		}
		if _, dup := t.index[v]; dup {
			return nil
		}
		t.index[v] = uint32(i)
	}
	return t
}

// hintName is the name the circuit recorded for a hint when it was compiled
// (gnark keeps them to report missing hints), or its id.
func hintName(r *cs.R1CS, id csolver.HintID) string {
	if name, ok := r.MHintsDependencies[id]; ok {
		return name
	}
	return fmt.Sprintf("#%d", id)
}

// termOf rewrites a constant term as a multiple of the constant-one wire.
func termOf(t constraint.Term) term {
	if t.IsConstant() {
		return term{coef: t.CID, wire: 0}
	}
	return term{coef: t.CID, wire: t.VID}
}

// addR1C lays out one constraint: its terms, with the one unsolved wire (if
// any) taken out. solved is the state before the constraint's level.
func (p *Program) addR1C(cid uint32, c *constraint.R1C, solved []bool, constIdx map[fr.Element]uint32) (op, uint32, error) {
	o := op{kind: opR1C, cid: cid}
	var x term
	// add appends le's terms but the unknown one and the constants, which
	// it sums into consts; it returns the constant's index and the shape.
	add := func(le constraint.LinearExpression, at uint8) (uint32, uint8, error) {
		lo := len(p.terms)
		var k fr.Element
		hasK := false
		for _, t := range le {
			tt := termOf(t)
			if int(tt.wire) >= len(solved) || int(tt.coef) >= len(p.coefs) {
				return 0, 0, fmt.Errorf("%w: constraint %d names wire %d of %d, coefficient %d of %d", ErrUnsupported, cid, tt.wire, len(solved), tt.coef, len(p.coefs))
			}
			if tt.wire == 0 { // the constant one
				k.Add(&k, &p.coefs[tt.coef])
				hasK = true
				continue
			}
			if solved[tt.wire] {
				p.terms = append(p.terms, tt)
				continue
			}
			if o.at != inNone {
				return 0, 0, fmt.Errorf("%w: constraint %d has more than one unsolved wire", ErrUnsupported, cid)
			}
			o.at, x = at, tt
		}
		ki := uint32(0)
		if hasK && !k.IsZero() {
			// Circuits repeat their constants (a hash's round constants):
			// one entry each keeps the table small and in cache.
			var ok bool
			if ki, ok = constIdx[k]; !ok {
				ki = uint32(len(p.consts))
				p.consts = append(p.consts, k)
				constIdx[k] = ki
			}
		}
		shape := uint8(leGeneral)
		if ts := p.terms[lo:]; len(ts) == 1 {
			shape = leTerm
			if ts[0].coef == constraint.CoeffIdOne {
				shape = leWire
				if ki != 0 {
					shape = leConstWire
				}
			}
		}
		return ki, shape, nil
	}
	var err error
	o.l = uint32(len(p.terms))
	if o.kl, o.sl, err = add(c.L, inL); err != nil {
		return o, 0, err
	}
	o.r = uint32(len(p.terms))
	if o.kr, o.sr, err = add(c.R, inR); err != nil {
		return o, 0, err
	}
	o.o = uint32(len(p.terms))
	if o.ko, _, err = add(c.O, inO); err != nil {
		return o, 0, err
	}
	o.end = uint32(len(p.terms))
	if o.at == inNone {
		return o, 0, nil
	}
	o.x, o.xcoef = x.wire, x.coef
	switch x.coef {
	case constraint.CoeffIdOne, constraint.CoeffIdMinusOne:
	case constraint.CoeffIdZero:
		return o, 0, fmt.Errorf("%w: constraint %d solves for a wire with coefficient 0", ErrUnsupported, cid)
	default:
		if _, ok := p.inv[x.coef]; !ok {
			var v fr.Element
			v.Inverse(&p.coefs[x.coef])
			p.inv[x.coef] = v
		}
	}
	return o, x.wire, nil
}

// Constraints is the number of constraints of the compiled system.
func (p *Program) Constraints() int { return p.nbConstraints }

// Wires is the number of wires of the compiled system.
func (p *Program) Wires() int { return p.nbWires }

// Result is a solved witness: the value of every wire, and A, B, C, the
// values of each constraint's L, R and O.
type Result struct {
	W, A, B, C fr.Vector

	kind []uint8 // the kinds of W's values (see values)
	// lent: A, B and C are the caller's (SolveOnInto); Release keeps W only.
	lent bool
	// lentW: W is the caller's too; Release keeps neither.
	lentW bool
}

// Solve solves the system for a witness laid out as gnark's: the public
// inputs without the constant wire, then the secret inputs. The vectors may
// be ones an earlier result gave back by Release.
func (p *Program) Solve(witness fr.Vector) (*Result, error) {
	return p.SolveWith(witness, nil)
}

// SolveWith is Solve with hints that replace or add to those Compile knew,
// by id: gnark's solver.OverrideHint, per solve. The functions may be called
// from several goroutines at once when their hints share a level.
func (p *Program) SolveWith(witness fr.Vector, hints map[csolver.HintID]csolver.Hint) (*Result, error) {
	return p.SolveHints(witness, Hints{Gnark: hints})
}

// NativeHint is a hint over field elements: in holds its inputs' values,
// and it sets every element of out. It saves the conversions to and from
// big.Int of gnark's hints, which cost more than the hint itself when a
// hint has many inputs (a commitment's hundreds of thousands) or is called
// hundreds of thousands of times (gnark's std byte operations). It may be
// called from several goroutines at once when its hints share a level.
type NativeHint func(in, out []fr.Element) error

// Hints are what a solve is given beside the hints Compile knew, by id:
// gnark's hints (as solver.OverrideHint gives them) and native ones, which
// take the place of gnark's for the same id.
type Hints struct {
	Gnark  map[csolver.HintID]csolver.Hint
	Native map[csolver.HintID]NativeHint
}

// SolveHints is Solve with hints that replace or add to those Compile knew.
func (p *Program) SolveHints(witness fr.Vector, hints Hints) (*Result, error) {
	return p.SolveOn(nil, witness, hints)
}

// SolveOn is SolveHints with the solve's parallel work (its groups and its
// wide levels) run in l's place in the queue for the host's cores (nil: on
// goroutines of its own).
func (p *Program) SolveOn(l *par.Lane, witness fr.Vector, hints Hints) (*Result, error) {
	res := p.get()
	if err := p.solveInto(l, witness, res, hints); err != nil {
		p.Release(res)
		return nil, err
	}
	return res, nil
}

// SolveOnInto is SolveOn writing A, B and C into the vectors given, each of
// Constraints() elements (a backend's staging memory, so that they are not
// copied there afterwards): the result's A, B and C are those vectors, and
// Release gives back only its W for reuse. A w that is not nil (Wires()
// elements) is the result's W too, and Release keeps nothing of it.
func (p *Program) SolveOnInto(l *par.Lane, witness fr.Vector, hints Hints, a, b, c, w fr.Vector) (*Result, error) {
	if len(a) != p.nbConstraints || len(b) != p.nbConstraints || len(c) != p.nbConstraints {
		return nil, fmt.Errorf("A, B, C vectors of %d, %d, %d elements for %d constraints", len(a), len(b), len(c), p.nbConstraints)
	}
	if w != nil && len(w) != p.nbWires {
		return nil, fmt.Errorf("a wire vector of %d elements for %d wires", len(w), p.nbWires)
	}
	res := p.getW()
	res.A, res.B, res.C, res.lent = a, b, c, true
	switch {
	case w != nil:
		// The pool's own W, if it had one, is dropped: the caller's
		// memory holds the wires from now on.
		res.W, res.lentW = w, true
	case res.W == nil:
		res.W = make(fr.Vector, p.nbWires)
	}
	if err := p.solveInto(l, witness, res, hints); err != nil {
		p.Release(res)
		return nil, err
	}
	return res, nil
}

// getW is a result for SolveOnInto: one that a SolveOnInto gave back, else
// any other, whose A, B and C are dropped (the solves into staging memory do
// not need them), else a new one without them.
func (p *Program) getW() *Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.freeW); n > 0 {
		res := p.freeW[n-1]
		p.freeW = p.freeW[:n-1]
		return res
	}
	if n := len(p.free); n > 0 {
		res := p.free[n-1]
		p.free = p.free[:n-1]
		res.A, res.B, res.C = nil, nil, nil
		return res
	}
	return &Result{W: make(fr.Vector, p.nbWires), kind: make([]uint8, p.nbWires)}
}

func (p *Program) get() *Result {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		res := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return res
	}
	p.mu.Unlock()
	return p.newResult()
}

func (p *Program) newResult() *Result {
	return &Result{
		W:    make(fr.Vector, p.nbWires),
		A:    make(fr.Vector, p.nbConstraints),
		B:    make(fr.Vector, p.nbConstraints),
		C:    make(fr.Vector, p.nbConstraints),
		kind: make([]uint8, p.nbWires),
	}
}

// Release gives a result of Solve back for a later Solve to reuse, once
// nothing reads its vectors any more.
func (p *Program) Release(res *Result) {
	if res != nil && res.lent {
		// The A, B and C vectors were the caller's: keep W alone (and not
		// even W when it was the caller's too). A result of another
		// program's size is dropped, never put where a plain solve would
		// write into the caller's memory.
		res.A, res.B, res.C = nil, nil, nil
		if res.lentW {
			res.W, res.lentW = nil, false
		}
		if len(res.kind) != p.nbWires || (res.W != nil && len(res.W) != p.nbWires) {
			return
		}
		p.mu.Lock()
		p.freeW = append(p.freeW, res)
		p.mu.Unlock()
		return
	}
	if res == nil || len(res.W) != p.nbWires || len(res.A) != p.nbConstraints || len(res.B) != p.nbConstraints || len(res.C) != p.nbConstraints {
		return
	}
	p.mu.Lock()
	p.free = append(p.free, res)
	p.mu.Unlock()
}

// Reserve makes sure n results are ready for reuse, so that the first n
// solves at once neither allocate nor fault in their memory: callers reserve
// one per solve they run at once, before timing matters.
func (p *Program) Reserve(n int) {
	p.mu.Lock()
	missing := n - len(p.free)
	p.mu.Unlock()
	for range missing {
		res := p.newResult()
		for _, v := range []fr.Vector{res.W, res.A, res.B, res.C} {
			faultIn(v)
		}
		faultIn(res.kind)
		p.Release(res)
	}
}

// faultIn writes a zero into every page of v, whose elements are zero (W,
// A, B, C and the wires' kinds), so
// that the kernel maps them now. A fresh vector of Go's is memory the kernel
// has promised, not given: each page faults, and is zeroed, on its first
// write, inside whichever solve writes it first. That is about as long
// again as the solve itself (a sha partition at 2^25 took 4.3 s with a
// result of the warm-up's, 7.5 s with a fresh one of 4 GiB, five such beside
// it).
func faultIn[T any](v []T) {
	var zero T
	stride := max(1, os.Getpagesize()/int(unsafe.Sizeof(zero)))
	pages := (len(v) + stride - 1) / stride
	par.Range(pages, 1024, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v[i*stride] = zero
		}
	})
}

// Reusable is the number of results ready for reuse.
// ReserveW is Reserve for SolveOnInto: n results of W alone, whose A, B
// and C the callers give; with lentW, of the wires' kinds alone, for
// callers that give W too.
func (p *Program) ReserveW(n int, lentW bool) {
	p.mu.Lock()
	missing := n - len(p.freeW)
	p.mu.Unlock()
	for range missing {
		res := &Result{kind: make([]uint8, p.nbWires), lent: true, lentW: lentW}
		if !lentW {
			res.W = make(fr.Vector, p.nbWires)
			faultIn(res.W)
		}
		faultIn(res.kind)
		p.Release(res)
	}
}

func (p *Program) Reusable() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// SolveInto is Solve writing into res, whose vectors must have the sizes
// Solve gives them (W: Wires, A, B and C: Constraints). Every element is
// written, so their contents on entry do not matter.
func (p *Program) SolveInto(witness fr.Vector, res *Result) error {
	return p.solveInto(nil, witness, res, Hints{})
}

func (p *Program) solveInto(l *par.Lane, witness fr.Vector, res *Result, hints Hints) error {
	if want := p.nbPublic - 1 + p.nbSecret; len(witness) != want {
		return fmt.Errorf("witness has %d values, the system takes %d", len(witness), want)
	}
	if len(res.W) != p.nbWires || len(res.A) != p.nbConstraints || len(res.B) != p.nbConstraints || len(res.C) != p.nbConstraints {
		return fmt.Errorf("result vectors of %d, %d, %d, %d elements for %d wires and %d constraints",
			len(res.W), len(res.A), len(res.B), len(res.C), p.nbWires, p.nbConstraints)
	}
	if len(res.kind) != p.nbWires {
		res.kind = make([]uint8, p.nbWires)
	}
	res.W[0].SetOne()
	copy(res.W[1:], witness)
	(&values{w: res.W, kind: res.kind}).mark(0, uint32(1+len(witness)))
	for _, s := range p.segs {
		if s.groups != nil {
			if err := p.runGroups(l, res, s.groups, hints); err != nil {
				return err
			}
			continue
		}
		if !s.parallel {
			if err := p.run(res, s.lo, s.hi, hints); err != nil {
				return err
			}
			continue
		}
		if err := p.runParallel(l, res, s.lo, s.hi, hints); err != nil {
			return err
		}
	}
	return nil
}

func (p *Program) runParallel(l *par.Lane, res *Result, lo, hi int, hints Hints) error {
	n := hi - lo
	chunks := max(1, min(runtime.GOMAXPROCS(0), n/(parallelLevel/4)))
	bounds := make([]int, chunks+1)
	for k := range bounds {
		bounds[k] = lo + k*n/chunks
	}
	return p.runGroups(l, res, bounds, hints)
}

// runGroups solves runs [bounds[k], bounds[k+1]) at once, in l's place.
// A run's hints spread over cores of their own (spread), never l's: a
// chunk of the pool must not wait for the pool.
func (p *Program) runGroups(l *par.Lane, res *Result, bounds []int, hints Hints) error {
	errs := make([]error, len(bounds)-1)
	var yield func()
	if l != nil {
		yield = l.Yield // to the partitions due before this one
	}
	l.Range(len(errs), 1, len(errs), func(lo, hi int) { // a chunk a group
		for k := lo; k < hi; k++ {
			errs[k] = p.runYielding(res, bounds[k], bounds[k+1], hints, yield)
		}
	})
	return errors.Join(errs...)
}

// hintIO is a hint's big-integer arguments, reused across the hints of one run.
type hintIO struct{ in, out []*big.Int }

// sized returns nIn inputs, which may be nil (the caller allocates those
// where it sets them: on several cores for the large hints), and nOut
// outputs set to zero.
func (io *hintIO) sized(nIn, nOut int) ([]*big.Int, []*big.Int) {
	if len(io.in) < nIn {
		io.in = append(io.in, make([]*big.Int, nIn-len(io.in))...)
	}
	for len(io.out) < nOut {
		io.out = append(io.out, new(big.Int))
	}
	for _, o := range io.out[:nOut] {
		o.SetUint64(0)
	}
	return io.in[:nIn], io.out[:nOut]
}

// run solves ops[lo:hi] in order; hi ends a level.
//
// An op whose unknown wire is in L or R (the lookups' (challenge − q)·x = 1,
// one per query and table entry) needs a division. Its divisor goes into a
// batch, inverted at once when it is full and at the end of the level (see
// divisions). No op reads a wire of its own level, so the level's other ops
// do not miss the wires that wait.
//
// The kinds of L and R's values (see values) pick the product's way: of
// two bits it is their AND, with no multiplication and no branch on the
// bits, which in a hash are as good as random.
func (p *Program) run(res *Result, lo, hi int, hints Hints) error {
	return p.runYielding(res, lo, hi, hints, nil)
}

// yieldOps is how many ops runYielding solves between two calls of its
// yield: about a third of a millisecond of porep-sha's solve.
const yieldOps = 1 << 12

// runYielding is run calling yield, when not nil, every yieldOps ops: a
// group of a lane's solve is one chunk of the pool, tens of milliseconds
// long, and lets the lanes due before its own have the core meanwhile
// (par.Lane.Yield).
func (p *Program) runYielding(res *Result, lo, hi int, hints Hints, yield func()) error {
	v := values{w: res.W, kind: res.kind}
	w, kind, terms := res.W, res.kind, p.terms
	var io *hintIO     // made at the first hint
	var div *divisions // taken at the first division
	defer func() {
		if div != nil {
			div.n = 0 // an error leaves divisions behind
			divisionPool.Put(div)
		}
	}()
	for i := lo; i < hi; i++ {
		if i&(yieldOps-1) == 0 && yield != nil {
			yield()
		}
		if div != nil && div.n > 0 && i > lo && p.ops[i-1].last {
			p.divide(res, div)
		}
		o := &p.ops[i]
		if o.kind == opHint {
			if io == nil {
				io = &hintIO{}
			}
			if err := p.runHint(&p.hints[o.cid], &v, io, hints); err != nil {
				return err
			}
			continue
		}
		a, b, c := &res.A[o.cid], &res.B[o.cid], &res.C[o.cid]
		// L and R by shape, written out twice: a helper is not inlined,
		// and the call costs a tenth of a constraint. A bit's value comes
		// from its kind, without reading its 32 bytes.
		var ka, kb uint8
		switch o.sl {
		case leWire:
			x := terms[o.l].wire
			if ka = kind[x]; ka < kindAny {
				*a = bitValue[ka]
			} else {
				*a = w[x]
			}
		case leConstWire:
			// A wire of any value plus a constant is said to be any
			// value: kindAny is never wrong, and mimc's rounds
			// (x + k)·… need no kindOf on their chain.
			x := terms[o.l].wire
			if k := kind[x]; k < kindAny {
				a.Add(&p.consts[o.kl], &bitValue[k])
				ka = kindOf(a)
			} else {
				a.Add(&p.consts[o.kl], &w[x])
				ka = kindAny
			}
		case leTerm:
			// a bit's term from a table, as eval would, without its call
			t := terms[o.l]
			if k, s := kind[t.wire], p.small[t.coef]; k < kindAny && s >= -smallSums && s <= smallSums {
				a.Add(&p.consts[o.kl], &smallValue[s*int64(k)+smallSums])
				ka = kindOf(a)
			} else {
				ka = p.eval(o.kl, terms[o.l:o.r], &v, a)
			}
		default:
			ka = p.eval(o.kl, terms[o.l:o.r], &v, a)
		}
		switch o.sr {
		case leWire:
			x := terms[o.r].wire
			if kb = kind[x]; kb < kindAny {
				*b = bitValue[kb]
			} else {
				*b = w[x]
			}
		case leConstWire:
			x := terms[o.r].wire
			if k := kind[x]; k < kindAny {
				b.Add(&p.consts[o.kr], &bitValue[k])
				kb = kindOf(b)
			} else {
				b.Add(&p.consts[o.kr], &w[x])
				kb = kindAny
			}
		case leTerm:
			t := terms[o.r]
			if k, s := kind[t.wire], p.small[t.coef]; k < kindAny && s >= -smallSums && s <= smallSums {
				b.Add(&p.consts[o.kr], &smallValue[s*int64(k)+smallSums])
				kb = kindOf(b)
			} else {
				kb = p.eval(o.kr, terms[o.r:o.o], &v, b)
			}
		default:
			kb = p.eval(o.kr, terms[o.r:o.o], &v, b)
		}
		if o.at == inO && o.o == o.end && o.ko == 0 && o.xcoef == constraint.CoeffIdOne {
			// x = a·b, the most common constraint: nothing else to add.
			var kc uint8
			switch {
			case ka|kb < kindAny:
				kc = ka & kb
				*c = bitValue[kc]
			case ka&kb == kindAny:
				// mimc's chains: no call to mulKinds, which is not
				// inlined; the product of two values of any kind is
				// said to be any.
				c.Mul(a, b)
				kc = kindAny
			default:
				kc = mulKinds(c, a, b, ka, kb)
			}
			w[o.x] = *c
			kind[o.x] = kc
			continue
		}
		var kc uint8
		if o.o == o.end && o.ko == 0 {
			// O is zero: the checks of bits, b·(1 − b) = 0
			*c = fr.Element{}
		} else {
			kc = p.eval(o.ko, terms[o.o:o.end], &v, c)
		}
		var t fr.Element // the unknown term's value, coef·x
		switch o.at {
		case inNone:
			// A check, a·b = c: in circuits of bits most are b·(1 − b) = 0.
			if ka|kb|kc < kindAny {
				if ka&kb != kc {
					return p.unsatisfied(o.cid, a, b, c)
				}
				continue
			}
			var ab fr.Element
			if mulKinds(&ab, a, b, ka, kb); !ab.Equal(c) {
				return p.unsatisfied(o.cid, a, b, c)
			}
			continue
		case inO:
			// c holds O without x; O with x is a·b.
			var ab fr.Element
			mulKinds(&ab, a, b, ka, kb)
			t.Sub(&ab, c)
			*c = ab
		case inL, inR:
			g := b // the other factor
			if o.at == inR {
				g = a
			}
			if g.IsZero() {
				// Any x solves 0 = c if c is zero: gnark leaves it at 0.
				if !c.IsZero() {
					return p.unsatisfied(o.cid, a, b, c)
				}
				w[o.x].SetZero()
				kind[o.x] = kindZero
				continue
			}
			if div == nil {
				div = divisionPool.Get().(*divisions)
			}
			if div.add(uint32(i), g) {
				p.divide(res, div)
			}
			continue
		}
		p.setUnknown(&v, o, &t)
	}
	if div != nil && div.n > 0 {
		p.divide(res, div)
	}
	return nil
}

// Kinds of value, one byte per wire (values.kind): 0 and 1 are themselves.
const (
	kindZero uint8 = iota
	kindOne
	kindAny // any value, 0 and 1 included
)

// bitValue is the value of kinds 0 and 1.
var bitValue = [2]fr.Element{{}, one}

// values are a solve's wires: their values w and beside them their kinds.
// A wire of kind 0 or 1 has that value; one of kindAny may have any (a
// value of 0 or 1 said to be any only takes the longer way). A
// circuit of bits reads its bits from kind, a byte each against a value's
// 32 (porep-sha at 2^22: 3 MiB of kinds, 96 MiB of values), so that what
// it reads stays in cache where the values cannot.
type values struct {
	w    fr.Vector
	kind []uint8
}

// kindOf is the kind of x: 0, 1 or kindAny, without a branch on x.
func kindOf(x *fr.Element) uint8 {
	k := kindAny
	if x[0]|x[1]|x[2]|x[3] == 0 {
		k = kindZero
	}
	if (x[0]^one[0])|(x[1]^one[1])|(x[2]^one[2])|(x[3]^one[3]) == 0 {
		k = kindOne
	}
	return k
}

// mark sets the kinds of wires [lo, hi) from their values.
func (v *values) mark(lo, hi uint32) {
	for i := lo; i < hi; i++ {
		v.kind[i] = kindOf(&v.w[i])
	}
}

// mulKinds sets z to a·b, of kinds ka and kb, and returns z's kind: a
// multiplication only where neither factor is 0 or 1.
func mulKinds(z, a, b *fr.Element, ka, kb uint8) uint8 {
	switch {
	case ka == kindZero || kb == kindOne:
		*z = *a
		return ka
	case kb == kindZero || ka == kindOne:
		*z = *b
		return kb
	}
	z.Mul(a, b)
	return kindOf(z)
}

// setUnknown sets o's unknown wire from t, the value of its term coef·x.
func (p *Program) setUnknown(v *values, o *op, t *fr.Element) {
	switch o.xcoef {
	case constraint.CoeffIdOne:
	case constraint.CoeffIdMinusOne:
		t.Neg(t)
	default:
		inv := p.inv[o.xcoef]
		t.Mul(t, &inv)
	}
	v.w[o.x] = *t
	v.kind[o.x] = kindOf(t)
}

// divisionBatch is the most divisions inverted together: one inversion
// costs about a hundred multiplications, so at 1,024 it is a tenth of a
// multiplication per division, and the batch (36 KiB) stays in cache.
const divisionBatch = 1024

// divisions is a batch of unknown factors waiting for the inverse of their
// divisor, the other factor g. Montgomery's trick inverts them together:
// with prod[i] = g_0·…·g_i, one inversion of prod[n−1] and three
// multiplications per division give every 1/g_i.
type divisions struct {
	n    int
	ops  [divisionBatch]uint32
	prod [divisionBatch]fr.Element
}

var divisionPool = sync.Pool{New: func() any { return new(divisions) }}

// add queues op i, whose divisor g is not zero, and reports whether the
// batch is full.
func (d *divisions) add(i uint32, g *fr.Element) bool {
	d.ops[d.n] = i
	if d.n == 0 {
		d.prod[0] = *g
	} else {
		d.prod[d.n].Mul(&d.prod[d.n-1], g)
	}
	d.n++
	return d.n == divisionBatch
}

// divide solves the batch's ops, f·g = c for the unknown term of the factor
// f, and empties it: the factor is c/g, the term c/g minus f without it.
func (p *Program) divide(res *Result, d *divisions) {
	var inv fr.Element // 1/(g_0·…·g_i) at step i
	inv.Inverse(&d.prod[d.n-1])
	for i := d.n - 1; i >= 0; i-- {
		o := &p.ops[d.ops[i]]
		f, g := &res.A[o.cid], &res.B[o.cid]
		if o.at == inR {
			f, g = g, f
		}
		var q fr.Element // c/g
		if i > 0 {
			q.Mul(&inv, &d.prod[i-1]) // 1/g_i
			inv.Mul(&inv, g)
			q.Mul(&q, &res.C[o.cid])
		} else {
			q.Mul(&inv, &res.C[o.cid])
		}
		var t fr.Element
		t.Sub(&q, f)
		*f = q
		p.setUnknown(&values{w: res.W, kind: res.kind}, o, &t)
	}
	d.n = 0
}

// smallCoef bounds the coefficients eval sums as integers: fewer than
// maxSummed terms of at most 2^40 each cannot overflow an int64.
const (
	smallCoef = 1 << 40
	maxSummed = 1 << 22
	notSmall  = math.MinInt64
)

// smallCoefs gives each coefficient its value as an integer when it is
// within ±smallCoef, else notSmall.
func smallCoefs(coefs []fr.Element) []int64 {
	small := make([]int64, len(coefs))
	for i := range coefs {
		small[i] = notSmall
		var neg fr.Element
		neg.Neg(&coefs[i])
		switch {
		case coefs[i].IsUint64() && coefs[i].Uint64() < smallCoef:
			small[i] = int64(coefs[i].Uint64())
		case neg.IsUint64() && neg.Uint64() < smallCoef:
			small[i] = -int64(neg.Uint64())
		}
	}
	return small
}

// one is 1 in Montgomery form.
var one = func() (e fr.Element) { e.SetOne(); return }()

// smallSums is the bound of the integer sums whose field element is in a
// table, smallValue[s+smallSums]: the short expressions of circuits of
// bits (1 − b, x + y − 2xy) sum to a few units.
const smallSums = 64

var smallValue = func() (t [2*smallSums + 1]fr.Element) {
	for i := range t {
		t[i].SetInt64(int64(i - smallSums))
	}
	return
}()

// eval sets r to consts[k] plus the sum of the terms, and returns r's kind
// (computed on the sum before it is stored, not read back).
//
// In circuits of bits most values are 0 or 1 and most coefficients small
// (±1, −2, the powers of two that pack bits into words). Such terms are
// summed as an integer from the wires' kinds: no field operation, no
// branch on the bit, and no read of the value. The sum enters the field
// once, at the end. Other terms take the field's operations.
func (p *Program) eval(k uint32, ts []term, v *values, r *fr.Element) uint8 {
	acc := p.consts[k]
	if len(ts) >= maxSummed {
		for _, t := range ts {
			p.addTerm(&acc, t, &v.w[t.wire])
		}
		*r = acc
		return kindOf(&acc)
	}
	var sum int64
	kinds, small := v.kind, p.small // loaded once: Go does not hoist them
	for _, t := range ts {
		kd := kinds[t.wire]
		s := small[t.coef]
		if kd == kindAny || s == notSmall {
			switch {
			case kd == kindZero:
			case kd == kindOne:
				acc.Add(&acc, &p.coefs[t.coef])
			case t.coef == constraint.CoeffIdOne: // addTerm's, without the call
				acc.Add(&acc, &v.w[t.wire])
			case t.coef == constraint.CoeffIdMinusOne:
				acc.Sub(&acc, &v.w[t.wire])
			default:
				p.addTerm(&acc, t, &v.w[t.wire])
			}
			continue
		}
		sum += s * int64(kd)
	}
	switch {
	case sum == 0:
	case sum >= -smallSums && sum <= smallSums:
		acc.Add(&acc, &smallValue[sum+smallSums])
	case sum > 0:
		var e fr.Element
		e.SetUint64(uint64(sum))
		acc.Add(&acc, &e)
	default:
		var e fr.Element
		e.SetUint64(uint64(-sum))
		acc.Sub(&acc, &e)
	}
	*r = acc
	return kindOf(&acc)
}

// addTerm adds coef·x to r.
func (p *Program) addTerm(r *fr.Element, t term, x *fr.Element) {
	switch t.coef {
	case constraint.CoeffIdZero:
	case constraint.CoeffIdOne:
		r.Add(r, x)
	case constraint.CoeffIdMinusOne:
		r.Sub(r, x)
	default:
		switch {
		case x.IsZero():
		case x.IsOne():
			r.Add(r, &p.coefs[t.coef])
		default:
			var m fr.Element
			m.Mul(&p.coefs[t.coef], x)
			r.Add(r, &m)
		}
	}
}

// runHint sets h's outputs, then their kinds.
func (p *Program) runHint(h *hint, v *values, io *hintIO, hints Hints) error {
	if err := p.hintValues(h, v, io, hints); err != nil {
		return err
	}
	v.mark(h.out0, h.out0+h.n)
	return nil
}

func (p *Program) hintValues(h *hint, v *values, io *hintIO, hints Hints) error {
	w := v.w
	if f, ok := hints.Native[h.id]; ok {
		return p.runNativeHint(h, f, v)
	}
	fn := h.fn
	if f, ok := hints.Gnark[h.id]; ok {
		fn = f
	} else if h.table != nil {
		return p.countLookups(h, v)
	} else if h.std != stdNone && p.runStd(h, v) {
		return nil
	}
	if fn == nil {
		return fmt.Errorf("%w: %s (give it to the solver with solver.WithHints)", ErrMissingHint, h.name)
	}
	in, out := io.sized(len(h.inputs), int(h.n))
	spread(len(h.inputs), func(lo, hi int) {
		for i, ts := range h.inputs[lo:hi] {
			var x fr.Element
			p.eval(0, ts, v, &x)
			if in[lo+i] == nil {
				in[lo+i] = new(big.Int)
			}
			x.BigInt(in[lo+i])
		}
	})
	if err := fn(p.q, in, out); err != nil {
		return fmt.Errorf("hint %s: %w", h.name, err)
	}
	for i, o := range out {
		w[h.out0+uint32(i)].SetBigInt(o) // reduces, as gnark's solver does
	}
	return nil
}

// runNativeHint runs f for h: the inputs are evaluated into a slice that f
// may keep (on several cores for a large hint), the outputs are h's wires,
// zeroed first.
func (p *Program) runNativeHint(h *hint, f NativeHint, v *values) error {
	in := make([]fr.Element, len(h.inputs))
	spread(len(h.inputs), func(lo, hi int) {
		for i, ts := range h.inputs[lo:hi] {
			p.eval(0, ts, v, &in[lo+i])
		}
	})
	out := v.w[h.out0 : h.out0+h.n]
	clear(out)
	if err := f(in, out); err != nil {
		return fmt.Errorf("hint %s: %w", h.name, err)
	}
	return nil
}

// hintNames caches gnark's name of a hint function by its address: gnark
// finds it with a regular expression over the symbol, which costs more than
// laying out the hint.
var hintNames sync.Map // uintptr → string

func hintFuncName(fn csolver.Hint) string {
	pc := reflect.ValueOf(fn).Pointer()
	if n, ok := hintNames.Load(pc); ok {
		return n.(string)
	}
	n := csolver.GetHintName(fn)
	hintNames.Store(pc, n)
	return n
}

// countLookups sets a countHint's outputs, how often each table entry is
// queried, as gnark's hint does with big.Int keys, and fails as it does on
// a query that is not in the table.
func (p *Program) countLookups(h *hint, v *values) error {
	queries := h.inputs[h.table.queries:]
	var mu sync.Mutex
	counts := make([]uint32, h.n)
	missing := false
	spread(len(queries), func(lo, hi int) {
		alone := lo == 0 && hi == len(queries) // not spread: count in place
		mine := counts
		if !alone {
			mine = make([]uint32, h.n)
		}
		for _, ts := range queries[lo:hi] {
			var x fr.Element
			p.eval(0, ts, v, &x)
			i, ok := h.table.index[x]
			if !ok {
				mu.Lock()
				missing = true
				mu.Unlock()
				return
			}
			mine[i]++
		}
		if !alone {
			mu.Lock()
			for i, n := range mine {
				counts[i] += n
			}
			mu.Unlock()
		}
	})
	if missing {
		return fmt.Errorf("hint %s: query element not in table", h.name)
	}
	for i, n := range counts {
		v.w[h.out0+uint32(i)].SetUint64(uint64(n))
	}
	return nil
}

// spreadFrom is the number of inputs from which a hint's are read on
// several cores: sha2's lookup counts and its commitment take hundreds of
// thousands, where the rest of their level is a few ops.
const spreadFrom = 1 << 14

// spread calls fn on the chunks of [0, n), on the cores when n is at least
// spreadFrom, else at once on [0, n).
func spread(n int, fn func(lo, hi int)) {
	if n < spreadFrom {
		fn(0, n)
		return
	}
	par.Range(n, spreadFrom/4, 1, fn)
}

func (p *Program) unsatisfied(cid uint32, a, b, c *fr.Element) error {
	return fmt.Errorf("%w: constraint #%d: %s ⋅ %s != %s", ErrUnsatisfied, cid, a.String(), b.String(), c.String())
}
