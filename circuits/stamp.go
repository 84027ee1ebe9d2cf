package circuits

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	"github.com/cuzk/cuzk/internal/par"
)

// A porep-sha system of K challenges is a prelude (the replica id's bits),
// K copies of one challenge's constraints that differ only in their wires,
// and the fill rounds. gnark's compiler is single-threaded and spends about
// 10 µs a constraint (11 minutes at 2^26), so porep-sha compiles K > 2
// challenges by stamping: it compiles one challenge (with and without the
// fill) and two, finds the three sections from their sizes, checks that
// stamping two challenges from the one-challenge system gives exactly the
// two-challenge system gnark compiled (else gnark compiles the whole
// system), and then replays the challenge's
// instructions K times with its wires moved. The result is the system gnark
// would compile, instruction for instruction, wire for wire and level for
// level (TestStampedEqualsCompiled); only the debug information of failed
// assertions is left out.

// errNotStampable says a system does not have the sections stamping needs;
// Compile then uses gnark's compiler.
var errNotStampable = errors.New("porep-sha: system cannot be stamped")

// stampMinChallenges is the fewest challenges stamped: below it gnark's
// compile of the templates would cost as much as the whole system.
const stampMinChallenges = 3

// stampSections is where a one-challenge porep-sha system's parts are:
// instruction and internal-wire counts of the prelude, one challenge and the
// fill, in that order, and its inputs.
type stampSections struct {
	preludeInst, blockInst, fillInst int
	preludeWire, blockWire, fillWire int
	parents, depth, links, fill      int // secret inputs per challenge: 2·parents + depth + links; then fill
}

// groups are the sizes of a challenge's secret inputs, in the order of the
// circuit's fields: its parents, its path, its links.
func (s stampSections) groups() [3]int { return [3]int{2 * s.parents, s.depth, s.links} }

// perChallenge is the number of secret inputs of a challenge: its groups'.
func (s stampSections) perChallenge() int {
	n := 0
	for _, g := range s.groups() {
		n += g
	}
	return n
}

// groupPrefix are the names gnark gives the groups' inputs, up to the
// challenge's index.
var groupPrefix = [3]string{"Parents_", "Paths_", "Links_"}

// compilePoRepSHA compiles a porep-sha shape, by stamping where it has at
// least stampMinChallenges challenges; a system that cannot be stamped
// (errNotStampable) is compiled by gnark, with a warning.
func compilePoRepSHA(sh porepSHAShape) (*cs.R1CS, error) {
	if sh.challenges < stampMinChallenges {
		return compileShape(sh)
	}
	s, err := stampPoRepSHA(sh)
	if errors.Is(err, errNotStampable) {
		slog.Warn("porep-sha: compiling with gnark, which takes minutes at this size", "layout", sh.layout().String(), "reason", err)
		return compileShape(sh)
	}
	return s, err
}

// stampPoRepSHA compiles the templates, checks them and stamps the shape.
func stampPoRepSHA(sh porepSHAShape) (*cs.R1CS, error) {
	start := time.Now()
	one, two, filled := sh, sh, sh
	one.challenges, one.fill = 1, 0
	two.challenges, two.fill = 2, 0
	filled.challenges = 1
	var (
		sys [3]*cs.R1CS
		err [3]error
		wg  sync.WaitGroup
	)
	for i, s := range []porepSHAShape{one, two, filled} {
		wg.Go(func() { sys[i], err[i] = compileShape(s) })
	}
	wg.Wait()
	if e := errors.Join(err[:]...); e != nil {
		return nil, e
	}
	sec, e := porepSHASections(sys[0], sys[1], sys[2], sh)
	if e != nil {
		return nil, e
	}
	// The check: two challenges stamped from one are the two gnark
	// compiled (no fill in either).
	check := sec
	check.fill, check.fillInst, check.fillWire = 0, 0, 0
	got, e := stamp(sys[0], check, 2)
	if e != nil {
		return nil, e
	}
	if e := sameSystem(got, sys[1]); e != nil {
		return nil, fmt.Errorf("%w: two challenges stamped from one differ from gnark's: %v", errNotStampable, e)
	}
	compiled := time.Since(start)
	out, e := stamp(sys[2], sec, sh.challenges)
	if e == nil {
		slog.Debug("porep-sha stamped", "layout", sh.layout().String(), "constraints", out.GetNbConstraints(),
			"templates", compiled.Round(time.Millisecond), "total", time.Since(start).Round(time.Millisecond))
	}
	return out, e
}

