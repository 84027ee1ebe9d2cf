// Package testenv reads the environment variables that size the long tests.
package testenv

import (
	"os"
	"strconv"
	"testing"
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
