// Package keygen makes Groth16 keys for BLS12-381 with exactly the structure
// gnark's groth16.Setup gives, commitment keys included, but with its
// batch fixed-base scalar multiplications, nearly all of a setup's time, done
// by a Multiplier: gnark-crypto on the CPU, or a CUDA kernel on the GPU.
//
// Setup evaluates every wire's A, B and C polynomials at the secret τ in
// O(constraints + nonzero terms) on all cores, then asks the Multiplier for
// [α]₁, [β]₁, [δ]₁, [A(τ)]₁, [B(τ)]₁, [Z]₁, the verifying key's [K]₁ of the
// public wires, the proving key's [K]₁ of the private ones, [B(τ)]₂ and
// [β]₂, [δ]₂, [γ]₂. See docs/keygen.md.
package keygen

import (
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/internal/par"
)

// Multiplier computes batch fixed-base scalar multiplications: out[i] =
// scalars[i]·base. Scalars are fr.Element values as gnark-crypto holds them
// (Montgomery form); a zero scalar gives the point at infinity, (0, 0) in
// affine form. base is in the prime-order subgroup (keygen passes the
// generators).
type Multiplier interface {
	G1(base curve.G1Affine, scalars []fr.Element) ([]curve.G1Affine, error)
	G2(base curve.G2Affine, scalars []fr.Element) ([]curve.G2Affine, error)
}

// CPUMultiplier multiplies with gnark-crypto's BatchScalarMultiplicationG1/G2
// on all cores: what gnark's own Setup does.
type CPUMultiplier struct{}

// G1 implements Multiplier.
func (CPUMultiplier) G1(base curve.G1Affine, scalars []fr.Element) ([]curve.G1Affine, error) {
	if len(scalars) == 0 {
		return nil, nil
	}
	return curve.BatchScalarMultiplicationG1(&base, scalars), nil
}

// G2 implements Multiplier.
func (CPUMultiplier) G2(base curve.G2Affine, scalars []fr.Element) ([]curve.G2Affine, error) {
	if len(scalars) == 0 {
		return nil, nil
	}
	return curve.BatchScalarMultiplicationG2(&base, scalars), nil
}

// toxicWaste is the setup's secret: whoever knows it can forge proofs.
type toxicWaste struct {
	tau, alpha, beta, gamma, delta fr.Element
	gammaInv, deltaInv             fr.Element
}

// drawToxicWaste draws τ, α, β, γ, δ from rnd, in that order, each nonzero;
// τ is also kept off the domain of size n (τⁿ ≠ 1), where the Lagrange basis
// is undefined.
func drawToxicWaste(rnd io.Reader, n uint64) (toxicWaste, error) {
	var tw toxicWaste
	one := fr.One()
	for {
		if err := randomNonZero(rnd, &tw.tau); err != nil {
			return tw, err
		}
		var tn fr.Element
		tn.Exp(tw.tau, new(big.Int).SetUint64(n))
		if !tn.Equal(&one) {
			break
		}
	}
	for _, e := range []*fr.Element{&tw.alpha, &tw.beta, &tw.gamma, &tw.delta} {
		if err := randomNonZero(rnd, e); err != nil {
			return tw, err
		}
	}
	tw.gammaInv.Inverse(&tw.gamma)
	tw.deltaInv.Inverse(&tw.delta)
	return tw, nil
}

// randomNonZero reads 64 bytes and reduces them mod r: the bias of the
// reduction is below 2⁻²⁵⁰.
func randomNonZero(rnd io.Reader, e *fr.Element) error {
	var buf [64]byte
	for {
		if _, err := io.ReadFull(rnd, buf[:]); err != nil {
			return fmt.Errorf("keygen: draw toxic waste: %w", err)
		}
		e.SetBytes(buf[:])
		if !e.IsZero() {
			return nil
		}
	}
}

