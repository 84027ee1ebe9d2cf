package keygen

import (
	"fmt"
	"io"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/pedersen"
	"github.com/consensys/gnark/constraint"
)

// Which key a wire's K scalar goes to. gnark's Groth16 commitments (BSB22)
// move two kinds of wire out of the proving key's K: the commitment wires,
// which the verifier recomputes from the proof and so are public to it, and
// the private wires a commitment commits to, whose K points become that
// commitment's Pedersen basis (all divided by γ, as public wires are).
const (
	setPK    uint16 = iota // the proving key's K (divided by δ)
	setVK                  // the verifying key's K: public and commitment wires
	setBasis               // setBasis+c: commitment c's Pedersen basis
)

// KLayout says where each wire's K point lives in keys for a circuit with
// commitments. The zero value (no commitments) is what keygen used before:
// the public wires in the verifying key, every other wire in the proving
// key, in wire order.
type KLayout struct {
	// NbVK, NbPK are the number of K points in the verifying and the
	// proving key; Bases the size of each commitment's basis.
	NbVK, NbPK int
	Bases      []int

	set []uint16 // per wire; nil without commitments
	at  []uint32 // per wire, its index in its set
}

// NewKLayout lays out K for a system with nbPublic public wires (the
// constant one included) and nbWires wires in all, the way gnark's setup and
// prover agree on: the verifying key has the public wires, then the
// commitment wires, in wire order; commitment c's basis has its private
// committed wires in the order of PrivateCommitted; the proving key has the
// rest in wire order. A wire named twice, or out of range, is an error.
func NewKLayout(info constraint.Groth16Commitments, nbPublic, nbWires int) (*KLayout, error) {
	l := &KLayout{Bases: make([]int, len(info))}
	if len(info) == 0 {
		l.NbVK, l.NbPK = nbPublic, nbWires-nbPublic
		return l, nil
	}
	if len(info) >= 1<<16-int(setBasis) {
		return nil, fmt.Errorf("%d commitments, more than keygen lays out", len(info))
	}
	l.set, l.at = make([]uint16, nbWires), make([]uint32, nbWires)
	for i := range nbPublic {
		l.set[i] = setVK
	}
	claim := func(w int, set uint16, at int, what string) error {
		if w < nbPublic || w >= nbWires {
			return fmt.Errorf("%s: wire %d is not a private wire (%d public, %d wires)", what, w, nbPublic, nbWires)
		}
		if l.set[w] != setPK {
			return fmt.Errorf("%s: wire %d is committed twice", what, w)
		}
		l.set[w], l.at[w] = set, uint32(at)
		return nil
	}
	for c, ci := range info {
		if err := claim(ci.CommitmentIndex, setVK, 0, fmt.Sprintf("commitment %d", c)); err != nil {
			return nil, err
		}
		for j, w := range ci.PrivateCommitted {
			if err := claim(w, setBasis+uint16(c), j, fmt.Sprintf("commitment %d", c)); err != nil {
				return nil, err
			}
		}
		l.Bases[c] = len(ci.PrivateCommitted)
	}
	for i, s := range l.set {
		switch s {
		case setVK:
			l.at[i] = uint32(l.NbVK)
			l.NbVK++
		case setPK:
			l.at[i] = uint32(l.NbPK)
			l.NbPK++
		}
	}
	return l, nil
}

// InPK says whether wire i's K point is in the proving key: the wires whose
// values the K MSM of the prover takes.
func (l *KLayout) InPK(i, nbPublic int) bool {
	if l.set == nil {
		return i >= nbPublic
	}
	return l.set[i] == setPK
}

// place returns the slice and index wire i's K scalar goes to.
func (l *KLayout) place(i, nbPublic int, vk, pk []fr.Element, bases [][]fr.Element) *fr.Element {
	if l.set == nil {
		if i < nbPublic {
			return &vk[i]
		}
		return &pk[i-nbPublic]
	}
	switch s := l.set[i]; s {
	case setVK:
		return &vk[l.at[i]]
	case setPK:
		return &pk[l.at[i]]
	default:
		return &bases[s-setBasis][l.at[i]]
	}
}

// vkScaled says whether wire i's K is divided by γ (verifying key and
// commitment bases) rather than δ.
func (l *KLayout) vkScaled(i, nbPublic int) bool {
	if l.set == nil {
		return i < nbPublic
	}
	return l.set[i] != setPK
}

// commitmentKeys makes the Pedersen keys of the commitments from the scalars
// of their bases, as gnark's setup does (pedersen.Setup with one G2 point
// for all): basis points [kᵢ]₁, the same times a secret σ per commitment,
// and in the verifying key G and −σ·G, G a random point of G2. σ and G's
// discrete log are drawn from rnd after the toxic waste, so a seeded reader
// gives the same keys; the multiplications go to mul.
func commitmentKeys(mul Multiplier, rnd io.Reader, bases [][]fr.Element) ([]pedersen.ProvingKey, []pedersen.VerifyingKey, error) {
	if len(bases) == 0 {
		return nil, nil, nil
	}
	_, _, g1, g2 := curve.Generators()
	var rho fr.Element
	if err := randomNonZero(rnd, &rho); err != nil {
		return nil, nil, err
	}
	sigmas := make([]fr.Element, len(bases))
	for c := range sigmas {
		if err := randomNonZero(rnd, &sigmas[c]); err != nil {
			return nil, nil, err
		}
	}
	// G = ρ·g₂ and −σ_c·G = (−σ_c·ρ)·g₂, in one batch.
	g2Scalars := make([]fr.Element, 1+len(bases))
	g2Scalars[0] = rho
	for c := range sigmas {
		g2Scalars[1+c].Mul(&sigmas[c], &rho).Neg(&g2Scalars[1+c])
	}
	g2Pts, err := multiplyG2(mul, g2, g2Scalars)
	if err != nil {
		return nil, nil, fmt.Errorf("commitment keys' G2 points: %w", err)
	}
	pks := make([]pedersen.ProvingKey, len(bases))
	vks := make([]pedersen.VerifyingKey, len(bases))
	for c, b := range bases {
		if len(b) == 0 { // a commitment to public wires only
			pks[c] = pedersen.ProvingKey{Basis: []curve.G1Affine{}, BasisExpSigma: []curve.G1Affine{}}
			vks[c] = pedersen.VerifyingKey{G: g2Pts[0], GSigmaNeg: g2Pts[1+c]}
			continue
		}
		scalars := make([]fr.Element, 2*len(b))
		copy(scalars, b)
		for j := range b {
			scalars[len(b)+j].Mul(&b[j], &sigmas[c])
		}
		pts, err := multiplyG1(mul, g1, scalars)
		if err != nil {
			return nil, nil, fmt.Errorf("commitment %d's basis (%d points): %w", c, len(b), err)
		}
		pks[c] = pedersen.ProvingKey{Basis: pts[:len(b):len(b)], BasisExpSigma: pts[len(b):]}
		vks[c] = pedersen.VerifyingKey{G: g2Pts[0], GSigmaNeg: g2Pts[1+c]}
	}
	return pks, vks, nil
}
