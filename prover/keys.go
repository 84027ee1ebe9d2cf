package prover

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	csolver "github.com/consensys/gnark/constraint/solver"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/keygen"
	"github.com/cuzk/cuzk/solve"
)

// Keys are one circuit's constraint system and Groth16 keys.
type Keys struct {
	Circuit string
	Layout  circuits.Layout
	CS      *cs.R1CS
	PK      *groth16bls.ProvingKey
	VK      *groth16bls.VerifyingKey
	// Hash is the content hash of the three files: it changes whenever any key
	// changes, so a job started with one set of keys is never finished with another.
	Hash string
	Dir  string
	// Points is the key set's points file when it was loaded without its
	// points (LoadOptions.PointsOnDisk): PK's A, B, Z and K (and G2 B, unless
	// kept) are then empty, and Counts gives their sizes. It stays open while
	// the keys are in use.
	Points *Points
	// Solver picks the witness solver; the zero value is cuzk's where it
	// handles the circuit (package solve), gnark's otherwise.
	Solver Solver
	// SolverOptions are gnark's solver options every solve with these keys
	// gets, whichever solver runs: hints the circuit calls that are not in
	// gnark's registry (solver.WithHints).
	SolverOptions []csolver.Option

	solveOnce sync.Once
	program   *solve.Program // nil when solve does not handle CS

	planOnce sync.Once
	plan     *commitPlan
	planErr  error

	statefulOnce sync.Once
	isStateful   bool
	sharedOnce   sync.Once
	shared       bool
	released     atomic.Bool // ReleaseSystem
	pinned       atomic.Bool // PinPoints
	zDevice      atomic.Bool // PinPoints moved Z in the device's order
	gnarkMu      sync.Mutex  // held by gnark's solves of a stateful system
}

// Solver names a witness solver.
type Solver int

const (
	// SolverAuto is cuzk's solver (package solve) where it handles the
	// circuit, else gnark's.
	SolverAuto Solver = iota
	// SolverGnark is gnark's R1CS solver, for comparison.
	SolverGnark
)

// ParseSolver reads "auto", "cuzk" (the same) or "gnark".
func ParseSolver(s string) (Solver, error) {
	switch s {
	case "auto", "cuzk", "":
		return SolverAuto, nil
	case "gnark":
		return SolverGnark, nil
	}
	return 0, fmt.Errorf("unknown solver %q (auto, cuzk or gnark)", s)
}

// ReserveSolves readies the memory of n solutions of cuzk's solver, one per
// solve that runs at once, so that the first solves of a job neither allocate
// it nor fault it in (its pages are written now). Only solutions given back by Solution.Release are reused, which needs a
// backend that gives prep its memory (PrepAllocator), whose solves write A,
// B and C into that memory (SynthesizeOn): so only the wire values are
// readied, unless CUZK_SOLVE_INTO=off. Nothing for gnark's solver.
func (k *Keys) ReserveSolves(n int) {
	k.reserveSolves(n, false)
}

// ReserveSolvesFor is ReserveSolves for solves into b's memory: without
// their wire vectors where b's memory holds them (WireLender).
func (k *Keys) ReserveSolvesFor(b Backend, n int) {
	wl, ok := b.(WireLender)
	k.reserveSolves(n, ok && wl.LendsWires(k))
}

func (k *Keys) reserveSolves(n int, lentWires bool) {
	p := k.solver()
	switch {
	case p == nil:
	case solveInto():
		p.ReserveW(n, lentWires)
	default:
		p.Reserve(n)
	}
}

// SolverName is the solver Synthesize uses for these keys: "cuzk", or
// "gnark" when asked for or when cuzk's does not handle the circuit.
func (k *Keys) SolverName() string {
	if k.solver() != nil {
		return "cuzk"
	}
	return "gnark"
}

// solver returns the compiled program Synthesize uses, or nil for gnark's
// solver. Compiling takes a few solves' time, once per Keys; ReserveSolves
// does it before a job starts.
func (k *Keys) solver() *solve.Program {
	if k.Solver == SolverGnark {
		return nil
	}
	// A circuit solve does not handle (solve.ErrUnsupported) is left to
	// gnark's solver.
	k.solveOnce.Do(k.compileSolver)
	return k.program
}

func (k *Keys) compileSolver() { k.program, _ = solve.Compile(k.CS, k.SolverOptions...) }

