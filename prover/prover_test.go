package prover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"

	"github.com/cuzk/cuzk/circuits"
)

const testSize = 1 << 11

// testKeys sets up keys once per circuit for the package's tests.
var keyCache = map[string]*Keys{}

func testKeys(t testing.TB, name string) *Keys {
	t.Helper()
	if k, ok := keyCache[name]; ok {
		return k
	}
	c, err := circuits.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	// Keys for sha2's smallest instance (157,756 constraints) take minutes
	// on the CPU; package circuits and cli's bench cover it.
	if n, err := circuits.Smallest(c); err == nil && n > 4*testSize {
		t.Skipf("%s: its smallest instance has %d constraints", name, n)
	}
	k, err := Setup(c, testSize)
	if err != nil {
		t.Fatal(err)
	}
	keyCache[name] = k
	return k
}

// proveVerifies proves partition p of seed's job with the CPU backend and
// fails t unless gnark's verifier accepts the proof.
func proveVerifies(t *testing.T, k *Keys, seed string, p int) {
	t.Helper()
	w, err := Witness(k, []byte(seed), p)
	if err != nil {
		t.Fatal(err)
	}
	proveVerifiesOn(t, k, CPU{}, w, fmt.Sprintf("partition %d", p))
}

// proveVerifiesOn proves w with backend b and fails t, naming what, unless
// gnark's verifier accepts the proof.
func proveVerifiesOn(t *testing.T, k *Keys, b Backend, w witness.Witness, what string) {
	t.Helper()
	proof, _, err := Prove(context.Background(), k, b, w, nil)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	pub, _ := w.Public()
	if err := groth16.Verify(proof, k.VK, pub); err != nil {
		t.Fatalf("%s: gnark rejects the proof: %v", what, err)
	}
}

func TestStagedProofVerifies(t *testing.T) {
	for _, name := range circuits.Names() {
		t.Run(name, func(t *testing.T) {
			k := testKeys(t, name)
			// One partition per circuit: under the race detector each proof
			// costs seconds; the partitions' differences are checked below.
			for p := 0; p < 1; p++ {
				w, err := Witness(k, []byte("job-seed"), p)
				if err != nil {
					t.Fatal(err)
				}
				proof, timings, err := Prove(context.Background(), k, CPU{}, w, nil)
				if err != nil {
					t.Fatalf("partition %d: %v", p, err)
				}
				for _, s := range StageNames {
					if _, ok := timings[s]; !ok {
						t.Errorf("no timing for stage %s", s)
					}
				}
				// gnark's own verifier, through its generic API.
				pub, _ := w.Public()
				if err := groth16.Verify(proof, k.VK, pub); err != nil {
					t.Fatalf("partition %d: gnark rejects the proof: %v", p, err)
				}
				// The proof must not verify against another partition's inputs.
				other, _ := Witness(k, []byte("job-seed"), p+1)
				otherPub, _ := other.Public()
				if err := groth16.Verify(proof, k.VK, otherPub); err == nil {
					t.Fatalf("partition %d's proof verifies for partition %d", p, p+1)
				}
			}
		})
	}
}

// TestTamperedComputeIsCaught checks that Finalize's verification catches a
// wrong MSM result instead of returning a bad proof.
func TestTamperedComputeIsCaught(t *testing.T) {
	k := testKeys(t, "mimc")
	w, _ := Witness(k, []byte("s"), 0)
	_, prep := plainPrepared(t, k, w)
	bg2, err := BG2(context.Background(), k, prep)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := CPU{}.Stage(context.Background(), k, prep)
	comp, err := CPU{}.Compute(context.Background(), k, st)
	if err != nil {
		t.Fatal(err)
	}
	bad := *comp
	bad.Z.Double(&bad.Z)
	if _, err := Finalize(k, &bad, &bg2, prep, fixedRandom(t)); err == nil {
		t.Fatal("a wrong H MSM produced a verifying proof")
	}
	if _, err := Finalize(k, comp, &bg2, prep, fixedRandom(t)); err != nil {
		t.Fatal(err)
	}
}

func fixedRandom(t *testing.T) *bytes.Reader {
	t.Helper()
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i*7 + 1)
	}
	return bytes.NewReader(b)
}

func TestUnsatisfiedWitnessNamesConstraint(t *testing.T) {
	k := testKeys(t, "mimc")
	w, _ := Witness(k, []byte("s"), 0)
	// The public digest is the witness's first element: make it wrong.
	v := w.Vector().(fr.Vector)
	v[0].SetUint64(12345)
	_, err := Synthesize(k, w)
	if !errors.Is(err, ErrUnsatisfied) {
		t.Fatalf("got %v, want ErrUnsatisfied", err)
	}
	if !strings.Contains(err.Error(), "constraint") {
		t.Errorf("error does not name the constraint: %v", err)
	}
}

func TestKeysRoundTripAndRefusals(t *testing.T) {
	k := testKeys(t, "mimc")
	dir := t.TempDir()
	if err := k.Save(dir); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir, "mimc", k.Layout)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != k.Hash || got.Hash == "" {
		t.Fatalf("hash %q after load, %q before", got.Hash, k.Hash)
	}
	w, _ := Witness(got, []byte("x"), 3)
	if _, _, err := Prove(context.Background(), got, CPU{}, w, nil); err != nil {
		t.Fatalf("prove with loaded keys: %v", err)
	}

	if _, err := Load(dir, "porep", nil); err == nil || !strings.Contains(err.Error(), "manifest.json") {
		t.Errorf("keys of another circuit: %v", err)
	}
	if _, err := Load(t.TempDir(), "mimc", nil); !errors.Is(err, ErrNoKeys) {
		t.Errorf("empty dir: %v", err)
	}
	// Flip one byte in the proving key.
	pkPath := filepath.Join(dir, pkFile)
	b, _ := os.ReadFile(pkPath)
	b[len(b)/2] ^= 0x40
	os.WriteFile(pkPath, b, 0o644)
	if _, err := Load(dir, "mimc", nil); err == nil || !strings.Contains(err.Error(), pkFile) {
		t.Errorf("corrupt proving key: %v", err)
	}
	// Truncate it.
	os.WriteFile(pkPath, b[:100], 0o644)
	if _, err := Load(dir, "mimc", nil); err == nil || !strings.Contains(err.Error(), pkFile) {
		t.Errorf("truncated proving key: %v", err)
	}
}
