//go:build !race

package circuits

// raceEnabled reports whether the tests run under the race detector, which
// makes gnark's compiler several times slower and has nothing to find in it.
const raceEnabled = false
