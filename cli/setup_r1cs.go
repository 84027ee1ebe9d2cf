package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/engine"
)

// setupR1CS makes keys for a constraint system gnark serialized (a gnark
// user's circuit, compiled with r1cs.NewBuilder over BLS12-381 and written
// with WriteTo), into <keys>/<file name without extension>; package engine
// reads them back (engine.LoadKeys). The file is read and checked before
// anything is written.
func setupR1CS(c *cli.Context, path string) error {
	ccs, err := engine.ReadR1CS(path)
	if err != nil {
		return fmt.Errorf("--r1cs: %w", err)
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	dir := filepath.Join(c.String("keys"), name)
	log := c.App.ErrWriter
	fmt.Fprintf(log, "setup: %s (%d constraints) → %s\n", path, ccs.GetNbConstraints(), dir)
	if err := checkWritableDir(dir); err != nil {
		return err
	}
	start := time.Now()
	opts := []engine.Option{engine.WithLibrary(c.String("gpu-lib"))}
	kg := c.String("keygen")
	switch kg {
	case "gpu", "cpu", "gnark":
	case "", "auto":
		kg = "gpu"
	default:
		return fmt.Errorf("--keygen %q: want gpu, cpu, gnark or auto", kg)
	}
	k, err := engine.Setup(c.Context, ccs, append(opts, engine.WithKeygen(kg))...)
	if err != nil && c.String("keygen") == "auto" && errors.Is(err, cuda.ErrUnavailable) {
		kg = "cpu"
		k, err = engine.Setup(context.WithoutCancel(c.Context), ccs, append(opts, engine.WithKeygen(kg))...)
	}
	if err != nil {
		return err
	}
	k.Prover().Circuit = name
	if err := k.Save(dir); err != nil {
		return err
	}
	fmt.Fprintf(log, "setup: keys made by keygen %s in %s; key hash %s\n", kg, time.Since(start).Round(time.Millisecond), k.Hash()[:16])
	if c.Bool("points-file") {
		return writePointsFile(dir, log)
	}
	return nil
}
