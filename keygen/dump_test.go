package keygen_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
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

// With NoDomainTables the dump differs from WriteDump's only in the
// domain's flag: the key read back has the same domain without its FFT
// tables and the same points. Evaluated is called once, before the first
// point is written.
func TestSetupDumpWithoutDomainTables(t *testing.T) {
	sys := compile(t, "mimc", circuits.MinConstraints).CS
	var want, got bytes.Buffer
	if _, _, err := keygen.SetupDump(sys, nil, seeded(6), &want, keygen.DumpOptions{}); err != nil {
		t.Fatal(err)
	}
	evaluated := 0
	opt := keygen.DumpOptions{NoDomainTables: true, Evaluated: func() {
		evaluated++
		if got.Len() != 0 {
			t.Errorf("Evaluated called after %d bytes were written", got.Len())
		}
	}}
	if _, _, err := keygen.SetupDump(sys, nil, seeded(6), &got, opt); err != nil {
		t.Fatal(err)
	}
	if evaluated != 1 {
		t.Errorf("Evaluated called %d times, want once", evaluated)
	}
	w, g := want.Bytes(), got.Bytes()
	diff := -1
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			if diff >= 0 {
				t.Fatalf("dumps differ at bytes %d and %d", diff, i)
			}
			diff = i
		}
	}
	if len(w) != len(g) || diff < 0 || w[diff] != 1 || g[diff] != 0 {
		t.Fatalf("dumps of %d and %d bytes, differing at %d: want one flag, 1 against 0", len(w), len(g), diff)
	}
	var pkWant, pkGot groth16bls.ProvingKey
	if err := pkWant.ReadDump(&want); err != nil {
		t.Fatal(err)
	}
	if err := pkGot.ReadDump(&got); err != nil {
		t.Fatal(err)
	}
	if _, err := pkGot.Domain.Twiddles(); err == nil {
		t.Error("the key read back has FFT tables")
	}
	if _, err := pkWant.Domain.Twiddles(); err != nil {
		t.Errorf("gnark's key has no FFT tables: %v", err)
	}
	if d, e := pkGot.Domain, pkWant.Domain; d.Cardinality != e.Cardinality || d.Generator != e.Generator || d.CardinalityInv != e.CardinalityInv ||
		d.FrMultiplicativeGen != e.FrMultiplicativeGen || !slices.Equal(pkGot.G1.Z, pkWant.G1.Z) || !slices.Equal(pkGot.G2.B, pkWant.G2.B) {
		t.Error("the keys differ beyond the domain's tables")
	}
}
