// Package prover is cuzk's staged Groth16 prover for BLS12-381, on gnark's R1CS
// and proving key and checked with gnark's verifier.
//
// One partition goes through six stages, each a function with explicit inputs
// and outputs so that actors can schedule them separately and a GPU backend can
// replace Stage and Compute:
//
//	Synthesize  solve the R1CS for the witness, commit        → *Solution
//	Prep        wire vectors for the A, B and K MSMs          → *Prepared
//	Stage       move a, b, c and the scalars to the backend   → Staged
//	Compute     H by NTTs, then the G1 MSMs A, B, K and Z(H)   → *Computed
//	BG2         the G2 MSM for B                              → G2 point
//	Finalize    fresh r, s; assemble; verify                  → *Proof
//
// Circuits with gnark's commitments (api.Commit) are proved as gnark proves
// them: Synthesize computes each Pedersen commitment where the circuit asks
// for its hash, Prep leaves the committed wires out of the K MSM, and
// Finalize adds the commitments and their folded proof of knowledge. Their
// MSMs run on the host, or on a backend's devices when it has them
// (CommitmentMSMer) and is given to SynthesizeFor and FinalizeFor.
package prover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/witness"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	csolver "github.com/consensys/gnark/constraint/solver"

	groth16 "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/internal/par"
	"github.com/cuzk/cuzk/keygen"
	"github.com/cuzk/cuzk/solve"
)

// Proof is gnark's Groth16 proof for BLS12-381.
type Proof = groth16.Proof

// ErrUnsatisfied wraps a witness that does not satisfy the circuit.
var ErrUnsatisfied = errors.New("witness does not satisfy the circuit")

// ErrBadWitness wraps a witness that does not fit the circuit: another
// field, or another number of values.
var ErrBadWitness = errors.New("witness does not fit the circuit")

// ErrMissingHint wraps a circuit's hint that no solver was given (gnark's
// registry, Keys.SolverOptions, or the options of SynthesizeWith).
var ErrMissingHint = solve.ErrMissingHint

// Solution is a solved witness: every wire's value and the evaluations of the
// A, B and C constraint polynomials on the domain.
type Solution struct {
	Wires   fr.Vector
	A, B, C fr.Vector
	Public  fr.Vector // the public inputs, without the constant wire
	// Commitments are the circuit's commitments, nil without any.
	Commitments *Commitments

	release func()
	// mem is the backend's memory for the prepared vectors when the solver
	// wrote A, B and C into it (SynthesizeOn): Prep takes it over, and
	// Release returns it if no Prep did.
	mem PrepMemory
}

// Release gives the solution's vectors back to the solver for reuse; the
// solution must not be used afterwards. Call it once nothing reads them: after
// a Prep into backend memory (Prepared.Memory not nil), which copies all it
// needs. Solutions of gnark's solver are left to the collector.
func (s *Solution) Release() {
	if s == nil {
		return
	}
	if s.release != nil {
		s.release()
		s.release = nil
	}
	if s.mem != nil {
		s.mem.Release()
		s.mem = nil
	}
}

// Synthesize solves the R1CS for a full witness, with the solver k.Solver
// names and the hints of k.SolverOptions.
func Synthesize(k *Keys, full witness.Witness) (*Solution, error) {
	return SynthesizeWith(k, full)
}

// SynthesizeWith is Synthesize with more solver options (gnark's: hints
// with solver.WithHints), given to whichever solver runs.
func SynthesizeWith(k *Keys, full witness.Witness, opts ...csolver.Option) (*Solution, error) {
	return synthesize(nil, k, full, nil, nil, opts)
}

// SynthesizeFor is SynthesizeWith for partitions that backend b proves: the
// circuit's commitments are computed by b's commitment MSMs when it has them
// (Capabilities.Commitments), else on the host.
func SynthesizeFor(b Backend, k *Keys, full witness.Witness, opts ...csolver.Option) (*Solution, error) {
	return SynthesizeOn(nil, b, k, full, opts...)
}

