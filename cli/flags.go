package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/store"
)

// Flag checks, run by urfave/cli when a flag is given, so that every command
// refuses the same values in the same words instead of replacing them with a
// default.

// intAtLeast refuses values below lo.
func intAtLeast(name string, lo int) func(*cli.Context, int) error {
	return func(_ *cli.Context, v int) error {
		if v < lo {
			return fmt.Errorf("--%s %d: must be at least %d", name, v, lo)
		}
		return nil
	}
}

// intBetween refuses values outside [lo, hi].
func intBetween(name string, lo, hi int) func(*cli.Context, int) error {
	return func(_ *cli.Context, v int) error {
		if v < lo || v > hi {
			return fmt.Errorf("--%s %d: must be %d to %d", name, v, lo, hi)
		}
		return nil
	}
}

// partitionsFlag checks a partition count against what the store accepts.
func partitionsFlag(name string) func(*cli.Context, int) error {
	return intBetween(name, 1, store.MaxPartitions)
}

// positiveFloat refuses zero, negative and NaN values.
func positiveFloat(name string) func(*cli.Context, float64) error {
	return func(_ *cli.Context, v float64) error {
		if !(v > 0) {
			return fmt.Errorf("--%s %v: must be more than 0", name, v)
		}
		return nil
	}
}

// fraction refuses values outside [0, 1].
func fraction(name string) func(*cli.Context, float64) error {
	return func(_ *cli.Context, v float64) error {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("--%s %v: must be 0 to 1", name, v)
		}
		return nil
	}
}

// nonNegativeDuration refuses negative durations.
func nonNegativeDuration[T ~int64](name string) func(*cli.Context, T) error {
	return func(_ *cli.Context, v T) error {
		if v < 0 {
			return fmt.Errorf("--%s %v: must not be negative", name, fmt.Sprint(v))
		}
		return nil
	}
}
