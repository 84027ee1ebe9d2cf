package cli

import (
	"context"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark/frontend"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/engine"
)

// square is x² = y, y public: a circuit without commitments.
type square struct {
	X frontend.Variable
	Y frontend.Variable `gnark:",public"`
}

func (c *square) Define(api frontend.API) error {
	api.AssertIsEqual(api.Mul(c.X, c.X), c.Y)
	return nil
}

// provedDir makes keys for c in a key directory and proves assignment a
// into partition-00.proof and .public beside them, as a job writes them.
func provedDir(t *testing.T, c, a frontend.Circuit) (keys, proofPath string) {
	t.Helper()
	ccs, err := engine.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	k, err := engine.Setup(context.Background(), ccs)
	if err != nil {
		t.Fatal(err)
	}
	keys = t.TempDir()
	if err := k.Save(keys); err != nil {
		t.Fatal(err)
	}
	ws, err := engine.Witnesses(a)
	if err != nil {
		t.Fatal(err)
	}
	p, err := engine.Prove(context.Background(), k, ws[0])
	if err != nil {
		t.Fatal(err)
	}
	proofs := t.TempDir()
	proofPath = filepath.Join(proofs, "partition-00.proof")
	f, err := os.Create(proofPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	pub, _ := ws[0].Public()
	b, _ := pub.MarshalBinary()
	if err := os.WriteFile(filepath.Join(proofs, "partition-00.public"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return keys, proofPath
}

// The exported JSON satisfies snarkjs's Groth16 check, read back from the
// decimal strings alone: e(−A, B)·e(α, β)·e(Σ xᵢ·ICᵢ, γ)·e(C, δ) = 1.
func TestExportSnarkjs(t *testing.T) {
	keys, proofPath := provedDir(t, &square{}, &square{X: 7, Y: 49})
	out := filepath.Join(t.TempDir(), "json")
	if _, stderr, err := run(t, "export", "--format", "snarkjs", "--keys", keys, "--proof", proofPath, "--out", out); err != nil {
		t.Fatalf("export: %v\n%s", err, stderr)
	}
	var vk struct {
		NPublic int        `json:"nPublic"`
		Curve   string     `json:"curve"`
		Alpha   []string   `json:"vk_alpha_1"`
		Beta    [][]string `json:"vk_beta_2"`
		Gamma   [][]string `json:"vk_gamma_2"`
		Delta   [][]string `json:"vk_delta_2"`
		IC      [][]string `json:"IC"`
	}
	var proof struct {
		A []string   `json:"pi_a"`
		B [][]string `json:"pi_b"`
		C []string   `json:"pi_c"`
	}
	var public []string
	for name, v := range map[string]any{"verification_key.json": &vk, "partition-00.proof.json": &proof, "partition-00.public.json": &public} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if vk.Curve != "bls12381" || vk.NPublic != 1 || len(vk.IC) != 2 || len(public) != 1 || public[0] != "49" {
		t.Fatalf("vk %+v, public %v", vk, public)
	}
	check := func(public []string) bool {
		ic := g1From(t, vk.IC[0])
		for i, x := range public {
			var s big.Int
			s.SetString(x, 10)
			var p curve.G1Affine
			p.ScalarMultiplication(ptr(g1From(t, vk.IC[i+1])), &s)
			ic.Add(&ic, &p)
		}
		var negA curve.G1Affine
		negA.Neg(ptr(g1From(t, proof.A)))
		ok, err := curve.PairingCheck(
			[]curve.G1Affine{negA, g1From(t, vk.Alpha), ic, g1From(t, proof.C)},
			[]curve.G2Affine{g2From(t, proof.B), g2From(t, vk.Beta), g2From(t, vk.Gamma), g2From(t, vk.Delta)})
		return err == nil && ok
	}
	if !check(public) {
		t.Fatal("the exported proof fails snarkjs's check")
	}
	if check([]string{"50"}) {
		t.Fatal("the exported proof passes with other public inputs")
	}
}

func ptr[T any](v T) *T { return &v }

func g1From(t *testing.T, s []string) curve.G1Affine {
	t.Helper()
	var p curve.G1Affine
	if len(s) != 3 || s[2] != "1" {
		t.Fatalf("G1 point %v", s)
	}
	p.X.SetString(s[0])
	p.Y.SetString(s[1])
	if !p.IsOnCurve() {
		t.Fatalf("G1 point %v is not on the curve", s)
	}
	return p
}

func g2From(t *testing.T, s [][]string) curve.G2Affine {
	t.Helper()
	var p curve.G2Affine
	if len(s) != 3 || s[2][0] != "1" || s[2][1] != "0" {
		t.Fatalf("G2 point %v", s)
	}
	p.X.A0.SetString(s[0][0])
	p.X.A1.SetString(s[0][1])
	p.Y.A0.SetString(s[1][0])
	p.Y.A1.SetString(s[1][1])
	if !p.IsOnCurve() {
		t.Fatalf("G2 point %v is not on the curve", s)
	}
	return p
}

// A proof that does not verify, or one with commitments, is refused and
// nothing is written.
func TestExportRefuses(t *testing.T) {
	keys, proofPath := provedDir(t, &square{}, &square{X: 7, Y: 49})
	// Another partition's public inputs: the proof does not verify.
	pub := strings.TrimSuffix(proofPath, ".proof") + ".public"
	ws, _ := engine.Witnesses(&square{X: 8, Y: 64})
	p, _ := ws[0].Public()
	b, _ := p.MarshalBinary()
	os.WriteFile(pub, b, 0o644)
	out := filepath.Join(t.TempDir(), "json")
	if _, _, err := run(t, "export", "--keys", keys, "--proof", proofPath, "--out", out); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Errorf("got %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused export wrote %s", out)
	}

	ckeys, cproof := provedDir(t, &circuits.WithCommitment{}, &circuits.WithCommitment{X: 3, Y: 9})
	if _, _, err := run(t, "export", "--keys", ckeys, "--proof", cproof, "--out", out); err == nil || !strings.Contains(err.Error(), "commitments") {
		t.Errorf("commitments: got %v", err)
	}
	if _, _, err := run(t, "export", "--format", "zokrates", "--keys", keys, "--proof", proofPath, "--out", out); err == nil || !strings.Contains(err.Error(), "zokrates") {
		t.Errorf("unknown format: got %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused export wrote %s", out)
	}
}

// setup --r1cs makes keys for a gnark user's serialized R1CS, which package
// engine loads and proves with; a file that is not one is refused by name
// before anything is written.
func TestSetupR1CS(t *testing.T) {
	ccs, err := engine.Compile(&circuits.RangeCheck{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "rangecheck.r1cs")
	keys := filepath.Join(dir, "keys")
	setupR1CSFile(t, ccs, path, keys)
	k, err := engine.LoadKeys(filepath.Join(keys, "rangecheck"))
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := engine.Witnesses(circuits.NewRangeCheck(12345))
	p, err := engine.Prove(context.Background(), k, ws[0])
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := ws[0].Public()
	if err := engine.Verify(k, p, pub); err != nil {
		t.Fatal(err)
	}

	bad := filepath.Join(dir, "notes.r1cs")
	os.WriteFile(bad, []byte("these are not constraints"), 0o644)
	if _, _, err := run(t, "setup", "--r1cs", bad, "--keys", keys, "--keygen", "cpu"); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("got %v, want an error naming %s", err, bad)
	}
	if _, err := os.Stat(filepath.Join(keys, "notes")); !os.IsNotExist(err) {
		t.Errorf("a refused setup made its key directory")
	}
}