// stateful says whether the system has blueprints with state (gnark's
// lookup tables, std/lookup/logderivlookup), which gnark's solver resets at
// the start of each solve: two solves of such a system must not overlap.
func (k *Keys) stateful() bool {
	k.statefulOnce.Do(func() {
		for _, b := range k.CS.Blueprints {
			_, ok64 := b.(constraint.BlueprintStateful[constraint.U64])
			_, ok32 := b.(constraint.BlueprintStateful[constraint.U32])
			k.isStateful = k.isStateful || ok64 || ok32
		}
	})
	return k.isStateful
}

// SharedWires says whether the A and B key sets leave out the same wires
// (InfinityA equals InfinityB), so that a partition's A and B wire vectors
// are one: porep-sha's are (98.5 M wires at 2^27, 2.9 GiB a vector), mimc's
// and sha's are not. Prep then fills one vector for both, and a backend
// may lay them out as one (WiresB aliasing WiresA).
func (k *Keys) SharedWires() bool {
	k.sharedOnce.Do(func() {
		k.shared = k.PK.NbInfinityA == k.PK.NbInfinityB && slices.Equal(k.PK.InfinityA, k.PK.InfinityB)
	})
	return k.shared
}

// Constraints is the number of constraints of the circuit.
func (k *Keys) Constraints() int { return k.CS.GetNbConstraints() }

// Manifest describes a key directory. It is written last, so a directory
// without one is an unfinished setup.
type Manifest struct {
	Format      int               `json:"format"`
	Curve       string            `json:"curve"`
	Circuit     string            `json:"circuit"`
	Layout      circuits.Layout   `json:"layout"`
	Constraints int               `json:"constraints"`
	Files       map[string]string `json:"files"` // file name → sha256
	Hash        string            `json:"hash"`
	Created     time.Time         `json:"created"`
}

const (
	manifestFile  = "manifest.json"
	r1csFile      = "circuit.r1cs"
	pkFile        = "proving.key"
	vkFile        = "verifying.key"
	manifestVer   = 1
	curveBLS12381 = "bls12_381"
)

// ErrNoKeys says a key directory has no keys for the circuit asked for.
var ErrNoKeys = errors.New("no keys")

// KeyDir is where keys for a circuit and target size live under root.
func KeyDir(root, circuit string, target int) string {
	return filepath.Join(root, fmt.Sprintf("%s-%d", circuit, target))
}

// Setup compiles the circuit for target constraints and runs gnark's Groth16
// setup (a fresh, local toxic-waste setup: for development and benchmarks).
func Setup(c circuits.Circuit, target int) (*Keys, error) {
	return SetupWith(c, target, nil)
}

// compileR1CS lays c out for target constraints and compiles it to a
// BLS12-381 R1CS.
func compileR1CS(c circuits.Circuit, target int) (circuits.Layout, *cs.R1CS, error) {
	l, err := c.Layout(target)
	if err != nil {
		return nil, nil, err
	}
	ccs, err := circuits.Compile(c, l)
	if err != nil {
		return nil, nil, err
	}
	r1cs, ok := ccs.(*cs.R1CS)
	if !ok {
		return nil, nil, fmt.Errorf("compiled %s is not a BLS12-381 R1CS", c.Name())
	}
	return l, r1cs, nil
}

// SetupWith is Setup with the key's scalar multiplications done by mul
// (keygen.CPUMultiplier, gpuprove.Multiplier): keygen.Setup makes keys of
// the structure gnark's setup makes, with toxic waste from crypto/rand. A nil
// mul runs gnark's own groth16.Setup.
func SetupWith(c circuits.Circuit, target int, mul keygen.Multiplier) (*Keys, error) {
	l, r1cs, err := compileR1CS(c, target)
	if err != nil {
		return nil, err
	}
	slog.Debug("compiled", append([]any{"circuit", c.Name(), "constraints", r1cs.GetNbConstraints()}, keygen.ReadHostMemory().Attrs()...)...)
	k := &Keys{Circuit: c.Name(), Layout: l, CS: r1cs}
	if mul == nil {
		pk, vk, err := groth16.Setup(r1cs)
		if err != nil {
			return nil, fmt.Errorf("groth16 setup of %s: %w", c.Name(), err)
		}
		k.PK, k.VK = pk.(*groth16bls.ProvingKey), vk.(*groth16bls.VerifyingKey)
		return k, nil
	}
	if k.PK, k.VK, err = keygen.Setup(r1cs, mul, nil); err != nil {
		return nil, fmt.Errorf("setup of %s: %w", c.Name(), err)
	}
	return k, nil
}

