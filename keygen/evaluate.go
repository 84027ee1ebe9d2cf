package keygen

import (
	"fmt"
	"math/big"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"

	"github.com/cuzk/cuzk/internal/par"
)

// evaluateABC returns, for every wire w, A_w(τ), B_w(τ) and C_w(τ): the sums
// over the constraints i in which w has a term of its coefficient times
// L_i(τ), the i-th Lagrange polynomial of the domain at τ. Constraint i is
// the i-th R1C instruction, as gnark numbers them.
//
// The terms hit wires in no useful order, so a first pass over the
// instructions (in parallel chunks, twice: to count, then to file) files
// each term under a wire range, in an array of exactly its size, and a
// second pass
// (in parallel over the ranges, each wire owned by one goroutine) adds them
// up: O(constraints + terms) work with no locks and no per-worker copies of
// the three vectors.
func evaluateABC(r *cs.R1CS, domain *fft.Domain, tau fr.Element) (A, B, C []fr.Element, err error) {
	nbWires := r.NbInternalVariables + r.GetNbPublicVariables() + r.GetNbSecretVariables()
	nbConstraints := r.GetNbConstraints()
	if len(r.Coefficients) >= 1<<termMatrixShift {
		return nil, nil, nil, fmt.Errorf("keygen: %d coefficients, more than this evaluator indexes", len(r.Coefficients))
	}
	L := lagrange(domain, tau, nbConstraints)

	isR1C := make([]bool, len(r.Blueprints))
	for id, b := range r.Blueprints {
		_, isR1C[id] = b.(constraint.BlueprintR1C)
	}
	workers := runtime.GOMAXPROCS(0)
	nbInst := len(r.Instructions)
	nbChunks := min(max(1, nbInst/256), 4*workers)
	nbRanges := min(max(1, nbWires/256), 4*workers)
	rangeOf := func(wire uint32) int { return int(uint64(wire) * uint64(nbRanges) / uint64(nbWires)) }

	// Pass 1, twice over the instructions: first count each chunk's terms
	// per range, then file them, with their global row, into one array per
	// range at exactly its size. Appending instead would hold up to twice
	// the terms, and the arrays outgrown until the next collection: at the
	// sizes of PoRep, more than the system itself.
	counts := make([][]int, nbChunks) // [chunk][range]
	rows := make([]int, nbChunks+1)   // R1Cs per chunk, then prefix sums
	var badOnce sync.Once
	var bad error
	scan := func(ch int, file func(k int, t term)) int {
		lo, hi := ch*nbInst/nbChunks, (ch+1)*nbInst/nbChunks
		var c constraint.R1C
		row := uint32(0)
		for _, pi := range r.Instructions[lo:hi] {
			if !isR1C[pi.BlueprintID] {
				continue
			}
			r.Blueprints[pi.BlueprintID].(constraint.BlueprintR1C).DecompressR1C(&c, pi.Unpack(&r.System))
			for m, le := range [3]constraint.LinearExpression{c.L, c.R, c.O} {
				for _, t := range le {
					if t.CID == constraint.CoeffIdZero {
						continue
					}
					if int(t.VID) >= nbWires {
						badOnce.Do(func() {
							bad = fmt.Errorf("keygen: a constraint has a term of wire %d, the system has %d wires", t.VID, nbWires)
						})
						return int(row)
					}
					file(rangeOf(t.VID), term{wire: t.VID, row: row, coeff: t.CID | uint32(m)<<termMatrixShift})
				}
			}
			row++
		}
		return int(row)
	}
	forEach(nbChunks, workers, func(ch int) {
		cnt := make([]int, nbRanges)
		rows[ch+1] = scan(ch, func(k int, _ term) { cnt[k]++ })
		counts[ch] = cnt
	})
	if bad != nil {
		return nil, nil, nil, bad
	}
	for ch := range nbChunks {
		rows[ch+1] += rows[ch]
	}
	if rows[nbChunks] != nbConstraints {
		return nil, nil, nil, fmt.Errorf("keygen: %d R1C instructions for %d constraints", rows[nbChunks], nbConstraints)
	}
	// at[chunk][range]: where the chunk's terms of the range start.
	terms := make([][]term, nbRanges)
	at := make([][]int, nbChunks)
	for ch := range at {
		at[ch] = make([]int, nbRanges)
	}
	for k := range nbRanges {
		n := 0
		for ch := range nbChunks {
			at[ch][k] = n
			n += counts[ch][k]
		}
		terms[k] = make([]term, n)
	}
	forEach(nbChunks, workers, func(ch int) {
		next, base := at[ch], uint32(rows[ch])
		scan(ch, func(k int, t term) {
			t.row += base
			terms[k][next[k]] = t
			next[k]++
		})
	})

	// Pass 2: each range's wires are written by one goroutine only.
	A, B, C = make([]fr.Element, nbWires), make([]fr.Element, nbWires), make([]fr.Element, nbWires)
	abc := [3][]fr.Element{A, B, C}
	forEach(nbRanges, workers, func(k int) {
		for _, t := range terms[k] {
			res := &abc[t.coeff>>termMatrixShift][t.wire]
			l := &L[t.row]
			switch cid := t.coeff & (1<<termMatrixShift - 1); cid {
			case constraint.CoeffIdOne:
				res.Add(res, l)
			case constraint.CoeffIdMinusOne:
				res.Sub(res, l)
			default:
				var p fr.Element
				p.Mul(&r.Coefficients[cid], l)
				res.Add(res, &p)
			}
		}
		terms[k] = nil
	})
	return A, B, C, nil
}

