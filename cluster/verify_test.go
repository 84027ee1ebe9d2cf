package cluster

import (
	"bytes"
	"fmt"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	groth16 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/backend/witness"

	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
)

// verifyProof checks a recorded proof against k's verifying key and the
// public inputs of its partition's witness.
func verifyProof(k *prover.Keys, seed []byte, p store.Proof) error {
	w, err := prover.Witness(k, seed, p.Index)
	if err != nil {
		return err
	}
	pub, err := w.Public()
	if err != nil {
		return err
	}
	want, err := pub.MarshalBinary()
	if err != nil {
		return err
	}
	if !bytes.Equal(want, p.Public) {
		return fmt.Errorf("public inputs are not the partition's")
	}
	proof := &groth16.Proof{}
	if _, err := proof.ReadFrom(bytes.NewReader(p.Proof)); err != nil {
		return fmt.Errorf("proof: %w", err)
	}
	vec, err := witness.New(ecc.BLS12_381.ScalarField())
	if err != nil {
		return err
	}
	if err := vec.UnmarshalBinary(p.Public); err != nil {
		return err
	}
	return groth16.Verify(proof, k.VK, vec.Vector().(fr.Vector))
}
