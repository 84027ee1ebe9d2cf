package prover

import (
	"fmt"
	"math/big"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/hash_to_field"
	"github.com/consensys/gnark/constraint"
	csolver "github.com/consensys/gnark/constraint/solver"
	fcs "github.com/consensys/gnark/frontend/cs"

	"github.com/cuzk/cuzk/internal/par"
	"github.com/cuzk/cuzk/keygen"
	"github.com/cuzk/cuzk/solve"
)

// Commitments are one partition's gnark commitments (api.Commit, BSB22 as
// gnark's Groth16 makes them): computed while solving, since the circuit
// reads each commitment's hash as a wire, and folded into one proof of
// knowledge in Finalize.
type Commitments struct {
	// Points are the Pedersen commitments, the proof's Commitments.
	Points []curve.G1Affine
	// Private are each commitment's private committed values, what the
	// proof of knowledge is over.
	Private [][]fr.Element
	// Hashes are the commitment wires' values (the challenges the circuit
	// saw), from which the proof of knowledge's folding challenge is drawn.
	Hashes []fr.Element
}

// commitPlan is what a circuit's commitments ask of the prover, worked out
// once per Keys.
type commitPlan struct {
	info   constraint.Groth16Commitments
	layout *keygen.KLayout // which wires the K MSM takes
}

// bsb22 is the id of the hint gnark's builder leaves in place of each
// commitment; the prover replaces it, as gnark's does.
var bsb22 = csolver.GetHintID(fcs.Bsb22CommitmentComputePlaceholder)

// commitments returns k's commitment plan.
func (k *Keys) commitments() (*commitPlan, error) {
	k.planOnce.Do(func() {
		info, ok := k.CS.CommitmentInfo.(constraint.Groth16Commitments)
		if !ok {
			k.planErr = fmt.Errorf("constraint system has %T commitments, not Groth16's", k.CS.CommitmentInfo)
			return
		}
		nbPublic := k.CS.GetNbPublicVariables()
		nbWires := nbPublic + k.CS.GetNbSecretVariables() + k.CS.NbInternalVariables
		l, err := keygen.NewKLayout(info, nbPublic, nbWires)
		if err != nil {
			k.planErr = fmt.Errorf("constraint system's commitments: %w", err)
			return
		}
		k.plan = &commitPlan{info: info, layout: l}
	})
	return k.plan, k.planErr
}

// committer computes the commitments of one solve. Its hint replaces
// gnark's placeholder: it commits to the private committed values with
// commitment i's Pedersen key and returns the hash of the commitment and the
// public committed values, which the circuit then uses as a challenge; as
// gnark's prover does, so that the wires are the same.
type committer struct {
	k   *Keys
	msm CommitmentMSMer // the backend's commitment MSMs; nil: the host's
	out Commitments
	// errs are the MSMs' failures by commitment, which the solvers would
	// report as an unsatisfied constraint (gnark's) or bury in the hint's
	// name (cuzk's): Synthesize returns them as they are.
	errs []error
}

func newCommitter(k *Keys, plan *commitPlan, msm CommitmentMSMer) (*committer, error) {
	n := len(plan.info)
	if len(k.PK.CommitmentKeys) != n {
		return nil, fmt.Errorf("proving key has %d commitment keys, the circuit %d commitments: keys are for another circuit", len(k.PK.CommitmentKeys), n)
	}
	for i, ci := range plan.info {
		if got := len(k.PK.CommitmentKeys[i].Basis); got != len(ci.PrivateCommitted) || len(k.PK.CommitmentKeys[i].BasisExpSigma) != got {
			return nil, fmt.Errorf("proving key's commitment %d has %d basis points for %d committed wires: keys are for another circuit", i, got, len(ci.PrivateCommitted))
		}
	}
	return &committer{k: k, msm: msm, errs: make([]error, n), out: Commitments{
		Points: make([]curve.G1Affine, n), Private: make([][]fr.Element, n), Hashes: make([]fr.Element, n)}}, nil
}

// err is the first commitment MSM that failed, nil if none did.
func (c *committer) err() error {
	for i, err := range c.errs {
		if err != nil {
			return fmt.Errorf("commitment %d: %w", i, err)
		}
	}
	return nil
}

// hint runs for each commitment, possibly at once for several: each writes
// only its own index. It is gnark's solver's form of native.
func (c *committer) hint(_ *big.Int, in, out []*big.Int) error {
	if len(in) == 0 || len(out) != 1 {
		return fmt.Errorf("commitment hint: %d inputs, %d outputs: not a commitment of this circuit", len(in), len(out))
	}
	v := make([]fr.Element, len(in))
	for j, x := range in {
		v[j].SetBigInt(x)
	}
	var res [1]fr.Element
	if err := c.native(v, res[:]); err != nil {
		return err
	}
	res[0].BigInt(out[0])
	return nil
}

