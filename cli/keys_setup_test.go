package cli

import (
	"regexp"
	"strings"
	"testing"
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
