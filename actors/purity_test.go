package actors

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestActorsUseOnlyTheRuntime keeps the actors drivable by the simulator:
// nothing in this package may read the wall clock, sleep, start goroutines or
// use the global random source. The wall-clock runtime lives in package
// runner, the simulated one in package sim.
func TestActorsUseOnlyTheRuntime(t *testing.T) {
	forbidden := regexp.MustCompile(`\btime\.(Now|Sleep|Since|Until|After|AfterFunc|Tick|NewTimer|NewTicker)\b|\bgo\s+(func\b|[A-Za-z_][\w.]*\()|\brand\.(Int|Intn|IntN|Int64|Int64N|Uint32|Uint64|Float64|Float32|Perm|Shuffle|N)\(|"math/rand"`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for i, line := range strings.Split(string(src), "\n") {
			code, _, _ := strings.Cut(line, "//")
			if m := forbidden.FindString(code); m != "" {
				t.Errorf("%s:%d uses %q: actors must take time, goroutines and randomness from their Runtime", f, i+1, m)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("checked only %d files", checked)
	}
}