// term is one nonzero coefficient of the R1CS: wire, row (constraint), and the coefficient's id with the matrix (0 A, 1 B, 2 C) in the top
// two bits.
type term struct {
	wire, row, coeff uint32
}

const termMatrixShift = 30

// lagrange returns L_i(τ) for i < m over the domain of size n with root ω:
// L_i(τ) = ωⁱ (τⁿ − 1) / (n (τ − ωⁱ)). Each chunk starts from its own power
// of ω and inverts its denominators in one batch. τ must not be a root of
// unity of order n.
func lagrange(domain *fft.Domain, tau fr.Element, m int) []fr.Element {
	n := domain.Cardinality
	var scale fr.Element
	scale.Exp(tau, new(big.Int).SetUint64(n))
	one := fr.One()
	scale.Sub(&scale, &one).Mul(&scale, &domain.CardinalityInv)

	L := make([]fr.Element, m)
	par.Range(m, 1024, 1, func(lo, hi int) {
		den := make([]fr.Element, hi-lo)
		var w fr.Element
		w.Exp(domain.Generator, big.NewInt(int64(lo)))
		for i := lo; i < hi; i++ {
			L[i] = w
			den[i-lo].Sub(&tau, &w)
			w.Mul(&w, &domain.Generator)
		}
		inv := fr.BatchInvert(den)
		for i := lo; i < hi; i++ {
			L[i].Mul(&L[i], &scale).Mul(&L[i], &inv[i-lo])
		}
	})
	return L
}

// powers sets v[i] = start·xⁱ.
func powers(v []fr.Element, start, x fr.Element) {
	par.Range(len(v), 1024, 1, func(lo, hi int) {
		var p fr.Element
		p.Exp(x, big.NewInt(int64(lo))).Mul(&p, &start)
		for i := lo; i < hi; i++ {
			v[i] = p
			p.Mul(&p, &x)
		}
	})
}

// forEach runs f(0) … f(n−1) on the given number of goroutines, each taking
// the next index when it is free: uneven items (a range holding the constant
// wire, which most constraints use) do not hold the others up.
func forEach(n, workers int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		}()
	}
	wg.Wait()
}
