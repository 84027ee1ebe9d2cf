package keygen

import (
	"fmt"
	"io"
	"math/big"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/internal/par"
)

// scalars are what a setup multiplies by the generators, made from the
// R1CS and the toxic waste; nothing of the R1CS is needed after them.
type scalars struct {
	tw     toxicWaste
	domain *fft.Domain

	// A and B of the wires whose point is not at infinity, in wire order;
	// infA, infB flag the others.
	A, B       []fr.Element
	infA, infB []bool
	nbInfA     uint64
	nbInfB     uint64
	// K of the proving key's wires, the verifying key's, and of each
	// commitment's basis.
	pkK, vkK []fr.Element
	basisK   [][]fr.Element

	publicAndCommitmentCommitted [][]int
}

// prepare draws the toxic waste from rnd and computes every scalar of the
// keys but Z's (zScalars).
func prepare(r1cs *cs.R1CS, rnd io.Reader) (*scalars, *stages, error) {
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
	// The domain's FFT tables (128 bytes a constraint, 16 GiB at 2^27) are
	// not needed here: the evaluation uses its generator alone.
	sc := &scalars{domain: fft.NewDomain(uint64(r1cs.GetNbConstraints()), fft.WithoutPrecompute())}
	if sc.tw, err = drawToxicWaste(rnd, sc.domain.Cardinality); err != nil {
		return nil, nil, err
	}
	st := newStages(nbWires, r1cs.GetNbConstraints())

	A, B, C, err := evaluateABC(r1cs, sc.domain, sc.tw.tau)
	if err != nil {
		return nil, nil, err
	}
	st.done("evaluate")

	// K: (β·A + α·B + C) of each wire, divided by γ for the wires the
	// verifier sees (public and commitment wires, to the verifying key) and
	// the private committed ones (to their commitment's basis), by δ for the
	// rest (to the proving key); C is not needed after.
	tw := &sc.tw
	sc.vkK, sc.pkK = make([]fr.Element, kl.NbVK), make([]fr.Element, kl.NbPK)
	sc.basisK = make([][]fr.Element, len(kl.Bases))
	for c, n := range kl.Bases {
		sc.basisK[c] = make([]fr.Element, n)
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
			*kl.place(i, nbPublic, sc.vkK, sc.pkK, sc.basisK) = k
		}
	})
	sc.infA, sc.nbInfA, sc.A = filterZero(A)
	sc.infB, sc.nbInfB, sc.B = filterZero(B)
	sc.publicAndCommitmentCommitted = commitments.GetPublicAndCommitmentCommitted(commitments.CommitmentIndexes(), nbPublic)
	st.done("scalars")
	return sc, st, nil
}

// zScalars returns Z[j] = (τⁿ − 1)/δ · τ^bitrev(j) for j < n−1: gnark
// multiplies the n powers in natural order, bit-reverses the points and
// keeps n−1 of them (deg H = n−2); reversing the scalars instead gives the
// same points.
func (sc *scalars) zScalars() []fr.Element {
	n := int(sc.domain.Cardinality)
	Z := make([]fr.Element, n)
	var zdt fr.Element
	zdt.Exp(sc.tw.tau, new(big.Int).SetUint64(uint64(n)))
	one := fr.One()
	zdt.Sub(&zdt, &one).Mul(&zdt, &sc.tw.deltaInv)
	powers(Z, zdt, sc.tw.tau)
	fft.BitReverse(Z)
	return Z[:n-1]
}

// provingKeyHeader is the proving key without its points. Its domain has
// no FFT tables; Setup gives its key gnark's, with them (withTables).
func (sc *scalars) provingKeyHeader() *groth16bls.ProvingKey {
	pk := &groth16bls.ProvingKey{Domain: *sc.domain}
	pk.InfinityA, pk.NbInfinityA = sc.infA, sc.nbInfA
	pk.InfinityB, pk.NbInfinityB = sc.infB, sc.nbInfB
	return pk
}

// fixedPoints sets [α]₁, [β]₁, [δ]₁ and [β]₂, [δ]₂, [γ]₂ in both keys.
func (sc *scalars) fixedPoints(mul Multiplier, pk *groth16bls.ProvingKey, vk *groth16bls.VerifyingKey) error {
	_, _, g1, g2 := curve.Generators()
	tw := &sc.tw
	abd, err := multiplyG1(mul, g1, []fr.Element{tw.alpha, tw.beta, tw.delta})
	if err != nil {
		return fmt.Errorf("keygen: [α]₁, [β]₁, [δ]₁: %w", err)
	}
	pk.G1.Alpha, pk.G1.Beta, pk.G1.Delta = abd[0], abd[1], abd[2]
	bdg, err := multiplyG2(mul, g2, []fr.Element{tw.beta, tw.delta, tw.gamma})
	if err != nil {
		return fmt.Errorf("keygen: [β]₂, [δ]₂, [γ]₂: %w", err)
	}
	pk.G2.Beta, pk.G2.Delta = bdg[0], bdg[1]
	vk.G1.Alpha, vk.G1.Beta, vk.G1.Delta = pk.G1.Alpha, pk.G1.Beta, pk.G1.Delta
	vk.G2.Beta, vk.G2.Delta, vk.G2.Gamma = bdg[0], bdg[1], bdg[2]
	return nil
}

// finishVK sets what the verifying key takes from the commitments and
// precomputes its pairing.
func (sc *scalars) finishVK(vk *groth16bls.VerifyingKey) error {
	vk.PublicAndCommitmentCommitted = sc.publicAndCommitmentCommitted
	if err := vk.Precompute(); err != nil {
		return fmt.Errorf("keygen: verifying key: %w", err)
	}
	return nil
}
