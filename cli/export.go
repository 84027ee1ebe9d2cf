package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/witness"
	"github.com/urfave/cli/v2"

	groth16 "github.com/consensys/gnark/backend/groth16/bls12-381"
)

// exportCommand writes proofs in other tools' formats. snarkjs's is the one
// Groth16 verifiers outside Go read most: proof.json, public.json and
// verification_key.json, numbers as decimal strings.
func exportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write proofs, their public inputs and the verifying key for other verifiers (snarkjs)",
		ArgsUsage: "[PROOF...]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "snarkjs", Usage: "output format: snarkjs"},
			&cli.StringFlag{Name: "keys", Usage: "the key set's directory (the one holding manifest.json); required"},
			&cli.StringSliceFlag{Name: "proof", Usage: "a partition-NN.proof file; its partition-NN.public must be beside it (repeatable)"},
			&cli.StringFlag{Name: "out", Usage: "directory for the JSON files: verification_key.json, and per proof <name>.proof.json and <name>.public.json; required"},
		},
		Action: func(c *cli.Context) error {
			if f := c.String("format"); f != "snarkjs" {
				return fmt.Errorf("--format %q: only snarkjs", f)
			}
			if err := flagsBeforeFiles(c, "keys", "out"); err != nil {
				return err
			}
			files := append(c.StringSlice("proof"), c.Args().Slice()...)
			if len(files) == 0 {
				return errors.New("no proof given: pass --proof FILE")
			}
			vk, _, err := loadVerifyingKey(c.String("keys"))
			if err != nil {
				return err
			}
			if len(vk.CommitmentKeys) > 0 {
				return fmt.Errorf("%s: the circuit has commitments (api.Commit), which snarkjs's Groth16 does not verify", c.String("keys"))
			}
			// Everything is read and checked before anything is written.
			out := map[string][]byte{}
			if out["verification_key.json"], err = snarkjsJSON(snarkjsVK(vk)); err != nil {
				return err
			}
			for _, f := range files {
				proof, public, err := readProofFile(vk, f)
				if err != nil {
					return fmt.Errorf("%s: %w", f, err)
				}
				base := strings.TrimSuffix(filepath.Base(f), ".proof")
				if out[base+".proof.json"], err = snarkjsJSON(snarkjsProof(proof)); err != nil {
					return err
				}
				if out[base+".public.json"], err = snarkjsJSON(decimals(public)); err != nil {
					return err
				}
			}
			dir := c.String("out")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			for name, b := range out {
				if err := writeFileAtomic(filepath.Join(dir, name), b); err != nil {
					return err
				}
			}
			fmt.Fprintf(c.App.Writer, "exported %d proofs to %s (snarkjs)\n", len(files), dir)
			return nil
		},
	}
}

// readProofFile reads a proof and the public inputs beside it, and checks
// it with gnark's verifier: a proof that does not verify is not exported.
func readProofFile(vk *groth16.VerifyingKey, path string) (*groth16.Proof, fr.Vector, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	proof := &groth16.Proof{}
	if err := decodeSafely(func() error { _, err := proof.ReadFrom(bytes.NewReader(b)); return err }); err != nil {
		return nil, nil, fmt.Errorf("not a Groth16 BLS12-381 proof: %w", err)
	}
	if len(proof.Commitments) > 0 {
		return nil, nil, errors.New("the proof has commitments, which snarkjs's Groth16 does not verify")
	}
	public, err := readPublic(strings.TrimSuffix(path, ".proof") + ".public")
	if err != nil {
		return nil, nil, err
	}
	if err := groth16.Verify(proof, vk, public); err != nil {
		return nil, nil, fmt.Errorf("does not verify, not exported: %w", err)
	}
	return proof, public, nil
}

// snarkjsVerifyingKey is snarkjs's verification_key.json for Groth16.
type snarkjsVerifyingKey struct {
	Protocol string     `json:"protocol"`
	Curve    string     `json:"curve"`
	NPublic  int        `json:"nPublic"`
	Alpha1   []string   `json:"vk_alpha_1"`
	Beta2    [][]string `json:"vk_beta_2"`
	Gamma2   [][]string `json:"vk_gamma_2"`
	Delta2   [][]string `json:"vk_delta_2"`
	IC       [][]string `json:"IC"`
}

// snarkjsProofJSON is snarkjs's proof.json for Groth16.
type snarkjsProofJSON struct {
	A        []string   `json:"pi_a"`
	B        [][]string `json:"pi_b"`
	C        []string   `json:"pi_c"`
	Protocol string     `json:"protocol"`
	Curve    string     `json:"curve"`
}

func snarkjsVK(vk *groth16.VerifyingKey) snarkjsVerifyingKey {
	out := snarkjsVerifyingKey{Protocol: "groth16", Curve: "bls12381", NPublic: len(vk.G1.K) - 1,
		Alpha1: g1JSON(&vk.G1.Alpha), Beta2: g2JSON(&vk.G2.Beta), Gamma2: g2JSON(&vk.G2.Gamma), Delta2: g2JSON(&vk.G2.Delta)}
	for i := range vk.G1.K {
		out.IC = append(out.IC, g1JSON(&vk.G1.K[i]))
	}
	return out
}

// snarkjsProof maps gnark's proof to snarkjs's: both check
// e(A, B) = e(α, β)·e(Σ xᵢ·ICᵢ, γ)·e(C, δ), gnark's Krs being C.
func snarkjsProof(p *groth16.Proof) snarkjsProofJSON {
	return snarkjsProofJSON{A: g1JSON(&p.Ar), B: g2JSON(&p.Bs), C: g1JSON(&p.Krs), Protocol: "groth16", Curve: "bls12381"}
}

// g1JSON is a point in snarkjs's projective form [x, y, z], affine (z = 1),
// or [0, 1, 0] at infinity.
func g1JSON(p *curve.G1Affine) []string {
	if p.IsInfinity() {
		return []string{"0", "1", "0"}
	}
	return []string{fpDec(&p.X), fpDec(&p.Y), "1"}
}

func g2JSON(p *curve.G2Affine) [][]string {
	if p.IsInfinity() {
		return [][]string{{"0", "0"}, {"1", "0"}, {"0", "0"}}
	}
	return [][]string{{fpDec(&p.X.A0), fpDec(&p.X.A1)}, {fpDec(&p.Y.A0), fpDec(&p.Y.A1)}, {"1", "0"}}
}

func fpDec(e *fp.Element) string {
	var b big.Int
	return e.BigInt(&b).String()
}

func decimals(v fr.Vector) []string {
	out := make([]string, len(v))
	for i := range v {
		var b big.Int
		out[i] = v[i].BigInt(&b).String()
	}
	return out
}

func snarkjsJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return nil, fmt.Errorf("encode JSON: %w", err)
	}
	return append(b, '\n'), nil
}

// writeFileAtomic writes through a temporary file renamed into place, so
// that a reader never sees half a file.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// readPublic reads the public inputs a job wrote beside a proof (gnark's
// binary witness encoding).
func readPublic(path string) (fr.Vector, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("public inputs: %w", err)
	}
	pub, err := witness.New(ecc.BLS12_381.ScalarField())
	if err != nil {
		return nil, err
	}
	if err := decodeSafely(func() error { return pub.UnmarshalBinary(b) }); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %w", path, err)
	}
	v, ok := pub.Vector().(fr.Vector)
	if !ok {
		return nil, fmt.Errorf("%s: not BLS12-381 public inputs", path)
	}
	return v, nil
}
