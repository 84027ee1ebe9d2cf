package engine

import (
	"io"
	"runtime"

	"github.com/consensys/gnark/constraint/solver"

	"github.com/cuzk/cuzk/prover"
)

// Option configures Setup, Prove and ProveAll; each says which it affects.
type Option func(*options)

type options struct {
	backend  string
	devices  []int
	library  string
	opened   prover.Backend
	keygen   string
	solver   []solver.Option
	workers  int
	rnd      io.Reader
	gnarkSol bool
	design   string
}

// Backends Prove and ProveAll compute on (WithBackend).
const (
	// BackendCPU computes on the host with gnark-crypto: the default.
	BackendCPU = "cpu"
	// BackendGPU computes on GPUs through cuzk's CUDA kernel library; an
	// error if it does not load or there is no GPU.
	BackendGPU = "gpu"
	// BackendAuto is the GPU where the library loads, else the CPU.
	BackendAuto = "auto"
)

// WithBackend picks where Prove and ProveAll compute: BackendCPU (default),
// BackendGPU or BackendAuto. The GPUs are opened for the call and closed
// after it; to keep them open across calls, open a backend once
// (OpenGPU) and pass it with WithProverBackend. For Setup it picks where
// the key's multiplications run (see WithKeygen).
func WithBackend(name string) Option { return func(o *options) { o.backend = name } }

// WithDevices are the CUDA devices of BackendGPU; default device 0.
func WithDevices(devices ...int) Option { return func(o *options) { o.devices = devices } }

// WithLibrary is the path of cuzk's CUDA kernel library; default the
// search order of cuda.Load ($CUZK_GPU_LIB, next to the executable, build/).
func WithLibrary(path string) Option { return func(o *options) { o.library = path } }

// WithProverBackend proves with an opened backend (prover.CPU, or the
// Backend of OpenGPU), which the caller closes. It overrides WithBackend.
func WithProverBackend(b prover.Backend) Option { return func(o *options) { o.opened = b } }

// WithKeygen picks Setup's key generation: "cpu" (cuzk's keygen on the
// host, the default), "gpu" (cuzk's keygen, multiplications on GPU 0) or
// "gnark" (gnark's groth16.Setup).
func WithKeygen(name string) Option { return func(o *options) { o.keygen = name } }

// WithHints gives Prove and ProveAll hints the circuit calls that are not
// in gnark's registry, as gnark's solver.WithHints does.
func WithHints(hints ...solver.Hint) Option {
	return func(o *options) { o.solver = append(o.solver, solver.WithHints(hints...)) }
}

// WithSolverOptions passes gnark's solver options (solver.WithHints,
// solver.OverrideHint) to Prove and ProveAll, whichever solver runs.
func WithSolverOptions(opts ...solver.Option) Option {
	return func(o *options) { o.solver = append(o.solver, opts...) }
}

// WithGnarkSolver solves witnesses with gnark's solver rather than cuzk's
// (which is faster and gives the same wires); for comparison.
func WithGnarkSolver() Option { return func(o *options) { o.gnarkSol = true } }

// WithWorkers is how many workers ProveAll runs per device, each walking one
// partition through its stages (the actors' workers, sharing the device under
// WithDesign); default half the cores (at least one): each proof is itself
// parallel.
func WithWorkers(n int) Option { return func(o *options) { o.workers = n } }

// WithDesign picks the lock design ProveAll's workers share each device
// under (single, split-first, split-devsync, split or budget; default budget).
func WithDesign(name string) Option { return func(o *options) { o.design = name } }

// WithRandomness is the source of the proofs' blinding (r, s) and, for
// Setup, of the toxic waste; default crypto/rand. ProveAll's workers read it
// one at a time. For tests only: whoever knows it can forge proofs or learn
// witnesses.
func WithRandomness(r io.Reader) Option {
	return func(o *options) {
		// nil is crypto/rand; ProveAll's service serializes the reads of
		// its concurrent proofs.
		o.rnd = r
	}
}

func collect(opts []Option) *options {
	o := &options{backend: BackendCPU, keygen: "cpu", workers: max(1, runtime.NumCPU()/2)}
	for _, f := range opts {
		f(o)
	}
	return o
}
