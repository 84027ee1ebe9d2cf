package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/keygen"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
)

const defaultConstraints = "16K"

func circuitFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "circuit", Value: "porep", Usage: "example circuit: mimc, porep, sha, porep-sha (PoRep C2's shape in SHA-256 bits) or sha2 (gnark's std SHA-256, with a commitment)"},
		&cli.StringFlag{Name: "constraints", Value: defaultConstraints, Usage: "target constraints per partition (e.g. 16K, 1M, 2^20)"},
		&cli.StringFlag{Name: "keys", Value: "build/keys", Usage: "directory that holds key sets, one per circuit and size"},
		keygenFlag(),
	}
}

func solverFlag() cli.Flag {
	return &cli.StringFlag{Name: "solver", Value: "auto", Usage: "witness solver: auto (cuzk's where it handles the circuit, else gnark's) or gnark"}
}

func keygenFlag() cli.Flag {
	return &cli.StringFlag{Name: "keygen", Value: "auto",
		Usage: "how setup makes keys: gpu (keygen's scalar multiplications on GPU 0), cpu (keygen on the CPU), gnark (gnark's groth16.Setup), or auto (gpu where the kernel library loads, else gnark)"}
}

// keySpec is the circuit, layout and key directory that the flags name.
type keySpec struct {
	circuit circuits.Circuit
	target  int
	layout  circuits.Layout
	dir     string
	keygen  string // gpu, cpu, gnark or auto (the default)
	gpuLib  string // the kernel library for keygen on the GPU
	solver  prover.Solver
	// loadOpt says how much of the key set in a directory is loaded
	// (keyLoadOptions); nil: all of it.
	loadOpt func(dir string) (prover.LoadOptions, error)
}

// load loads the key set in ks.dir as ks.loadOpt says.
func (ks *keySpec) load() (*prover.Keys, error) {
	return keyLoader(ks.loadOpt)(ks.dir, ks.circuit.Name(), ks.layout)
}

// keyLoader is a runner.KeyLoader that loads as opt says (nil: all).
func keyLoader(opt func(dir string) (prover.LoadOptions, error)) runner.KeyLoader {
	return func(dir, circuit string, layout circuits.Layout) (*prover.Keys, error) {
		var o prover.LoadOptions
		if opt != nil {
			var err error
			if o, err = opt(dir); err != nil {
				return nil, err
			}
		}
		return prover.LoadWith(dir, circuit, layout, o)
	}
}

func keySpecFromFlags(c *cli.Context) (*keySpec, error) {
	circ, err := circuits.Lookup(c.String("circuit"))
	if err != nil {
		return nil, err
	}
	target, err := parseCount(c.String("constraints"))
	if err != nil {
		return nil, fmt.Errorf("--constraints: %w", err)
	}
	l, err := circ.Layout(target)
	if err != nil {
		return nil, fmt.Errorf("--constraints: %w", err)
	}
	return keySpecFor(c, circ, target, l)
}

// keySpecFor is the key spec of circ at target constraints (layout l), with
// the other key flags (--keys, --keygen, --gpu-lib, --solver) read from c.
func keySpecFor(c *cli.Context, circ circuits.Circuit, target int, l circuits.Layout) (*keySpec, error) {
	solver, err := prover.ParseSolver(c.String("solver"))
	if err != nil {
		return nil, fmt.Errorf("--solver: %w", err)
	}
	return &keySpec{circuit: circ, target: target, layout: l, dir: prover.KeyDir(c.String("keys"), circ.Name(), target),
		keygen: c.String("keygen"), gpuLib: c.String("gpu-lib"), solver: solver}, nil
}

// loadKeys loads the keys the flags name; with setupIfMissing it makes them
// when there are none.
func loadKeys(ks *keySpec, setupIfMissing bool, log io.Writer) (*prover.Keys, error) {
	k, err := ks.load()
	if err == nil {
		k.Solver = ks.solver
		return k, nil
	}
	if !errors.Is(err, prover.ErrNoKeys) {
		return nil, err
	}
	if !setupIfMissing {
		return nil, fmt.Errorf("no keys for %s at %d constraints in %s: make them with\n  cuzk setup --circuit %s --constraints %d --keys <dir>\nor pass --setup-if-missing",
			ks.circuit.Name(), ks.target, ks.dir, ks.circuit.Name(), ks.target)
	}
	if k, err = runSetup(ks, log); err != nil {
		return nil, err
	}
	if k == nil || ks.loadOpt != nil {
		// Read back, as much of them as the options say: gnark's setup
		// holds all the points.
		if k, err = ks.load(); err != nil {
			return nil, err
		}
	}
	k.Solver = ks.solver
	return k, nil
}