// Setup makes a proving and a verifying key for r1cs with toxic waste drawn
// from rnd (crypto/rand when nil) and the group multiplications done by mul
// (CPUMultiplier when nil). The keys have the structure of gnark's
// groth16.Setup: the same domain, the same points at infinity filtered out of
// A and B, Z in the same (bit-reversed) order, the public wires' K in the
// verifying key; gnark's prover and verifier and cuzk's staged prover accept
// them. Circuits with commitments (api.Commit) get gnark's commitment keys:
// the commitment wires' K in the verifying key, each commitment's Pedersen
// basis made of its private committed wires' K (see KLayout,
// commitmentKeys).
func Setup(r1cs *cs.R1CS, mul Multiplier, rnd io.Reader) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, error) {
	if mul == nil {
		mul = CPUMultiplier{}
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	commitments, ok := r1cs.CommitmentInfo.(constraint.Groth16Commitments)
	if !ok {
		return nil, nil, fmt.Errorf("keygen: constraint system has %T commitments, not Groth16's", r1cs.CommitmentInfo)
	}
	nbPublic := r1cs.GetNbPublicVariables()
	nbWires := r1cs.NbInternalVariables + nbPublic + r1cs.GetNbSecretVariables()
	kl, err := NewKLayout(commitments, nbPublic, nbWires)
	if err != nil {
		return nil, nil, fmt.Errorf("keygen: %w", err)
	}
	domain := fft.NewDomain(uint64(r1cs.GetNbConstraints()))
	n := int(domain.Cardinality)

	tw, err := drawToxicWaste(rnd, domain.Cardinality)
	if err != nil {
		return nil, nil, err
	}
	st := newStages(nbWires, r1cs.GetNbConstraints())

	A, B, C, err := evaluateABC(r1cs, domain, tw.tau)
	if err != nil {
		return nil, nil, err
	}
	st.done("evaluate")

	// K: (β·A + α·B + C) of each wire, divided by γ for the wires the
	// verifier sees (public and commitment wires, to the verifying key) and
	// the private committed ones (to their commitment's basis), by δ for the
	// rest (to the proving key); C is not needed after.
	vkK, pkK := make([]fr.Element, kl.NbVK), make([]fr.Element, kl.NbPK)
	basisK := make([][]fr.Element, len(kl.Bases))
	for c, n := range kl.Bases {
		basisK[c] = make([]fr.Element, n)
	}
	par.Range(nbWires, 1024, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			var k, t fr.Element
			k.Mul(&A[i], &tw.beta)
			t.Mul(&B[i], &tw.alpha)
			k.Add(&k, &t).Add(&k, &C[i])
			if kl.vkScaled(i, nbPublic) {
				k.Mul(&k, &tw.gammaInv)
			} else {
				k.Mul(&k, &tw.deltaInv)
			}
			*kl.place(i, nbPublic, vkK, pkK, basisK) = k
		}
	})
	C = nil

	// Z[j] = (τⁿ − 1)/δ · τ^bitrev(j) for j < n−1: gnark multiplies the n
	// powers in natural order, bit-reverses the points and keeps n−1 of them
	// (deg H = n−2); reversing the scalars instead gives the same points.
	Z := make([]fr.Element, n)
	var zdt fr.Element
	zdt.Exp(tw.tau, new(big.Int).SetUint64(uint64(n)))
	one := fr.One()
	zdt.Sub(&zdt, &one).Mul(&zdt, &tw.deltaInv)
	powers(Z, zdt, tw.tau)
	fft.BitReverse(Z)
	Z = Z[:n-1]

	pk := &groth16bls.ProvingKey{Domain: *domain}
	vk := &groth16bls.VerifyingKey{}
	pk.InfinityA, pk.NbInfinityA, A = filterZero(A)
	pk.InfinityB, pk.NbInfinityB, B = filterZero(B)
	st.done("scalars")

	_, _, g1, g2 := curve.Generators()
	g1Jobs := []struct {
		name    string
		scalars []fr.Element
		out     *[]curve.G1Affine
	}{
		{"g1.a", A, &pk.G1.A},
		{"g1.b", B, &pk.G1.B},
		{"g1.z", Z, &pk.G1.Z},
		{"g1.k", pkK, &pk.G1.K},
		{"vk.g1.k", vkK, &vk.G1.K},
	}
	for _, j := range g1Jobs {
		pts, err := multiplyG1(mul, g1, j.scalars)
		if err != nil {
			return nil, nil, fmt.Errorf("keygen: %s (%d points): %w", j.name, len(j.scalars), err)
		}
		*j.out = pts
		st.done(j.name)
	}
	abd, err := multiplyG1(mul, g1, []fr.Element{tw.alpha, tw.beta, tw.delta})
	if err != nil {
		return nil, nil, fmt.Errorf("keygen: [α]₁, [β]₁, [δ]₁: %w", err)
	}
	pk.G1.Alpha, pk.G1.Beta, pk.G1.Delta = abd[0], abd[1], abd[2]

	if pk.G2.B, err = multiplyG2(mul, g2, B); err != nil {
		return nil, nil, fmt.Errorf("keygen: g2.b (%d points): %w", len(B), err)
	}
	st.done("g2.b")
	bdg, err := multiplyG2(mul, g2, []fr.Element{tw.beta, tw.delta, tw.gamma})
	if err != nil {
		return nil, nil, fmt.Errorf("keygen: [β]₂, [δ]₂, [γ]₂: %w", err)
	}
	pk.G2.Beta, pk.G2.Delta = bdg[0], bdg[1]

	vk.G1.Alpha, vk.G1.Beta, vk.G1.Delta = pk.G1.Alpha, pk.G1.Beta, pk.G1.Delta
	vk.G2.Beta, vk.G2.Delta, vk.G2.Gamma = bdg[0], bdg[1], bdg[2]
	if pk.CommitmentKeys, vk.CommitmentKeys, err = commitmentKeys(mul, rnd, basisK); err != nil {
		return nil, nil, fmt.Errorf("keygen: %w", err)
	}
	vk.PublicAndCommitmentCommitted = commitments.GetPublicAndCommitmentCommitted(commitments.CommitmentIndexes(), nbPublic)
	if err := vk.Precompute(); err != nil {
		return nil, nil, fmt.Errorf("keygen: verifying key: %w", err)
	}
	st.done("vk")
	return pk, vk, nil
}

