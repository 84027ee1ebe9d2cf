package keygen_test

import (
	"bytes"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/keygen"
)

// TestSetupDumpIsSetupsDump: the proving key SetupDump writes section by
// section is, byte for byte, the WriteDump of Setup's key for the same seed,
// whatever the chunk (one point, a few, more than a section), with and
// without commitments; the verifying keys are equal too.
func TestSetupDumpIsSetupsDump(t *testing.T) {
	withCommit, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &circuits.WithCommitment{})
	if err != nil {
		t.Fatal(err)
	}
	systems := map[string]*cs.R1CS{
		"mimc":   compile(t, "mimc", circuits.MinConstraints).CS,
		"commit": withCommit.(*cs.R1CS),
	}
	for name, sys := range systems {
		pk, vk, err := keygen.Setup(sys, nil, seeded(4))
		if err != nil {
			t.Fatal(err)
		}
		var want, wantVK bytes.Buffer
		if err := pk.WriteDump(&want); err != nil {
			t.Fatal(err)
		}
		if _, err := vk.WriteRawTo(&wantVK); err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int{1, 7, 0} {
			var got, gotVK bytes.Buffer
			dvk, shape, err := keygen.SetupDump(sys, nil, seeded(4), &got, keygen.DumpOptions{Chunk: chunk})
			if err != nil {
				t.Fatalf("%s, chunk %d: %v", name, chunk, err)
			}
			if _, err := dvk.WriteRawTo(&gotVK); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("%s, chunk %d: dump of %d bytes differs from WriteDump's %d", name, chunk, got.Len(), want.Len())
			}
			if !bytes.Equal(gotVK.Bytes(), wantVK.Bytes()) {
				t.Errorf("%s, chunk %d: verifying keys differ", name, chunk)
			}
			if shape.Wires != len(pk.InfinityA) || shape.Domain != pk.Domain.Cardinality {
				t.Errorf("%s: shape %+v, key has %d wires, domain %d", name, shape, len(pk.InfinityA), pk.Domain.Cardinality)
			}
		}
	}
}

// A multiplier that errs, or a writer that fails, makes SetupDump fail.
func TestSetupDumpErrors(t *testing.T) {
	sys := compile(t, "mimc", circuits.MinConstraints).CS
	if _, _, err := keygen.SetupDump(sys, shortMultiplier{}, seeded(5), &bytes.Buffer{}, keygen.DumpOptions{}); err == nil {
		t.Error("a multiplier that returns too few points: no error")
	}
	if _, _, err := keygen.SetupDump(sys, nil, seeded(5), failingWriter{}, keygen.DumpOptions{}); err == nil {
		t.Error("a writer that fails: no error")
	}
}

type failingWriter struct{}

func (failingWriter) Write(p []byte) (int, error) { return 0, bytes.ErrTooLarge }
