package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/prover"
)

// prove --setup-if-missing with keygen on the CPU writes the proving key as
// it is made and proves with the keys read back; setup's report says the
// circuit's size as before.
func TestSetupIfMissingWithKeygen(t *testing.T) {
	keys, out := t.TempDir(), t.TempDir()
	stdout, stderr, err := run(t, "prove", "--circuit", "mimc", "--constraints", "1K", "--partitions", "1", "--backend", "cpu",
		"--keys", keys, "--out", out, "--setup-if-missing", "--keygen", "cpu", "--json")
	if err != nil || !strings.Contains(stdout, `"proved": 1`) {
		t.Fatalf("prove --setup-if-missing --keygen cpu: %v\n%s\n%s", err, stdout, stderr)
	}
	if !regexp.MustCompile(`setup: \d+ constraints, \d+ wires, domain 2\^10, took .*; key hash [0-9a-f]{16}\n`).MatchString(stderr) {
		t.Errorf("setup's report:\n%s", stderr)
	}
}

// setup --points-file writes the points file of the keys it made (keygen's
// streamed proving key, read back from disk), and it checks out.
func TestSetupWritesThePointsFile(t *testing.T) {
	keys := t.TempDir()
	_, stderr, err := run(t, "setup", "--circuit", "mimc", "--constraints", "1K", "--keys", keys, "--keygen", "cpu", "--points-file")
	if err != nil {
		t.Fatalf("setup --points-file: %v\n%s", err, stderr)
	}
	dir := prover.KeyDir(keys, "mimc", 1<<10)
	m, err := prover.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := prover.OpenPoints(filepath.Join(dir, prover.PointsFileName), m.Hash)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	counts, err := prover.ReadPointCounts(dir)
	if err != nil || p.Counts() != counts || !strings.Contains(stderr, prover.PointsFileName) {
		t.Fatalf("points file %+v, proving key %+v (%v)\n%s", p.Counts(), counts, err, stderr)
	}
}
