package engine_test

import (
	"context"
	"fmt"
	"math/big"

	"github.com/consensys/gnark/frontend"

	"github.com/cuzk/cuzk/engine"
)

// cubic proves knowledge of x with x³ + x + 5 = y, y public; x³ comes from
// a hint of the caller's, which gnark's registry does not know.
type cubic struct {
	X frontend.Variable
	Y frontend.Variable `gnark:",public"`
}

func cube(_ *big.Int, in, out []*big.Int) error {
	out[0].Exp(in[0], big.NewInt(3), nil)
	return nil
}

func (c *cubic) Define(api frontend.API) error {
	x3, err := api.Compiler().NewHint(cube, 1, c.X)
	if err != nil {
		return err
	}
	api.AssertIsEqual(x3[0], api.Mul(c.X, c.X, c.X))
	api.AssertIsEqual(api.Add(x3[0], c.X, 5), c.Y)
	return nil
}

func Example() {
	ctx := context.Background()
	ccs, err := engine.Compile(&cubic{})
	if err != nil {
		panic(err)
	}
	keys, err := engine.Setup(ctx, ccs) // cuzk's key generation on the CPU
	if err != nil {
		panic(err)
	}
	// A job of three partitions: one witness each.
	var witnesses []frontend.Circuit
	for x := 2; x <= 4; x++ {
		witnesses = append(witnesses, &cubic{X: x, Y: x*x*x + x + 5})
	}
	full, err := engine.Witnesses(witnesses...)
	if err != nil {
		panic(err)
	}
	proofs, err := engine.ProveAll(ctx, keys, full, engine.WithHints(cube), engine.WithWorkers(2))
	if err != nil {
		panic(err)
	}
	for i, proof := range proofs {
		public, _ := full[i].Public()
		fmt.Printf("partition %d verifies: %v\n", i, engine.Verify(keys, proof, public) == nil)
	}
	// Without the hint, the error names it.
	_, err = engine.Prove(ctx, keys, full[0])
	fmt.Println(err)
	// Output:
	// partition 0 verifies: true
	// partition 1 verifies: true
	// partition 2 verifies: true
	// hint is not registered: the circuit calls github.com/cuzk/cuzk/engine_test.cube; give hints to the prover with solver.WithHints
}