// compileShape is gnark's compile of one porep-sha shape.
func compileShape(sh porepSHAShape) (*cs.R1CS, error) {
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, porepSHAEmpty(sh))
	if err != nil {
		return nil, fmt.Errorf("compile porep-sha (%s): %w", sh.layout(), err)
	}
	s, ok := ccs.(*cs.R1CS)
	if !ok {
		return nil, fmt.Errorf("compile porep-sha (%s): not a BLS12-381 R1CS", sh.layout())
	}
	return s, nil
}

// porepSHASections finds the sections from the systems of one challenge,
// two, and one with the fill: a challenge is what the second adds, the
// prelude what is left of the first, the fill what the third adds.
func porepSHASections(one, two, filled *cs.R1CS, sh porepSHAShape) (stampSections, error) {
	inst := func(s *cs.R1CS) int { return len(s.Instructions) }
	wires := func(s *cs.R1CS) int { return s.NbInternalVariables }
	sec := stampSections{
		blockInst: inst(two) - inst(one),
		blockWire: wires(two) - wires(one),
		fillInst:  inst(filled) - inst(one),
		fillWire:  wires(filled) - wires(one),
		parents:   sh.parents, depth: sh.depth, links: sh.linkCount(), fill: sh.fill,
	}
	sec.preludeInst = inst(one) - sec.blockInst
	sec.preludeWire = wires(one) - sec.blockWire
	if sec.preludeInst < 0 || sec.preludeWire < 0 || sec.blockInst <= 0 || sec.fillInst < 0 || sec.fillWire < 0 {
		return sec, fmt.Errorf("%w: sections of %s do not add up", errNotStampable, sh.layout())
	}
	if pub := one.GetNbPublicVariables(); pub != 4 {
		return sec, fmt.Errorf("%w: %d public wires, want 4 (one, replica id, root, challenge)", errNotStampable, pub)
	}
	if n := one.GetNbSecretVariables(); n != sec.perChallenge() {
		return sec, fmt.Errorf("%w: %d secret wires, want %d", errNotStampable, n, sec.perChallenge())
	}
	return sec, nil
}

// stamper moves the wires of a one-challenge system t into a system of k
// challenges: publics one, replica id, root, then the K challenges; secrets
// the K challenges' parents, then their paths, then their links, then the
// fill; internal wires the prelude's, the K challenges', the fill's.
type stamper struct {
	t   *cs.R1CS
	sec stampSections
	k   int // challenges stamped

	tPub, tSec int // the template's inputs
	sPub, sSec int // the stamped system's
}

// Sections of a wire or an instruction.
const (
	inPrelude = iota
	inBlock
	inFill
)

// wire maps template wire v, met in section part (of challenge c), to the
// stamped system's; a wire of another challenge's section cannot be mapped.
func (m *stamper) wire(v uint32, part, c int) (uint32, error) {
	per := m.sec.perChallenge()
	switch w := int(v); {
	case w < m.tPub:
		if w == 3 {
			if part != inBlock {
				return 0, fmt.Errorf("%w: the challenge index outside its challenge", errNotStampable)
			}
			return uint32(3 + c), nil
		}
		return v, nil
	case w < m.tPub+m.tSec:
		s := w - m.tPub
		if s >= per {
			if part != inFill {
				return 0, fmt.Errorf("%w: a fill word outside the fill", errNotStampable)
			}
			return uint32(m.sPub + m.k*per + s - per), nil
		}
		// Group g of challenge c follows the K challenges' earlier groups
		// and the group of the challenges before c.
		before := 0
		for g, n := range m.sec.groups() {
			if s < n {
				if part != inBlock {
					return 0, fmt.Errorf("%w: a challenge's %s input outside its challenge", errNotStampable, strings.TrimSuffix(groupPrefix[g], "_"))
				}
				return uint32(m.sPub + m.k*before + c*n + s), nil
			}
			s -= n
			before += n
		}
	}
	switch i := int(v) - m.tPub - m.tSec; {
	case i < m.sec.preludeWire:
		return uint32(m.offset(v, inPrelude, c)), nil
	case i < m.sec.preludeWire+m.sec.blockWire:
		if part != inBlock {
			return 0, fmt.Errorf("%w: a challenge's wire outside it", errNotStampable)
		}
		return uint32(m.offset(v, inBlock, c)), nil
	default:
		if part != inFill {
			return 0, fmt.Errorf("%w: a fill wire outside the fill", errNotStampable)
		}
		return uint32(m.offset(v, inFill, c)), nil
	}
}

