package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
)

// witnessFlag takes the witness files of a job of a user's circuit.
func witnessFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "witness", Usage: "prove a user's circuit: one witness `FILE` per partition (gnark's witness.MarshalBinary of the full witness; - reads one from stdin), against the key set directory given as --keys (cuzk setup --r1cs makes one)"}
}

// proveWitnesses proves a job of a user's circuit: one partition per witness
// file, with the keys in the --keys directory. Every file is checked before
// the job starts; a bad one is an error naming it, and nothing is proved.
func proveWitnesses(c *cli.Context, paths []string) error {
	dir := c.String("keys")
	m, err := prover.ReadManifest(dir)
	if err != nil {
		return fmt.Errorf("--keys %s: with --witness, --keys names one key set's directory (cuzk setup --r1cs makes one): %w", dir, err)
	}
	if c.IsSet("partitions") && c.Int("partitions") != len(paths) {
		return fmt.Errorf("--partitions %d with %d witness files: a job has one partition per witness", c.Int("partitions"), len(paths))
	}
	if c.IsSet("jobs") && c.Int("jobs") != 1 {
		return errors.New("--jobs: a job of witness files is one job")
	}
	prio, err := actors.ParsePriority(c.String("priority"))
	if err != nil {
		return fmt.Errorf("--priority: %w", err)
	}
	cfg, indices, vram, err := runSettings(c)
	if err != nil {
		return err
	}
	k, err := prover.Load(dir, m.Circuit, nil)
	if err != nil {
		return err
	}
	stdin, err := readStdinWitness(c, paths)
	if err != nil {
		return err
	}
	if stdin != "" {
		defer os.Remove(stdin)
		paths = replace(paths, "-", stdin)
	}
	wits, err := runner.CheckWitnessFiles(k, paths)
	if err != nil {
		return err
	}
	h := sha256.New()
	for _, w := range wits {
		io.WriteString(h, w.SHA256)
	}
	id := "job-" + hex.EncodeToString(h.Sum(nil))[:12]
	out := c.String("out")
	if out == "" {
		out = filepath.Join("build", "proofs", id)
	}
	if stdin != "" {
		// The witness read from stdin must outlive this process for a
		// resume: it is kept beside the proofs.
		kept := filepath.Join(out, "witness-stdin.bin")
		if err := copyFile(stdin, kept); err != nil {
			return err
		}
		for i := range wits {
			if wits[i].Path == stdin {
				wits[i].Path = kept
			}
		}
	}
	backend, devices, closeDevices, err := openBackend(c, indices, vram, cfg.Pool)
	if err != nil {
		return err
	}
	defer closeDevices()
	if c.Bool("plan") {
		return printPlan(c.App.Writer, backend, devices, k)
	}
	sub := runner.Submission{JobRequest: runner.JobRequest{ID: id, Keys: k, Partitions: len(wits), Priority: prio, Witnesses: wits}, Out: out}
	return runSubmissions(c, cfg, backend, devices, indices, []runner.Submission{sub})
}

// readStdinWitness reads the witness given as "-" into a temporary file and
// returns its name ("" when none is).
func readStdinWitness(c *cli.Context, paths []string) (string, error) {
	n := 0
	for _, p := range paths {
		if p == "-" {
			n++
		}
	}
	switch {
	case n == 0:
		return "", nil
	case n > 1:
		return "", errors.New("--witness -: stdin holds one witness")
	}
	f, err := os.CreateTemp("", "cuzk-witness-*")
	if err != nil {
		return "", err
	}
	defer f.Close()
	in := c.App.Reader
	if in == nil {
		in = os.Stdin
	}
	if _, err := io.Copy(f, in); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("--witness -: %w", err)
	}
	return f.Name(), nil
}

func replace(ss []string, old, new string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		if s == old {
			s = new
		}
		out[i] = s
	}
	return out
}

// copyFile copies from to to, durably: a resume reads it after a crash.
func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return runner.WriteFileSync(to, b)
}