// keysInMemory is the --keys value of bench prove that makes the keys in the
// process and writes none (prover.SetupInMemory): for hosts whose disk
// cannot hold them, as the one-GPU machine's 64 GiB cannot at 2^27
// (docs/keygen.md). Each run has fresh toxic waste: fine for a benchmark.
const keysInMemory = "memory"

// setupInMemory makes the keys ks names in this process, none written; opt
// says what the keys may give up during the setup (keygen only).
func setupInMemory(ks *keySpec, opt prover.InMemoryOptions, log io.Writer) (*prover.Keys, error) {
	fmt.Fprintf(log, "setup: %s, layout %s (target %d constraints), in memory: no key is written\n", ks.circuit.Name(), ks.layout, ks.target)
	start := time.Now()
	mul, how, done, err := startSetup(ks, log)
	if err != nil {
		return nil, err
	}
	defer done()
	var k *prover.Keys
	if mul != nil {
		k, err = prover.SetupInMemory(ks.circuit, ks.target, mul, opt)
	} else {
		k, err = prover.SetupWith(ks.circuit, ks.target, nil)
	}
	if err != nil {
		return nil, err
	}
	k.Solver = ks.solver
	fmt.Fprintf(log, "setup: keys made by %s in memory: %d constraints, %d wires, domain 2^%d, took %s\n",
		how, k.Constraints(), len(k.PK.InfinityA), log2(k.PK.Domain.Cardinality), time.Since(start).Round(time.Millisecond))
	return k, nil
}

// runSetup makes the keys ks names and writes them to ks.dir. keygen
// (--keygen gpu or cpu) writes the proving key as it makes it and holds no
// keys after (nil Keys: Load reads them); gnark's setup holds them all, and
// they come back.
func runSetup(ks *keySpec, log io.Writer) (*prover.Keys, error) {
	fmt.Fprintf(log, "setup: %s, layout %s (target %d constraints) → %s\n", ks.circuit.Name(), ks.layout, ks.target, ks.dir)
	// A key directory that cannot be written is found out before the
	// minutes of key generation, not after.
	if err := checkWritableDir(ks.dir); err != nil {
		return nil, err
	}
	start := time.Now()
	mul, how, done, err := startSetup(ks, log)
	if err != nil {
		return nil, err
	}
	defer done()
	if mul != nil {
		wr, err := prover.SetupTo(ks.circuit, ks.target, mul, ks.dir, keygen.DumpOptions{})
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "setup: keys made by %s\n", how)
		fmt.Fprintf(log, "setup: %d constraints, %d wires, domain 2^%d, took %s; key hash %s\n",
			wr.Constraints, wr.Wires, log2(wr.Domain), time.Since(start).Round(time.Millisecond), wr.Hash[:16])
		slog.Debug("keys written", "dir", ks.dir)
		return nil, nil
	}
	k, err := prover.SetupWith(ks.circuit, ks.target, nil)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "setup: keys made by %s\n", how)
	if err := k.Save(ks.dir); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "setup: %d constraints, %d wires, domain 2^%d, took %s; key hash %s\n",
		k.Constraints(), len(k.PK.InfinityA), log2(k.PK.Domain.Cardinality), time.Since(start).Round(time.Millisecond), k.Hash[:16])
	slog.Debug("keys written", "dir", ks.dir)
	return k, nil
}

// startSetup readies a setup of ks: the multiplier keygen runs on (nil for
// gnark's setup) and how it is named, and the heap's soft limit
// (limitSetupMemory). done releases both.
func startSetup(ks *keySpec, log io.Writer) (mul keygen.Multiplier, how string, done func(), err error) {
	mul, how, closeMul, err := keyMultiplier(ks, log)
	if err != nil {
		return nil, "", nil, err
	}
	restore := limitSetupMemory()
	return mul, how, func() { restore(); closeMul() }, nil
}

