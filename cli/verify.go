package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/witness"
	"github.com/urfave/cli/v2"

	groth16 "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/prover"
)

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check proofs with gnark's verifier",
		ArgsUsage: "[PROOF...]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "keys", Usage: "the key set's directory (the one holding manifest.json); required"},
			&cli.StringSliceFlag{Name: "proof", Usage: "a partition-NN.proof file; its partition-NN.public must be beside it (repeatable)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		},
		Action: func(c *cli.Context) error {
			if err := flagsBeforeFiles(c, "keys"); err != nil {
				return err
			}
			files := append(c.StringSlice("proof"), c.Args().Slice()...)
			if len(files) == 0 {
				return fmt.Errorf("no proof given: pass --proof FILE")
			}
			vk, m, err := loadVerifyingKey(c.String("keys"))
			if err != nil {
				return err
			}
			type result struct {
				Proof    string `json:"proof"`
				Verified bool   `json:"verified"`
				Error    string `json:"error,omitempty"`
			}
			var results []result
			failed := 0
			for _, f := range files {
				err := verifyFile(vk, f)
				r := result{Proof: f, Verified: err == nil}
				if err != nil {
					r.Error = err.Error()
					failed++
				}
				results = append(results, r)
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				enc.Encode(map[string]any{"circuit": m.Circuit, "key_hash": m.Hash, "results": results})
			} else {
				for _, r := range results {
					if r.Verified {
						fmt.Fprintf(c.App.Writer, "%s: ok\n", r.Proof)
					} else {
						fmt.Fprintf(c.App.Writer, "%s: FAILED: %s\n", r.Proof, r.Error)
					}
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d proofs do not verify", failed, len(files))
			}
			return nil
		},
	}
}

func loadVerifyingKey(dir string) (*groth16.VerifyingKey, *prover.Manifest, error) {
	m, err := prover.ReadManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(dir, "verifying.key")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	vk := &groth16.VerifyingKey{}
	if err := decodeSafely(func() error { _, err := vk.ReadFrom(bytes.NewReader(b)); return err }); err != nil {
		return nil, nil, fmt.Errorf("%s is corrupt: %w", path, err)
	}
	return vk, m, nil
}

func verifyFile(vk *groth16.VerifyingKey, proofPath string) error {
	b, err := os.ReadFile(proofPath)
	if err != nil {
		return err
	}
	proof := &groth16.Proof{}
	if err := decodeSafely(func() error { _, err := proof.ReadFrom(bytes.NewReader(b)); return err }); err != nil {
		return fmt.Errorf("not a Groth16 BLS12-381 proof: %w", err)
	}
	pubPath := strings.TrimSuffix(proofPath, ".proof") + ".public"
	pb, err := os.ReadFile(pubPath)
	if err != nil {
		return fmt.Errorf("public inputs: %w", err)
	}
	pub, err := witness.New(ecc.BLS12_381.ScalarField())
	if err != nil {
		return err
	}
	if err := decodeSafely(func() error { return pub.UnmarshalBinary(pb) }); err != nil {
		return fmt.Errorf("%s is corrupt: %w", pubPath, err)
	}
	return groth16.Verify(proof, vk, pub.Vector().(fr.Vector))
}

// decodeSafely turns a decoder's panic on malformed input into an error.
func decodeSafely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed input: %v", r)
		}
	}()
	return f()
}
