package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
)

// cubic is a user's circuit: x³ + x + 5 = y, y public.
type cubic struct {
	X frontend.Variable
	Y frontend.Variable `gnark:",public"`
}

func (c *cubic) Define(api frontend.API) error {
	api.AssertIsEqual(api.Add(api.Mul(c.X, c.X, c.X), c.X, 5), c.Y)
	return nil
}

// twoSecrets is another circuit, for a witness that does not fit cubic.
type twoSecrets struct {
	A, B frontend.Variable
	Y    frontend.Variable `gnark:",public"`
}

func (c *twoSecrets) Define(api frontend.API) error {
	api.AssertIsEqual(api.Add(c.A, c.B), c.Y)
	return nil
}

func writeWitness(t *testing.T, path string, x, y int) {
	t.Helper()
	w, err := frontend.NewWitness(&cubic{X: x, Y: y}, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	b, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A user's circuit from files: keys from a serialized R1CS, one partition per
// witness file, checkpoints and proofs as for the example circuits; bad
// witness files are refused naming the file, before anything is recorded.
func TestProveWitnessFiles(t *testing.T) {
	dir := t.TempDir()
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &cubic{})
	if err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(dir, "keys")
	setupR1CSFile(t, ccs, filepath.Join(dir, "cubic.r1cs"), keys)
	ks := filepath.Join(keys, "cubic")
	w0, w1 := filepath.Join(dir, "w0.bin"), filepath.Join(dir, "w1.bin")
	writeWitness(t, w0, 3, 35)
	writeWitness(t, w1, 2, 15)
	st, out := filepath.Join(dir, "store"), filepath.Join(dir, "out")

	// Bad input first: nothing may be recorded.
	other := filepath.Join(dir, "other.bin")
	ow, err := frontend.NewWitness(&twoSecrets{A: 1, B: 2, Y: 3}, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	ob, _ := ow.MarshalBinary()
	os.WriteFile(other, ob, 0o644)
	junk := filepath.Join(dir, "junk.bin")
	os.WriteFile(junk, []byte("not a witness"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--witness", junk}, "junk.bin is not a gnark witness"},
		{[]string{"--witness", w0, "--witness", other}, "other.bin has 1 public and 2 secret values"},
		{[]string{"--witness", filepath.Join(dir, "missing.bin")}, "missing.bin"},
		{[]string{"--witness", w0, "--partitions", "3"}, "one partition per witness"},
	} {
		args := append([]string{"prove", "--backend", "cpu", "--keys", ks, "--store", st, "--out", out}, c.args...)
		if _, stderr, err := run(t, args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q\n%s", c.args, err, c.want, stderr)
		}
	}
	if _, err := os.Stat(st); err == nil {
		t.Errorf("a store was created for refused input")
	}

	stdout, stderr, err := run(t, "prove", "--backend", "cpu", "--keys", ks, "--witness", w0, "--witness", w1,
		"--store", st, "--out", out, "--json")
	if err != nil || !strings.Contains(stdout, `"proved": 2`) {
		t.Fatalf("prove --witness: %v\n%s\n%s", err, stdout, stderr)
	}
	proofs, _ := filepath.Glob(filepath.Join(out, "*.proof"))
	if len(proofs) != 2 {
		t.Fatalf("%d proofs in %s", len(proofs), out)
	}
	if _, stderr, err := run(t, append([]string{"verify", "--keys", ks}, proofs...)...); err != nil {
		t.Fatalf("verify: %v\n%s", err, stderr)
	}
	// The job's record names the witness files, so resume can read them
	// again.
	s, err := store.Open(st, &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	jobs, err := s.Jobs()
	if err != nil || len(jobs) != 1 || !strings.Contains(jobs[0].Params[runner.ParamWitnesses], "w1.bin") {
		t.Fatalf("store: %v %+v", err, jobs)
	}
}

// setupR1CSFile writes ccs to path as gnark serializes it and makes its keys
// with cuzk setup --r1cs into keys/<file's name>.
func setupR1CSFile(t *testing.T, ccs constraint.ConstraintSystem, path, keys string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ccs.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := run(t, "setup", "--r1cs", path, "--keys", keys, "--keygen", "cpu"); err != nil {
		t.Fatalf("setup --r1cs: %v\n%s", err, stderr)
	}
}