// SynthesizeOn is SynthesizeFor with cuzk's solver running its parallel work
// in l's place in the queue for the host's cores (par.Lane; nil: on
// goroutines of its own). gnark's solver ignores l.
//
// Where b gives Prep its memory (PrepAllocator: the GPU backend's pinned
// staging) and cuzk's solver solves k, the solver writes A, B and C
// straight into that memory's a, b and c, which Prep then pads in place:
// the partition never holds them twice (3n elements, 12 GiB at 2^27).
// CUZK_SOLVE_INTO=off keeps them apart, to measure against.
func SynthesizeOn(l *par.Lane, b Backend, k *Keys, full witness.Witness, opts ...csolver.Option) (*Solution, error) {
	caps := CapabilitiesOf(b)
	var mem PrepMemory
	if caps.Prep != nil && k.solver() != nil && solveInto() {
		var err error
		if mem, err = caps.Prep.PrepMemory(k); err != nil {
			return nil, err
		}
	}
	sol, err := synthesize(l, k, full, caps.Commitments, mem, opts)
	if err != nil && mem != nil {
		mem.Release()
	}
	return sol, err
}

// solveInto says whether cuzk's solver writes A, B and C into the memory a
// backend gives prep (CUZK_SOLVE_INTO=off: not).
func solveInto() bool { return os.Getenv("CUZK_SOLVE_INTO") != "off" }

// synthesize is SynthesizeOn with msm computing the commitments (nil: the
// host) and cuzk's solver writing A, B and C into mem's a, b and c (nil:
// into vectors of its own).
func synthesize(l *par.Lane, k *Keys, full witness.Witness, msm CommitmentMSMer, mem PrepMemory, opts []csolver.Option) (*Solution, error) {
	plan, err := k.commitments()
	if err != nil {
		return nil, err
	}
	if full == nil {
		return nil, fmt.Errorf("%w: no witness", ErrBadWitness)
	}
	v, ok := full.Vector().(fr.Vector)
	if !ok {
		return nil, fmt.Errorf("%w: witness is not over BLS12-381's scalar field (%T)", ErrBadWitness, full.Vector())
	}
	nbPub, nbSec := k.CS.GetNbPublicVariables()-1, k.CS.GetNbSecretVariables()
	if len(v) != nbPub+nbSec {
		return nil, fmt.Errorf("%w: %d values, the circuit takes %d (%d public, %d secret)", ErrBadWitness, len(v), nbPub+nbSec, nbPub, nbSec)
	}
	public, err := full.Public()
	if err != nil {
		return nil, fmt.Errorf("public part of witness: %w", err)
	}
	pub, ok := public.Vector().(fr.Vector)
	if !ok || len(pub) != nbPub {
		return nil, fmt.Errorf("%w: %d public values, the circuit takes %d", ErrBadWitness, len(pub), nbPub)
	}
	opts = append(slices.Clip(k.SolverOptions), opts...)
	if err := checkHints(k, opts); err != nil {
		return nil, err
	}
	var cm *committer
	if len(plan.info) > 0 {
		if cm, err = newCommitter(k, plan, msm); err != nil {
			return nil, err
		}
	}
	if p := k.solver(); p != nil {
		hints, err := hintOverrides(opts, cm)
		if err != nil {
			return nil, err
		}
		var res *solve.Result
		if mem != nil {
			a, b, c, _, _, _ := mem.Vectors()
			m := p.Constraints()
			if m > len(a) || m > len(b) || m > len(c) {
				return nil, fmt.Errorf("prep memory of %d, %d, %d elements for %d constraints", len(a), len(b), len(c), m)
			}
			var w fr.Vector
			if wm, ok := mem.(WireMemory); ok {
				if w = wm.Wires(); w != nil && len(w) != p.Wires() {
					return nil, fmt.Errorf("prep memory holds %d wire values for %d wires", len(w), p.Wires())
				}
			}
			res, err = p.SolveOnInto(l, v, hints, a[:m], b[:m], c[:m], w)
		} else {
			res, err = p.SolveOn(l, v, hints)
		}
		if cm != nil && err != nil && cm.err() != nil {
			return nil, cm.err()
		}
		if errors.Is(err, solve.ErrUnsatisfied) {
			return nil, fmt.Errorf("%w: %v", ErrUnsatisfied, err)
		}
		if err != nil {
			return nil, err
		}
		sol := &Solution{Wires: res.W, A: res.A, B: res.B, C: res.C, Public: pub, release: func() { p.Release(res) }, mem: mem}
		if cm != nil {
			sol.Commitments = &cm.out
		}
		return sol, nil
	}
	if cm != nil {
		opts = append(opts, csolver.OverrideHint(bsb22, cm.hint))
	}
	if k.SystemReleased() {
		return nil, ErrSystemReleased
	}
	if k.stateful() {
		// gnark's lookup blueprints keep their table in the system: one
		// solve at a time.
		k.gnarkMu.Lock()
		defer k.gnarkMu.Unlock()
	}
	res, err := gnarkSolve(k.CS, full, opts)
	if cm != nil && err != nil && cm.err() != nil {
		return nil, cm.err()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsatisfied, err)
	}
	sol := res.(*cs.R1CSSolution)
	out := &Solution{Wires: sol.W, A: sol.A, B: sol.B, C: sol.C, Public: pub}
	if cm != nil {
		out.Commitments = &cm.out
	}
	return out, nil
}