func multiplyG1(mul Multiplier, base curve.G1Affine, scalars []fr.Element) ([]curve.G1Affine, error) {
	pts, err := mul.G1(base, scalars)
	if err == nil && len(pts) != len(scalars) {
		err = fmt.Errorf("multiplier returned %d points for %d scalars", len(pts), len(scalars))
	}
	return pts, err
}

func multiplyG2(mul Multiplier, base curve.G2Affine, scalars []fr.Element) ([]curve.G2Affine, error) {
	pts, err := mul.G2(base, scalars)
	if err == nil && len(pts) != len(scalars) {
		err = fmt.Errorf("multiplier returned %d points for %d scalars", len(pts), len(scalars))
	}
	return pts, err
}

// filterZero marks the zero scalars (their points would be at infinity, and
// gnark's keys leave them out) and compacts the rest in place.
func filterZero(v []fr.Element) (infinity []bool, nbInfinity uint64, kept []fr.Element) {
	infinity = make([]bool, len(v))
	k := 0
	for i := range v {
		if v[i].IsZero() {
			infinity[i] = true
			continue
		}
		v[k] = v[i]
		k++
	}
	return infinity, uint64(len(v) - k), v[:k]
}

// stages logs each stage's duration at Debug level.
type stages struct {
	start, last time.Time
	attrs       []any
}

func newStages(wires, constraints int) *stages {
	now := time.Now()
	return &stages{start: now, last: now, attrs: []any{"wires", wires, "constraints", constraints}}
}

func (s *stages) done(name string) {
	now := time.Now()
	slog.Debug("keygen", append([]any{"stage", name, "took", now.Sub(s.last), "total", now.Sub(s.start)}, s.attrs...)...)
	s.last = now
}