// native is the commitment hint over field elements, as cuzk's solver runs
// it: in is the commitment's index, its public and then its private
// committed values (which it keeps), out the commitment's hash.
func (c *committer) native(in, out []fr.Element) error {
	info := c.k.plan.info
	if len(in) == 0 || len(out) != 1 || !in[0].IsUint64() || in[0].Uint64() >= uint64(len(info)) {
		return fmt.Errorf("commitment hint: %d inputs, %d outputs: not a commitment of this circuit", len(in), len(out))
	}
	i := int(in[0].Uint64())
	in = in[1:]
	ci := info[i]
	if len(in) != len(ci.PublicAndCommitmentCommitted)+len(ci.PrivateCommitted) {
		return fmt.Errorf("commitment %d: %d inputs for %d committed wires", i, len(in), len(ci.PublicAndCommitmentCommitted)+len(ci.PrivateCommitted))
	}
	public := make([]*big.Int, len(ci.PublicAndCommitmentCommitted))
	for j := range public {
		public[j] = in[j].BigInt(new(big.Int))
	}
	private := in[len(public):]
	var cm curve.G1Affine
	var err error
	if c.msm != nil {
		cm, err = c.msm.CommitMSM(c.k, i, private)
	} else {
		_, err = cm.MultiExp(c.k.PK.CommitmentKeys[i].Basis, private, ecc.MultiExpConfig{})
	}
	if err != nil {
		c.errs[i] = err
		return fmt.Errorf("commitment %d: %w", i, err)
	}
	h := hash_to_field.New([]byte(constraint.CommitmentDst))
	h.Write(constraint.SerializeCommitment(cm.Marshal(), public, (fr.Bits-1)/8+1))
	sum := h.Sum(nil)
	out[0].SetBytes(sum[:min(fr.Bytes, h.Size())])
	c.out.Points[i], c.out.Private[i], c.out.Hashes[i] = cm, private, out[0]
	return nil
}

// proveKnowledge is the proof's CommitmentPok: the proofs of knowledge of
// all commitments folded with a challenge drawn from their hashes, as one
// MSM over the keys' σ-bases (gnark's prover folds the separate proofs; the
// sum is the same), by msm when not nil, else on the host.
func proveKnowledge(k *Keys, cm *Commitments, msm CommitmentMSMer) (curve.G1Affine, error) {
	var pok curve.G1Affine
	keys := k.PK.CommitmentKeys
	if len(keys) != len(cm.Private) || len(cm.Hashes) != len(cm.Private) {
		return pok, fmt.Errorf("%d commitments for %d commitment keys", len(cm.Private), len(keys))
	}
	ser := make([]byte, 0, fr.Bytes*len(cm.Hashes))
	for i := range cm.Hashes {
		b := cm.Hashes[i].Bytes()
		ser = append(ser, b[:]...)
	}
	challenge, err := fr.Hash(ser, []byte("G16-BSB22"), 1)
	if err != nil {
		return pok, fmt.Errorf("commitment challenge: %w", err)
	}
	var bases []curve.G1Affine
	var scalars []fr.Element
	n := 0
	for i := range keys {
		if len(cm.Private[i]) != len(keys[i].BasisExpSigma) {
			return pok, fmt.Errorf("commitment %d: %d values for %d basis points", i, len(cm.Private[i]), len(keys[i].BasisExpSigma))
		}
		n += len(cm.Private[i])
	}
	if len(keys) == 1 {
		// The first coefficient is one: the values are the scalars.
		scalars = cm.Private[0]
	} else {
		scalars = make([]fr.Element, 0, n)
		coeff := fr.One()
		for i := range keys {
			at := len(scalars)
			scalars = scalars[:at+len(cm.Private[i])]
			c := coeff
			par.Range(len(cm.Private[i]), 4096, 1, func(lo, hi int) {
				for j := lo; j < hi; j++ {
					scalars[at+j].Mul(&cm.Private[i][j], &c)
				}
			})
			coeff.Mul(&coeff, &challenge[0])
		}
	}
	if msm == nil {
		bases = make([]curve.G1Affine, 0, n)
		for i := range keys {
			bases = append(bases, keys[i].BasisExpSigma...)
		}
	}
	if msm != nil {
		pok, err = msm.KnowledgeMSM(k, scalars)
	} else {
		_, err = pok.MultiExp(bases, scalars, ecc.MultiExpConfig{})
	}
	if err != nil {
		return pok, fmt.Errorf("commitments' proof of knowledge: %w", err)
	}
	return pok, nil
}

// hintOverrides is the hints of opts, by id, with the committer's in place
// of gnark's placeholder when there is one: what cuzk's solver takes per
// solve.
func hintOverrides(opts []csolver.Option, c *committer) (solve.Hints, error) {
	var h solve.Hints
	if len(opts) == 0 && c == nil {
		return h, nil
	}
	cfg := csolver.Config{HintFunctions: map[csolver.HintID]csolver.Hint{}}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return h, fmt.Errorf("solver option: %w", err)
		}
	}
	h.Gnark = cfg.HintFunctions
	if c != nil {
		delete(h.Gnark, bsb22)
		h.Native = map[csolver.HintID]solve.NativeHint{bsb22: c.native}
	}
	return h, nil
}
