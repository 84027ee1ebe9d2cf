package model

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoClockNoGoroutine: the model decides, its drivers keep time and run
// work. A clock read, a sleep, a goroutine or a lock in here would make the
// simulator's runs depend on the machine, or the emulated device deadlock.
func TestNoClockNoGoroutine(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	banned := regexp.MustCompile(`\btime\.|\bgo func|\bgo [a-zA-Z_.]+\(|"sync"|"time"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, ln := range strings.Split(string(b), "\n") {
			if code, _, _ := strings.Cut(ln, "//"); banned.MatchString(code) {
				t.Errorf("%s:%d: %s", f, i+1, strings.TrimSpace(ln))
			}
		}
	}
}