// gnarkSolve runs gnark's solver, whose lookup blueprints panic on an index
// out of their table: that is a witness that does not satisfy the circuit.
func gnarkSolve(r *cs.R1CS, full witness.Witness, opts []csolver.Option) (res any, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, fmt.Errorf("%v", v)
		}
	}()
	return r.Solve(full, opts...)
}

// checkHints fails with ErrMissingHint, naming them, when the circuit calls
// hints that neither gnark's registry nor opts hold; the solvers would
// otherwise fail later and less clearly.
func checkHints(k *Keys, opts []csolver.Option) error {
	if len(k.CS.MHintsDependencies) == 0 {
		return nil
	}
	cfg, err := csolver.NewConfig(opts...)
	if err != nil {
		return fmt.Errorf("solver options: %w", err)
	}
	var missing []string
	for id, name := range k.CS.MHintsDependencies {
		if _, ok := cfg.HintFunctions[id]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%w: the circuit calls %s; give hints to the prover with solver.WithHints", ErrMissingHint, strings.Join(missing, ", "))
	}
	return nil
}

// Prepared holds what the MSMs and the NTTs consume. Scalars stay in
// Montgomery form, which both gnark-crypto's MultiExp and the GPU kernels take.
type Prepared struct {
	// A, B, C are padded to the FFT domain's size; the CPU backend's Compute
	// overwrites them.
	A, B, C []fr.Element
	// WiresA and WiresB are the wire values whose A (resp. B) key points are
	// not at infinity; WiresK are the private wires.
	WiresA, WiresB, WiresK []fr.Element
	Public                 fr.Vector
	// Commitments are the circuit's commitments (nil without any), for
	// Finalize.
	Commitments *Commitments
	// Memory, when not nil, holds the six vectors above: memory a backend
	// gave Prep (see PrepAllocator). Release returns it.
	Memory PrepMemory
}

// Release returns the vectors' memory to the backend that gave it; the
// vectors must not be used afterwards. Without Memory it does nothing.
func (p *Prepared) Release() {
	if p != nil && p.Memory != nil {
		p.Memory.Release()
		p.Memory = nil
	}
}

// PrepMemory is memory for one partition's prepared vectors, laid out as a
// backend wants them: the GPU backend gives pinned host memory in the layout
// of its device buffer, so that staging is one transfer at full speed.
type PrepMemory interface {
	// Vectors are a, b, c (the domain's size) and the A, B and K wire vectors,
	// of the sizes the keys say. Their contents are undefined.
	Vectors() (a, b, c, wa, wb, wk []fr.Element)
	Release()
}

// WireMemory is PrepMemory that holds the partition's wire values too, so
// that cuzk's solver writes them there (SynthesizeOn): Wires has one element
// per wire, and the K wire vector Vectors gives is its tail past the public
// wires; nil where this memory holds none.
type WireMemory interface {
	PrepMemory
	Wires() []fr.Element
}

// WireLender is a PrepAllocator that says whether its memory for k's
// partitions holds their wire values (WireMemory), for the solver's memory
// to be readied without them (ReserveSolvesFor).
type WireLender interface {
	LendsWires(k *Keys) bool
}

// PrepAllocator is a Backend that gives Prep the memory of its vectors.
// PrepMemory may return nil, nil: Prep then uses ordinary memory.
type PrepAllocator interface {
	PrepMemory(k *Keys) (PrepMemory, error)
}

// Prep builds the wire vectors of the MSMs and pads a, b, c to the domain.
func Prep(k *Keys, s *Solution) (*Prepared, error) { return PrepInto(k, s, nil) }

// PrepFor is Prep into the memory backend b gives, when it gives any.
func PrepFor(b Backend, k *Keys, s *Solution) (*Prepared, error) { return PrepOn(nil, b, k, s) }