// offset maps template wire w, internal to section part (of challenge c),
// to the stamped system's; it maps an instruction's WireOffset (the next
// internal wire's id when it was added) the same way.
func (m *stamper) offset(w uint32, part, c int) int {
	i := int(w) - m.tPub - m.tSec
	base := m.sPub + m.sSec
	switch part {
	case inPrelude:
		return base + i
	case inBlock:
		return base + m.sec.preludeWire + c*m.sec.blockWire + i - m.sec.preludeWire
	default:
		return base + m.sec.preludeWire + m.k*m.sec.blockWire + i - m.sec.preludeWire - m.sec.blockWire
	}
}

// section is a run of the template's instructions and where the stamped
// copies of it go.
type section struct {
	part     int
	from, to int // template instructions
	data     int // template call data at from
	words    int // call data words of the run
	cons     int // constraints of the run
	wires    []int
	ends     []int // offsets of hint outputs' exclusive ends
	copies   int
	inst0    int // stamped instruction of the first copy's first
	data0    int // its call data
	cons0    int // its constraint
}

// stamp builds the system of k challenges from the one-challenge system t.
// The instructions, their call data and the levels are written directly:
// a copy of an instruction differs from the template's only in its wires,
// its offsets, and its level, which is the template's (a challenge reads
// the prelude's wires and its own, never another challenge's, and the fill
// reads the prelude's and its own).
func stamp(t *cs.R1CS, sec stampSections, k int) (*cs.R1CS, error) {
	if len(t.Instructions) != sec.preludeInst+sec.blockInst+sec.fillInst ||
		t.NbInternalVariables != sec.preludeWire+sec.blockWire+sec.fillWire ||
		t.GetNbSecretVariables() != sec.perChallenge()+sec.fill {
		return nil, fmt.Errorf("%w: the template does not have the sections' sizes", errNotStampable)
	}
	if len(t.CommitmentInfo.CommitmentIndexes()) != 0 || len(t.GkrInfo.Circuit) != 0 {
		return nil, fmt.Errorf("%w: the template has commitments or GKR", errNotStampable)
	}
	m := &stamper{t: t, sec: sec, k: k, tPub: t.GetNbPublicVariables(), tSec: t.GetNbSecretVariables()}
	m.sPub = 3 + k
	m.sSec = k*sec.perChallenge() + sec.fill
	s := cs.NewR1CS(0)

	// Blueprints and coefficients in the template's order, so that their
	// ids are the template's.
	if len(s.Blueprints) != 1 || len(t.Blueprints) < 1 || fmt.Sprintf("%T", s.Blueprints[0]) != fmt.Sprintf("%T", t.Blueprints[0]) {
		return nil, fmt.Errorf("%w: unexpected first blueprint", errNotStampable)
	}
	for _, b := range t.Blueprints[1:] {
		s.AddBlueprint(b)
	}
	for i := len(s.Coefficients); i < len(t.Coefficients); i++ {
		var u constraint.U64
		copy(u[:], t.Coefficients[i][:])
		if id := s.AddCoeff(u); int(id) != i {
			return nil, fmt.Errorf("%w: coefficient %d gets id %d", errNotStampable, i, id)
		}
	}
	s.MHintsDependencies = maps.Clone(t.MHintsDependencies)

	// Inputs, named as gnark names them.
	for _, name := range t.Public[:3] {
		s.AddPublicVariable(name)
	}
	for c := range k {
		s.AddPublicVariable(renumber(t.Public[3], "Challenges_", c))
	}
	at := 0
	for g, n := range sec.groups() {
		for c := range k {
			for _, name := range t.Secret[at : at+n] {
				s.AddSecretVariable(renumber(name, groupPrefix[g], c))
			}
		}
		at += n
	}
	for _, name := range t.Secret[at:] {
		s.AddSecretVariable(name)
	}

	// The template's level of each instruction.
	level := make([]int32, len(t.Instructions))
	for l, ids := range t.Levels {
		for _, id := range ids {
			level[id] = int32(l)
		}
	}
	secs := []*section{
		{part: inPrelude, from: 0, to: sec.preludeInst, copies: 1},
		{part: inBlock, from: sec.preludeInst, to: sec.preludeInst + sec.blockInst, copies: k},
		{part: inFill, from: sec.preludeInst + sec.blockInst, to: len(t.Instructions), copies: 1},
	}
	dataAt := func(i int) int {
		if i == len(t.Instructions) {
			return len(t.CallData)
		}
		return int(t.Instructions[i].StartCallData)
	}
	var nbInst, nbData, nbCons, tCons int
	for _, x := range secs {
		x.data, x.words = dataAt(x.from), dataAt(x.to)-dataAt(x.from)
		for i := x.from; i < x.to; i++ {
			pi := t.Instructions[i]
			inst := pi.Unpack(&t.System)
			at := int(pi.StartCallData) - x.data
			switch t.Blueprints[pi.BlueprintID].(type) {
			case *constraint.BlueprintGenericR1C:
				n := int(inst.Calldata[1] + inst.Calldata[2] + inst.Calldata[3])
				for j := range n {
					x.wires = append(x.wires, at+5+2*j)
				}
				x.cons++
			case *constraint.BlueprintGenericHint:
				j := 3
				for range int(inst.Calldata[2]) {
					n := int(inst.Calldata[j])
					for q := range n {
						x.wires = append(x.wires, at+j+2+2*q)
					}
					j += 1 + 2*n
				}
				x.wires = append(x.wires, at+j)
				x.ends = append(x.ends, at+j+1)
			default:
				return nil, fmt.Errorf("%w: instruction %d has a blueprint of type %T", errNotStampable, i, t.Blueprints[pi.BlueprintID])
			}
			if int(pi.ConstraintOffset) != tCons {
				return nil, fmt.Errorf("%w: instruction %d is not one constraint or none", errNotStampable, i)
			}
			tCons += consOf(t, i)
		}
		x.inst0, x.data0, x.cons0 = nbInst, nbData, nbCons
		nbInst += x.copies * (x.to - x.from)
		nbData += x.copies * x.words
		nbCons += x.copies * x.cons
	}
	s.Instructions = make([]constraint.PackedInstruction, nbInst)
	s.CallData = make([]uint32, nbData)

	// The copies, each on its own core.
	type job struct {
		x *section
		c int
	}
	var jobs []job
	for _, x := range secs {
		for c := range x.copies {
			jobs = append(jobs, job{x, c})
		}
	}
	errs := make([]error, len(jobs))
	par.Range(len(jobs), 1, 1, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			errs[j] = m.copySection(s, jobs[j].x, jobs[j].c)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	// Levels: a copy's instruction is on its template's level; within a
	// level, instructions in order, as gnark appends them.
	counts := make([]int, len(t.Levels))
	for _, x := range secs {
		for i := x.from; i < x.to; i++ {
			counts[level[i]] += x.copies
		}
	}
	s.Levels = make([][]uint32, len(t.Levels))
	for l := range s.Levels {
		s.Levels[l] = make([]uint32, 0, counts[l])
	}
	for _, x := range secs {
		for c := range x.copies {
			id := x.inst0 + c*(x.to-x.from)
			for i := x.from; i < x.to; i++ {
				s.Levels[level[i]] = append(s.Levels[level[i]], uint32(id))
				id++
			}
		}
	}
	s.NbConstraints = nbCons
	s.NbInternalVariables = sec.preludeWire + k*sec.blockWire + sec.fillWire
	return s, nil
}

func consOf(t *cs.R1CS, i int) int {
	if _, ok := t.Blueprints[t.Instructions[i].BlueprintID].(*constraint.BlueprintGenericR1C); ok {
		return 1
	}
	return 0
}

// copySection writes copy c of section x into s.
func (m *stamper) copySection(s *cs.R1CS, x *section, c int) error {
	n := x.to - x.from
	inst := s.Instructions[x.inst0+c*n : x.inst0+(c+1)*n]
	data0 := x.data0 + c*x.words
	data := s.CallData[data0 : data0+x.words]
	copy(data, m.t.CallData[x.data:x.data+x.words])
	for _, o := range x.wires {
		v, err := m.wire(data[o], x.part, c)
		if err != nil {
			return err
		}
		data[o] = v
	}
	for _, o := range x.ends {
		v, err := m.wire(data[o]-1, x.part, c)
		if err != nil {
			return err
		}
		data[o] = v + 1
	}
	cons := x.cons0 + c*x.cons
	for i := range n {
		pi := m.t.Instructions[x.from+i]
		inst[i] = constraint.PackedInstruction{
			BlueprintID:      pi.BlueprintID,
			ConstraintOffset: uint32(cons),
			WireOffset:       uint32(m.offset(pi.WireOffset, x.part, c)),
			StartCallData:    uint64(data0 + int(pi.StartCallData) - x.data),
		}
		cons += consOf(m.t, x.from+i)
	}
	return nil
}

// renumber replaces the index 0 that follows prefix at the start of name
// ("Parents_0_3" → "Parents_5_3").
func renumber(name, prefix string, to int) string {
	head := prefix + "0"
	if !strings.HasPrefix(name, head) {
		return name
	}
	rest := name[len(head):]
	if rest != "" && rest[0] != '_' {
		return name
	}
	return fmt.Sprintf("%s%d%s", prefix, to, rest)
}

// sameSystem reports the first difference between two systems in what the
// solver and the setup read: inputs, internal wires, constraints,
// instructions and their call data, levels, coefficients, blueprints and
// hints.
func sameSystem(a, b *cs.R1CS) error {
	switch {
	case !slices.Equal(a.Public, b.Public):
		return fmt.Errorf("public inputs differ")
	case !slices.Equal(a.Secret, b.Secret):
		return fmt.Errorf("secret inputs differ")
	case a.NbInternalVariables != b.NbInternalVariables:
		return fmt.Errorf("%d internal wires against %d", a.NbInternalVariables, b.NbInternalVariables)
	case a.NbConstraints != b.NbConstraints:
		return fmt.Errorf("%d constraints against %d", a.NbConstraints, b.NbConstraints)
	case !slices.Equal(a.Instructions, b.Instructions):
		return fmt.Errorf("instructions differ")
	case !slices.Equal(a.CallData, b.CallData):
		return fmt.Errorf("call data differs")
	case !slices.Equal(a.Coefficients, b.Coefficients):
		return fmt.Errorf("coefficients differ")
	case len(a.Blueprints) != len(b.Blueprints):
		return fmt.Errorf("%d blueprints against %d", len(a.Blueprints), len(b.Blueprints))
	case len(a.Levels) != len(b.Levels):
		return fmt.Errorf("%d levels against %d", len(a.Levels), len(b.Levels))
	case len(a.MHintsDependencies) != len(b.MHintsDependencies):
		return fmt.Errorf("hint dependencies differ")
	}
	for i := range a.Blueprints {
		if fmt.Sprintf("%T", a.Blueprints[i]) != fmt.Sprintf("%T", b.Blueprints[i]) {
			return fmt.Errorf("blueprint %d: %T against %T", i, a.Blueprints[i], b.Blueprints[i])
		}
	}
	for i := range a.Levels {
		if !slices.Equal(a.Levels[i], b.Levels[i]) {
			return fmt.Errorf("level %d differs", i)
		}
	}
	for id, name := range a.MHintsDependencies {
		if b.MHintsDependencies[id] != name {
			return fmt.Errorf("hint %d: %q against %q", id, name, b.MHintsDependencies[id])
		}
	}
	return nil
}
