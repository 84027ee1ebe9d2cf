package prover

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/keygen"
)

// Written is what SetupTo wrote: the manifest of the key directory and the
// proving key's shape.
type Written struct {
	Manifest
	Dir    string
	Wires  int    // the circuit's wires, len(ProvingKey.InfinityA)
	Domain uint64 // the domain's cardinality
}

// SetupTo compiles the circuit for target constraints, makes its keys with
// keygen (mul; nil is keygen.CPUMultiplier, toxic waste from crypto/rand)
// and writes them to dir as Save writes Keys — the same files, manifest
// and hashes — but in the order that keeps host memory down: the R1CS
// first, while it is all there is; then the proving key section by section
// as keygen.SetupDump makes it, with the R1CS dropped once its A, B, C are
// evaluated; then the verifying key and the manifest. It holds no proving
// key: Load reads the keys back for proving.
func SetupTo(c circuits.Circuit, target int, mul keygen.Multiplier, dir string, opt keygen.DumpOptions) (*Written, error) {
	l, sys, err := compileR1CS(c, target)
	if err != nil {
		return nil, err
	}
	constraints := sys.GetNbConstraints()
	// The compiler's garbage, several times the R1CS: give it back to the
	// OS, or the pages it held stay resident under everything that follows.
	debug.FreeOSMemory()
	slog.Debug("compiled", append([]any{"circuit", c.Name(), "constraints", constraints}, keygen.ReadHostMemory().Attrs()...)...)

	var vk *groth16bls.VerifyingKey
	var shape keygen.KeyShape
	m, err := saveFiles(dir, c.Name(), l, constraints, []keyFile{
		{r1csFile, func(w io.Writer) error { _, err := sys.WriteTo(w); return err }},
		{pkFile, func(w io.Writer) error {
			r := sys
			sys = nil // keygen drops the last reference after evaluating it
			var e error
			if vk, shape, e = keygen.SetupDump(r, mul, nil, w, opt); e != nil {
				return fmt.Errorf("setup of %s: %w", c.Name(), e)
			}
			return nil
		}},
		{vkFile, func(w io.Writer) error { _, err := vk.WriteRawTo(w); return err }},
	})
	if err != nil {
		return nil, err
	}
	return &Written{Manifest: *m, Dir: dir, Wires: shape.Wires, Domain: shape.Domain}, nil
}

// InMemoryOptions tune SetupInMemory.
type InMemoryOptions struct {
	// Dump tunes keygen.SetupDump; NoDomainTables leaves the keys' domain
	// without its FFT tables (for keys whose FFTs run on a GPU).
	Dump keygen.DumpOptions
	// ReleaseSystem releases the system's instructions (ReleaseSystem) as
	// soon as keygen has evaluated them and cuzk's solver has laid them
	// out, while the points are multiplied, rather than after the setup:
	// the setup's peak holds them and the whole proving key at once
	// otherwise. Keys cuzk's solver does not handle keep them.
	ReleaseSystem bool
}

// SetupInMemory compiles the circuit and makes its keys with keygen as
// SetupTo does, but streams the proving key into the returned Keys instead
// of a file: keygen.SetupDump writes it through a pipe to
// ProvingKey.ReadDump, which allocates each section at its size and reads
// the points straight into it. No disk holds the proving key and no second
// copy of it is made; the R1CS is kept for proving (its instructions until
// opt.ReleaseSystem releases them). Dir is empty: these
// keys exist only in this process (fresh toxic waste from crypto/rand each
// time), for benchmarks on hosts whose disk cannot hold the keys. Hash is
// "memory-" and the SHA-256 of the verifying key, so that what caches key
// sets by hash (a device's resident keys) tells two such sets apart.
func SetupInMemory(c circuits.Circuit, target int, mul keygen.Multiplier, opt InMemoryOptions) (*Keys, error) {
	l, sys, err := compileR1CS(c, target)
	if err != nil {
		return nil, err
	}
	k := &Keys{Circuit: c.Name(), Layout: l, CS: sys, PK: &groth16bls.ProvingKey{}}
	// cuzk's solver lays the system out on one core (about 5 s at 2^24 on
	// the development machine, a minute or more at 2^27): beside keygen,
	// since both only read the system. These keys have no solver options,
	// so the program is the one their first solve would make; with gnark's
	// solver asked for afterwards it goes unused.
	go k.solveOnce.Do(k.compileSolver)
	dump := opt.Dump
	var evaluated bool
	released := make(chan struct{})
	if opt.ReleaseSystem {
		caller := opt.Dump.Evaluated
		dump.Evaluated = func() {
			if caller != nil {
				caller()
			}
			evaluated = true
			go func() {
				defer close(released)
				if k.solver() != nil {
					k.ReleaseSystem()
				}
			}()
		}
	}
	pr, pw := io.Pipe()
	read := make(chan error, 1)
	go func() {
		err := k.PK.ReadDump(pr)
		pr.CloseWithError(err) // a failed read stops the writer
		read <- err
	}()
	var werr error
	k.VK, _, werr = keygen.SetupDump(sys, mul, nil, pw, dump)
	pw.CloseWithError(werr)
	if evaluated {
		<-released
	}
	if rerr := <-read; werr == nil && rerr != nil {
		werr = fmt.Errorf("read the proving key back: %w", rerr)
	}
	if werr != nil {
		return nil, fmt.Errorf("setup of %s: %w", c.Name(), werr)
	}
	h := sha256.New()
	if _, err := k.VK.WriteTo(h); err != nil {
		return nil, fmt.Errorf("setup of %s: hash the verifying key: %w", c.Name(), err)
	}
	k.Hash = "memory-" + hex.EncodeToString(h.Sum(nil))
	return k, nil
}