// PrepOn is PrepFor with its copies run in l's place in the queue for the
// host's cores (par.Lane; nil: on goroutines of their own).
func PrepOn(l *par.Lane, b Backend, k *Keys, s *Solution) (*Prepared, error) {
	if s != nil && s.mem != nil {
		// The solver wrote A, B and C into memory b gave: prep there.
		p, err := prepInto(l, k, s, s.mem)
		if err == nil {
			s.mem = nil // the Prepared owns it now
		}
		return p, err
	}
	a := CapabilitiesOf(b).Prep
	if a == nil {
		return prepInto(l, k, s, nil)
	}
	mem, err := a.PrepMemory(k)
	if err != nil {
		return nil, err
	}
	p, err := prepInto(l, k, s, mem)
	if err != nil && mem != nil {
		mem.Release()
	}
	return p, err
}

// PrepInto is Prep writing the vectors into mem (nil: new memory). The
// returned Prepared owns mem: its Release returns it.
func PrepInto(k *Keys, s *Solution, mem PrepMemory) (*Prepared, error) {
	if s != nil && s.mem != nil && mem != s.mem {
		return nil, errors.New("prep: the solution's A, B and C are in a backend's memory already: prep there (PrepOn)")
	}
	return prepInto(nil, k, s, mem)
}

func prepInto(l *par.Lane, k *Keys, s *Solution, mem PrepMemory) (*Prepared, error) {
	pk := k.PK
	n := int(pk.Domain.Cardinality)
	if len(s.A) > n || len(s.Wires) != len(pk.InfinityA) {
		return nil, fmt.Errorf("solution does not fit the proving key (%d constraints for a domain of %d, %d wires for %d key points): keys are for another circuit",
			len(s.A), n, len(s.Wires), len(pk.InfinityA))
	}
	nPub := k.CS.GetNbPublicVariables()
	plan, err := k.commitments()
	if err != nil {
		return nil, err
	}
	committed := len(plan.info) > 0
	nk := k.Counts().K
	if plan.layout.NbPK != nk {
		return nil, fmt.Errorf("%d private wires for %d K points: keys are for another circuit", plan.layout.NbPK, nk)
	}
	if committed != (s.Commitments != nil) {
		return nil, fmt.Errorf("solution has commitments %v, the circuit %d: solved for another circuit", s.Commitments != nil, len(plan.info))
	}
	na, nb := len(s.Wires)-int(pk.NbInfinityA), len(s.Wires)-int(pk.NbInfinityB)
	p := &Prepared{Public: s.Public, Memory: mem, Commitments: s.Commitments}
	// With the same wires left out of A and B, WiresB is WiresA: filled
	// once, where the memory holds them as one (or in Go memory).
	shared := k.SharedWires()
	if mem != nil {
		p.A, p.B, p.C, p.WiresA, p.WiresB, p.WiresK = mem.Vectors()
		aliased := len(p.WiresA) > 0 && len(p.WiresB) > 0 && &p.WiresA[0] == &p.WiresB[0]
		if aliased && !shared {
			return nil, errors.New("prep memory holds the A and B wire vectors as one, but the key sets leave out different wires")
		}
		shared = aliased
	} else {
		p.A, p.B, p.C = make([]fr.Element, n), make([]fr.Element, n), make([]fr.Element, n)
		p.WiresA = make([]fr.Element, na)
		if p.WiresB = p.WiresA; !shared {
			p.WiresB = make([]fr.Element, nb)
		}
		if committed {
			p.WiresK = make([]fr.Element, nk)
		} else {
			// The private wires are a tail of the solution's: no copy.
			p.WiresK = s.Wires[nPub:]
		}
	}
	if len(p.A) != n || len(p.B) != n || len(p.C) != n || len(p.WiresA) != na || len(p.WiresB) != nb || len(p.WiresK) != nk {
		return nil, fmt.Errorf("prep memory of %d, %d, %d, %d, %d, %d elements for %d, %d, %d, %d, %d, %d",
			len(p.A), len(p.B), len(p.C), len(p.WiresA), len(p.WiresB), len(p.WiresK), n, n, n, na, nb, nk)
	}
	// The vectors are independent: fill them side by side. Each spreads its
	// copy over l's cores from a goroutine of its own, not from a chunk of
	// l's: a chunk of the pool must not wait for the pool.
	var wg sync.WaitGroup
	var okA, okB bool
	for _, f := range []func(){
		func() { pad(l, p.A, s.A) },
		func() { pad(l, p.B, s.B) },
		func() { pad(l, p.C, s.C) },
		func() { okA = filter(l, p.WiresA, s.Wires, pk.InfinityA) },
		func() {
			if okB = shared; !shared {
				okB = filter(l, p.WiresB, s.Wires, pk.InfinityB)
			}
		},
		func() {
			switch {
			case committed:
				filterK(p.WiresK, s.Wires, plan.layout, nPub)
			case mem != nil && nk > 0 && &p.WiresK[0] == &s.Wires[nPub]:
				// The solver wrote the wires into mem: the K wires are
				// in place.
			case mem != nil:
				pad(l, p.WiresK, s.Wires[nPub:])
			}
		},
	} {
		wg.Go(f)
	}
	wg.Wait()
	if !okA || !okB {
		return nil, fmt.Errorf("proving key's infinity flags disagree with its counts (%d, %d): the key is damaged", pk.NbInfinityA, pk.NbInfinityB)
	}
	return p, nil
}