// limitSetupMemory gives the Go heap a soft limit of 3/4 of the host's
// memory for a setup, unless GOMEMLIMIT sets one: the collector then works
// harder as the heap nears it instead of letting garbage double it (a
// compile at 2^20 peaks at 613 MiB with the default pacing, 397 MiB with
// GOGC=25), which at 2^27 is what decides whether a 128 GiB host suffices.
// It returns what restores the limit before.
func limitSetupMemory() func() {
	ram := keygen.HostRAM()
	if os.Getenv("GOMEMLIMIT") != "" || ram == 0 {
		return func() {}
	}
	prev := debug.SetMemoryLimit(int64(ram / 4 * 3))
	return func() { debug.SetMemoryLimit(prev) }
}

// checkWritableDir makes dir (and its parents) and checks that a file can be
// created in it.
func checkWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--keys: %w", err)
	}
	f, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		return fmt.Errorf("--keys: %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func log2(n uint64) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}

func setupCommand() *cli.Command {
	return &cli.Command{
		Name:  "setup",
		Usage: "compile a circuit and write its R1CS, proving key and verifying key",
		Flags: append(append(circuitFlags(),
			&cli.StringFlag{Name: "gpu-lib", Usage: "path of libcuzkgpu.so for --keygen gpu (default: $CUZK_GPU_LIB, next to cuzk, then build/)"},
			&cli.StringFlag{Name: "r1cs", Usage: "a constraint system gnark serialized (BLS12-381 R1CS, WriteTo) instead of an example circuit: keys go to <keys>/<its name>"},
			&cli.BoolFlag{Name: "points-file", Usage: "also write proving.points, the points as the GPU backend's disk tier streams them (--key-tier disk writes it on first use otherwise)"},
			&cli.BoolFlag{Name: "wait", Usage: "with --daemon: follow the daemon's setup task until it ends"}),
			daemonAddrFlags("make the key set on the daemon at this address (StartSetup: host:port, unix:PATH, http:// or https://), under its own --keys, rather than in this process")...),
		Action: func(c *cli.Context) error {
			if c.String("daemon") != "" {
				return setupOnDaemon(c)
			}
			if c.Bool("wait") {
				return errors.New("--wait goes with --daemon")
			}
			if path := c.String("r1cs"); path != "" {
				return setupR1CS(c, path)
			}
			ks, err := keySpecFromFlags(c)
			if err != nil {
				return err
			}
			if _, err = runSetup(ks, c.App.ErrWriter); err != nil || !c.Bool("points-file") {
				return err
			}
			return writePointsFile(ks.dir, c.App.ErrWriter)
		},
	}
}

// writePointsFile writes the points file of the key directory dir.
func writePointsFile(dir string, log io.Writer) error {
	start := time.Now()
	p, err := prover.EnsurePoints(dir)
	if err != nil {
		return err
	}
	defer p.Close()
	var bytes int64
	for _, s := range p.Sections {
		bytes += s.Bytes()
	}
	fmt.Fprintf(log, "setup: %s: %d MiB of points, took %s\n", p.Path, bytes>>20, time.Since(start).Round(time.Millisecond))
	return nil
}

// keyMultiplier picks what makes the keys' scalar multiplications: nil is
// gnark's own setup. It says which in words, and returns a function that
// releases the GPU's stream.
func keyMultiplier(ks *keySpec, log io.Writer) (keygen.Multiplier, string, func(), error) {
	none := func() {}
	switch ks.keygen {
	case "gnark":
		return nil, "gnark's groth16.Setup", none, nil
	case "cpu":
		return keygen.CPUMultiplier{}, "keygen on the CPU", none, nil
	case "", "auto", "gpu":
	default:
		return nil, "", none, fmt.Errorf("--keygen %q: want gpu, cpu, gnark or auto", ks.keygen)
	}
	m, release, err := gpuprove.OpenMultiplier(ks.gpuLib)
	if err != nil {
		if ks.keygen == "gpu" {
			return nil, "", none, fmt.Errorf("--keygen gpu: %w", err)
		}
		slog.Debug("keygen on the GPU unavailable", "err", err)
		return nil, "gnark's groth16.Setup (no GPU for keygen)", none, nil
	}
	return m, fmt.Sprintf("keygen on GPU %d", m.Device.Index()), release, nil
}
