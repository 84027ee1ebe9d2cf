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
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	cs "github.com/consensys/gnark/constraint/bls12-381"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
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
// commitmentKeys). Setup holds every scalar and point at once; SetupDump
// writes the same proving key as it is made.
func Setup(r1cs *cs.R1CS, mul Multiplier, rnd io.Reader) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, error) {
	if mul == nil {
		mul = CPUMultiplier{}
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	sc, st, err := prepare(r1cs, rnd)
	if err != nil {
		return nil, nil, err
	}
	Z := sc.zScalars()
	pk := sc.provingKeyHeader()
	// gnark's Setup gives its key a domain with FFT tables.
	pk.Domain = *fft.NewDomain(sc.domain.Cardinality)
	vk := &groth16bls.VerifyingKey{}

	_, _, g1, g2 := curve.Generators()
	g1Jobs := []struct {
		name    string
		scalars []fr.Element
		out     *[]curve.G1Affine
	}{
		{"g1.a", sc.A, &pk.G1.A},
		{"g1.b", sc.B, &pk.G1.B},
		{"g1.z", Z, &pk.G1.Z},
		{"g1.k", sc.pkK, &pk.G1.K},
		{"vk.g1.k", sc.vkK, &vk.G1.K},
	}
	for _, j := range g1Jobs {
		pts, err := multiplyG1(mul, g1, j.scalars)
		if err != nil {
			return nil, nil, fmt.Errorf("keygen: %s (%d points): %w", j.name, len(j.scalars), err)
		}
		*j.out = pts
		st.done(j.name)
	}
	if err := sc.fixedPoints(mul, pk, vk); err != nil {
		return nil, nil, err
	}
	if pk.G2.B, err = multiplyG2(mul, g2, sc.B); err != nil {
		return nil, nil, fmt.Errorf("keygen: g2.b (%d points): %w", len(sc.B), err)
	}
	st.done("g2.b")
	if pk.CommitmentKeys, vk.CommitmentKeys, err = commitmentKeys(mul, rnd, sc.basisK); err != nil {
		return nil, nil, fmt.Errorf("keygen: %w", err)
	}
	if err := sc.finishVK(vk); err != nil {
		return nil, nil, err
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
	if !slog.Default().Enabled(context.Background(), slog.LevelDebug) {
		s.last = now
		return
	}
	attrs := append([]any{"stage", name, "took", now.Sub(s.last), "total", now.Sub(s.start)}, s.attrs...)
	slog.Debug("keygen", append(attrs, ReadHostMemory().Attrs()...)...)
	s.last = now
}