// filterK copies the values of the wires whose K points are in the proving
// key: without the public wires, the commitment wires and the private
// committed wires, whose K points are the commitments' bases.
func filterK(dst, w []fr.Element, l *keygen.KLayout, nbPublic int) {
	j := 0
	for i := nbPublic; i < len(w); i++ {
		if l.InPK(i, nbPublic) {
			dst[j] = w[i]
			j++
		}
	}
}

// prepChunk is the elements one core copies at a time in prep: at 2^20 a
// vector is 32 MiB, which one core copies at a fraction of memory's speed.
const prepChunk = 1 << 16

// pad copies v into dst and zeroes the rest, in l's place.
func pad(l *par.Lane, dst, v []fr.Element) {
	// v may be dst's head already (the solver wrote it there): then only the
	// tail is cleared.
	inPlace := len(v) > 0 && len(dst) > 0 && &v[0] == &dst[0]
	l.Range(len(dst), prepChunk, 1, func(lo, hi int) {
		n := 0
		if lo < len(v) {
			n = min(hi, len(v)) - lo
			if !inPlace {
				copy(dst[lo:hi], v[lo:lo+n])
			}
		}
		clear(dst[lo+n : hi])
	})
}

// filter copies the wires whose key points are not at infinity into dst,
// and says whether dst had room for exactly those. Chunks count their wires
// first, so that each then knows where in dst its own go.
func filter(l *par.Lane, dst, w []fr.Element, infinity []bool) bool {
	chunks := (len(w) + prepChunk - 1) / prepChunk
	at := make([]int, chunks+1)
	l.Range(chunks, 1, 1, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			for _, inf := range infinity[c*prepChunk : min((c+1)*prepChunk, len(w))] {
				if !inf {
					at[c+1]++
				}
			}
		}
	})
	for c := range chunks {
		at[c+1] += at[c]
	}
	if at[chunks] != len(dst) {
		return false
	}
	l.Range(chunks, 1, 1, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			j := at[c]
			for i := c * prepChunk; i < min((c+1)*prepChunk, len(w)); i++ {
				if !infinity[i] {
					dst[j] = w[i]
					j++
				}
			}
		}
	})
	return true
}

// Staged is a partition's inputs where the backend's Compute reads them.
type Staged interface {
	// Release frees what staging took (device memory, pinned buffers).
	Release()
}

// Computed holds the MSM results of one partition, before r and s are
// mixed in: A = Σ wA·[A], B1 = Σ wB·[B]₁, K = Σ wK·[K], Z = Σ h·[Z]; and
// B2 = Σ wB·[B]₂ when the backend computed b_g2 too (nil: BG2 runs on the
// CPU).
type Computed struct {
	A, B1, K, Z curve.G1Jac
	B2          *curve.G2Jac
}

// Backend runs the stage and compute stages of a partition.
type Backend interface {
	Name() string
	Stage(ctx context.Context, k *Keys, p *Prepared) (Staged, error)
	Compute(ctx context.Context, k *Keys, s Staged) (*Computed, error)
}

// ComputesBG2 says whether b's Compute fills Computed.B2, so that the BG2
// stage has nothing left to do.
func ComputesBG2(b Backend) bool { return CapabilitiesOf(b).ComputesBG2 }

