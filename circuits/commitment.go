package circuits

import "github.com/consensys/gnark/frontend"

// WithCommitment is a tiny circuit (X² = Y, Y public) that uses gnark's
// api.Commit. The staged prover and keygen refuse such circuits; tests use
// this one to check that they do. It is not one of the example circuits.
type WithCommitment struct {
	X frontend.Variable
	Y frontend.Variable `gnark:",public"`
}

// Define implements frontend.Circuit.
func (c *WithCommitment) Define(api frontend.API) error {
	cm, err := api.(frontend.Committer).Commit(c.X)
	if err != nil {
		return err
	}
	api.AssertIsDifferent(cm, 0)
	api.AssertIsEqual(api.Mul(c.X, c.X), c.Y)
	return nil
}