// Save writes the keys to dir: the R1CS, the proving key (raw dump, the fastest
// to load), the verifying key, and the manifest with their hashes, last.
func (k *Keys) Save(dir string) error {
	if k.SystemReleased() {
		return fmt.Errorf("save keys of %s: %w", k.Circuit, ErrSystemReleased)
	}
	m, err := saveFiles(dir, k.Circuit, k.Layout, k.CS.GetNbConstraints(), []keyFile{
		{r1csFile, func(w io.Writer) error { _, err := k.CS.WriteTo(w); return err }},
		{pkFile, k.PK.WriteDump},
		{vkFile, func(w io.Writer) error { _, err := k.VK.WriteRawTo(w); return err }},
	})
	if err != nil {
		return err
	}
	k.Hash, k.Dir = m.Hash, dir
	return nil
}

// keyFile is one file of a key directory and what writes it.
type keyFile struct {
	name  string
	write func(io.Writer) error
}

// saveFiles writes the files of a key directory in order, hashing each, and
// the manifest last.
func saveFiles(dir, circuit string, layout circuits.Layout, constraints int, files []keyFile) (*Manifest, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create key directory: %w", err)
	}
	os.Remove(filepath.Join(dir, manifestFile))
	// A points file made from the keys this directory held before.
	os.Remove(filepath.Join(dir, PointsFileName))
	m := &Manifest{
		Format: manifestVer, Curve: curveBLS12381, Circuit: circuit, Layout: layout,
		Constraints: constraints, Files: map[string]string{}, Created: time.Now().UTC(),
	}
	for _, f := range files {
		sum, err := writeHashed(filepath.Join(dir, f.name), f.write)
		if err != nil {
			return nil, err
		}
		m.Files[f.name] = sum
		slog.Debug("key file written", append([]any{"file", f.name}, keygen.ReadHostMemory().Attrs()...)...)
	}
	m.Hash = contentHash(m.Files)
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := writeFileSync(filepath.Join(dir, manifestFile), append(b, '\n')); err != nil {
		return nil, err
	}
	return m, nil
}