// BG2 computes Σ wB·[B]₂, the G2 MSM of the B wires.
func BG2(ctx context.Context, k *Keys, p *Prepared) (curve.G2Jac, error) {
	var bs curve.G2Jac
	if err := ctx.Err(); err != nil {
		return bs, err
	}
	if n := k.Counts().G2B; len(k.PK.G2.B) != n {
		return bs, fmt.Errorf("b_g2 on the CPU: the keys of %s were loaded without their G2 B points (LoadOptions.G2InMemory keeps them)", k.Circuit)
	}
	if _, err := bs.MultiExp(k.PK.G2.B, p.WiresB, ecc.MultiExpConfig{}); err != nil {
		return bs, fmt.Errorf("b_g2 msm: %w", err)
	}
	return bs, nil
}

// Finalize draws fresh r and s from rnd, assembles the proof from the MSM
// results, and checks it with gnark's verifier.
func Finalize(k *Keys, c *Computed, bg2 *curve.G2Jac, p *Prepared, rnd io.Reader) (*Proof, error) {
	return finalize(k, c, bg2, p, rnd, nil)
}

// FinalizeFor is Finalize for a partition that backend b proves: the
// commitments' proof of knowledge is b's commitment MSM when it has one
// (Capabilities.Commitments), else the host's.
func FinalizeFor(b Backend, k *Keys, c *Computed, bg2 *curve.G2Jac, p *Prepared, rnd io.Reader) (*Proof, error) {
	return finalize(k, c, bg2, p, rnd, CapabilitiesOf(b).Commitments)
}

func finalize(k *Keys, c *Computed, bg2 *curve.G2Jac, p *Prepared, rnd io.Reader, msm CommitmentMSMer) (*Proof, error) {
	pk := k.PK
	var r, s, kr fr.Element
	if err := randomElement(&r, rnd); err != nil {
		return nil, err
	}
	if err := randomElement(&s, rnd); err != nil {
		return nil, err
	}
	kr.Mul(&r, &s).Neg(&kr)
	var rb, sb big.Int
	r.BigInt(&rb)
	s.BigInt(&sb)
	deltas := curve.BatchScalarMultiplicationG1(&pk.G1.Delta, []fr.Element{r, s, kr})

	proof := &Proof{}
	if p.Commitments != nil {
		pok, err := proveKnowledge(k, p.Commitments, msm)
		if err != nil {
			return nil, err
		}
		proof.Commitments, proof.CommitmentPok = slices.Clone(p.Commitments.Points), pok
	}
	// [A] = α + Σ wA·A + r·δ
	ar := c.A
	ar.AddMixed(&pk.G1.Alpha)
	ar.AddMixed(&deltas[0])
	proof.Ar.FromJacobian(&ar)

	// [B]₁ = β + Σ wB·B + s·δ, used only inside [C]
	bs1 := c.B1
	bs1.AddMixed(&pk.G1.Beta)
	bs1.AddMixed(&deltas[1])

	// [C] = Σ wK·K + Σ h·Z − rs·δ + s·[A] + r·[B]₁
	krs := c.K
	krs.AddMixed(&deltas[2])
	krs.AddAssign(&c.Z)
	var t curve.G1Jac
	t.ScalarMultiplication(&ar, &sb)
	krs.AddAssign(&t)
	t.ScalarMultiplication(&bs1, &rb)
	krs.AddAssign(&t)
	proof.Krs.FromJacobian(&krs)

	// [B]₂ = β + Σ wB·B + s·δ
	var bs, deltaS curve.G2Jac
	bs = *bg2
	deltaS.FromAffine(&pk.G2.Delta)
	deltaS.ScalarMultiplication(&deltaS, &sb)
	bs.AddAssign(&deltaS)
	bs.AddMixed(&pk.G2.Beta)
	proof.Bs.FromJacobian(&bs)

	if err := groth16.Verify(proof, k.VK, p.Public); err != nil {
		return nil, fmt.Errorf("assembled proof does not verify: %w", err)
	}
	return proof, nil
}

func randomElement(e *fr.Element, rnd io.Reader) error {
	var b [fr.Bytes * 2]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return fmt.Errorf("draw randomness: %w", err)
	}
	// 64 bytes reduced mod r: negligible bias.
	var x big.Int
	x.SetBytes(b[:])
	e.SetBigInt(&x)
	if e.IsZero() {
		e.SetOne()
	}
	return nil
}
