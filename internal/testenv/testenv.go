// Package testenv holds what the tests of several packages share: the
// environment variables that size the long tests, and fixed hints.
package testenv

import (
	"math/big"
	"os"
	"strconv"
	"testing"

	cs "github.com/consensys/gnark/constraint/bls12-381"
	csolver "github.com/consensys/gnark/constraint/solver"
)

// Count reads a positive count from the environment variable name, else
// def; anything else there fails the test.
func Count(t testing.TB, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive count", name, s)
	}
	return n
}

// FixedMask replaces the hint with which gnark masks each commitment (a
// random value committed beside the wires, internal/hints.Randomize) by a
// constant, so that two provers given the same witness commit to the same
// values. A circuit without that hint fails the test.
func FixedMask(t testing.TB, r *cs.R1CS) []csolver.Option {
	t.Helper()
	for id, name := range r.MHintsDependencies {
		if name == "github.com/consensys/gnark/internal/hints.Randomize" {
			return []csolver.Option{csolver.OverrideHint(id, func(_ *big.Int, _, out []*big.Int) error {
				out[0].SetUint64(0xc0ffee)
				return nil
			})}
		}
	}
	t.Fatal("no masking hint in the circuit")
	return nil
}