func writeHashed(path string, write func(io.Writer) error) (string, error) {
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	if err := write(bw); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("sync %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeFileSync(path string, b []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Sync()
}

func contentHash(files map[string]string) string {
	h := sha256.New()
	for _, name := range []string{r1csFile, pkFile, vkFile} {
		fmt.Fprintf(h, "%s %s\n", name, files[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ReadManifest reads the manifest of a key directory.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, manifestFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoKeys, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %w", path, err)
	}
	if m.Format != manifestVer {
		return nil, fmt.Errorf("%s: format %d, this cuzk reads format %d", path, m.Format, manifestVer)
	}
	if m.Curve != curveBLS12381 {
		return nil, fmt.Errorf("%s: keys are for curve %q, cuzk proves on %s", path, m.Curve, curveBLS12381)
	}
	return &m, nil
}

// Load reads the keys in dir and checks that they are intact and made for the
// circuit asked for; a mismatch names the file at fault.
func Load(dir, circuit string, layout circuits.Layout) (*Keys, error) {
	return LoadWith(dir, circuit, layout, LoadOptions{})
}

// LoadOptions say how much of a key set Load keeps in memory.
type LoadOptions struct {
	// PointsOnDisk leaves the proving key's points out of memory: A, B, Z,
	// K and G2 B are read past (the file is still hashed whole) and Keys.Points
	// is the key set's points file, written from proving.key first when
	// there is none (EnsurePoints). For the GPU backend's disk tier, where
	// no memory can hold them; the CPU backend cannot prove with such keys.
	PointsOnDisk bool
	// G2InMemory keeps G2 B in memory all the same, for b_g2 on the CPU
	// (prover.BG2).
	G2InMemory bool
}

// LoadWith is Load with options.
func LoadWith(dir, circuit string, layout circuits.Layout, opt LoadOptions) (*Keys, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if m.Circuit != circuit {
		return nil, fmt.Errorf("%s: keys are for circuit %q, not %q", filepath.Join(dir, manifestFile), m.Circuit, circuit)
	}
	if layout != nil && !m.Layout.Equal(layout) {
		return nil, fmt.Errorf("%s: keys are for %s layout %s, not %s", filepath.Join(dir, manifestFile), circuit, m.Layout, layout)
	}
	k := &Keys{Circuit: m.Circuit, Layout: m.Layout, Hash: m.Hash, Dir: dir,
		CS: &cs.R1CS{}, PK: &groth16bls.ProvingKey{}, VK: &groth16bls.VerifyingKey{}}
	if contentHash(m.Files) != m.Hash {
		return nil, fmt.Errorf("%s is corrupt: its hash does not match its files", filepath.Join(dir, manifestFile))
	}
	readers := []struct {
		name string
		read func(io.Reader) error
	}{
		{r1csFile, func(r io.Reader) error { _, err := k.CS.ReadFrom(r); return err }},
		{pkFile, k.PK.ReadDump},
		{vkFile, func(r io.Reader) error { _, err := k.VK.ReadFrom(r); return err }},
	}
	var counts PointCounts
	for _, f := range readers {
		var err error
		if f.name == pkFile && opt.PointsOnDisk {
			counts, err = readProvingKeyWithoutPoints(filepath.Join(dir, f.name), m.Files[f.name], k.PK, opt.G2InMemory)
		} else {
			err = readHashed(filepath.Join(dir, f.name), m.Files[f.name], f.read)
		}
		if err != nil {
			return nil, err
		}
		slog.Debug("key file read", append([]any{"file", f.name}, keygen.ReadHostMemory().Attrs()...)...)
	}
	if opt.PointsOnDisk {
		p, err := EnsurePoints(dir)
		if err != nil {
			return nil, err
		}
		if p.Counts() != counts {
			p.Close()
			return nil, fmt.Errorf("%s has %+v points, %s %+v", p.Path, p.Counts(), filepath.Join(dir, pkFile), counts)
		}
		k.Points = p
	}
	if k.CS.CurveID() != ecc.BLS12_381 {
		return nil, fmt.Errorf("%s: constraint system is for %s", filepath.Join(dir, r1csFile), k.CS.CurveID())
	}
	if got := k.CS.GetNbConstraints(); got != m.Constraints {
		return nil, fmt.Errorf("%s: %d constraints, manifest says %d", filepath.Join(dir, r1csFile), got, m.Constraints)
	}
	return k, nil
}

// readProvingKeyWithoutPoints reads the proving key at path into pk, all but
// its points (G2 B kept when g2), hashing the whole file, and returns the
// number of points of each vector.
func readProvingKeyWithoutPoints(path, want string, pk *groth16bls.ProvingKey, g2 bool) (counts PointCounts, err error) {
	f, err := os.Open(path)
	if err != nil {
		return counts, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	in, err := newDumpInput(f, h)
	if err != nil {
		return counts, fmt.Errorf("read %s: %w", path, err)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s is corrupt: %v", path, r)
		}
	}()
	derr := readDump(in, pk, func(s dumpSection, in *dumpInput) error {
		*map[string]*int{"A": &counts.A, "B": &counts.B, "Z": &counts.Z, "K": &counts.K, "G2 B": &counts.G2B}[s.name] = s.n
		if s.name == "G2 B" && g2 {
			var err error
			pk.G2.B, err = readPoints[curve.G2Affine](s, in)
			return err
		}
		return in.skip(s.bytes())
	})
	if derr == nil {
		derr = in.drain()
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return counts, fmt.Errorf("%s is corrupt or was replaced: sha256 %s, manifest says %s", path, short(got), short(want))
	}
	if derr != nil {
		return counts, fmt.Errorf("%s: %w", path, derr)
	}
	return counts, nil
}

// readHashed decodes a file while hashing it, and refuses it if the hash is
// not the one the manifest recorded. Decoders of corrupt input may panic; that
// becomes an error naming the file.
func readHashed(path, want string, read func(io.Reader) error) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	tr := io.TeeReader(bufio.NewReaderSize(f, 1<<20), h)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s is corrupt: %v", path, r)
		}
	}()
	derr := read(tr)
	io.Copy(h, tr) // hash any bytes the decoder left
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%s is corrupt or was replaced: sha256 %s, manifest says %s", path, short(got), short(want))
	}
	if derr != nil {
		return fmt.Errorf("%s: %w", path, derr)
	}
	return nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
