package prover

import (
	"context"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/keygen"
)

// Keys that SetupTo streams to a directory load, pass the manifest's checks
// and prove partitions gnark verifies; what it reports of them is what
// loads.
func TestSetupToWritesKeysThatProve(t *testing.T) {
	c, err := circuits.Lookup("mimc")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wr, err := SetupTo(c, testSize, keygen.CPUMultiplier{}, dir, keygen.DumpOptions{Chunk: 300})
	if err != nil {
		t.Fatal(err)
	}
	k, err := Load(dir, "mimc", wr.Layout)
	if err != nil {
		t.Fatalf("load what SetupTo wrote: %v", err)
	}
	if k.Hash != wr.Hash || wr.Dir != dir || wr.Constraints != k.Constraints() {
		t.Errorf("SetupTo says hash %s, %d constraints; loaded %s, %d", wr.Hash, wr.Constraints, k.Hash, k.Constraints())
	}
	if wr.Wires != len(k.PK.InfinityA) || wr.Domain != k.PK.Domain.Cardinality {
		t.Errorf("SetupTo says %d wires, domain %d; the key has %d, %d", wr.Wires, wr.Domain, len(k.PK.InfinityA), k.PK.Domain.Cardinality)
	}
	proveVerifies(t, k, "stream", 1)
}

// A circuit that cannot be laid out at the target is an error, and leaves
// no manifest behind.
func TestSetupToRefusesBadTarget(t *testing.T) {
	c, err := circuits.Lookup("mimc")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := SetupTo(c, 1, nil, dir, keygen.DumpOptions{}); err == nil {
		t.Fatal("target of 1 constraint: no error")
	}
	if _, err := ReadManifest(dir); err == nil {
		t.Error("a failed setup left a manifest")
	}
}

// Keys made in memory through the pipe prove, and equal the ones SetupDump
// writes for their size: every section arrived.
func TestSetupInMemoryProves(t *testing.T) {
	k := porepInMemory(t)
	if len(k.PK.G1.Z) != int(k.PK.Domain.Cardinality)-1 || len(k.PK.G2.B) != len(k.PK.G1.B) || len(k.PK.G1.A) == 0 {
		t.Fatalf("proving key sections: A %d, B %d, Z %d, G2 B %d", len(k.PK.G1.A), len(k.PK.G1.B), len(k.PK.G1.Z), len(k.PK.G2.B))
	}
	w, err := Witness(k, []byte("pipe"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Prove(context.Background(), k, CPU{}, w, nil); err != nil {
		t.Fatalf("prove with keys made in memory: %v", err)
	}
	// Caches by hash (a device's resident keys) must tell two sets apart.
	if !strings.HasPrefix(k.Hash, "memory-") || len(k.Hash) != len("memory-")+64 || k.Dir != "" {
		t.Errorf("keys made in memory: hash %q, dir %q", k.Hash, k.Dir)
	}
	k2 := porepInMemory(t)
	if k2.Hash == k.Hash {
		t.Errorf("two key sets made in memory share the hash %s", k.Hash)
	}
}
