// Package service serves a runner.Service as cuzk.v1.ProvingEngine: gRPC,
// gRPC-Web and the Connect protocol (its JSON mapping included) from one
// handler, with bearer-token auth, gRPC reflection and the request limits.
// The daemon (cli/daemon.go) listens and runs it.
package service

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/gen/cuzk/v1/cuzkv1connect"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/metrics"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
)

// SetupFunc makes the key set of circuit at target constraints per
// partition in dir, as `cuzk setup` does.
type SetupFunc func(ctx context.Context, circuit string, target int, dir string) error

// Options configures a Server. Service is required; the rest have defaults.
type Options struct {
	// Service proves the jobs; the caller starts and closes it.
	Service *runner.Service
	// Store is the service's store, from which AwaitProof reads proofs.
	Store *store.Store
	// Backend and Devices are what Service runs on, for GetStatus and
	// EvictKeys. Devices may be empty.
	Backend prover.Backend
	Devices []gpu.Device
	// Design is the lock design's name, reported by GetStatus.
	Design string
	// Metrics, if not nil, is what GetMetrics returns.
	Metrics *metrics.Metrics
	// Keys is the root of the key sets (default "build/keys"); a job names
	// a key set under it, never a path.
	Keys string
	// Out is where a new job's proofs go, in Out/<job id> (default
	// "build/proofs").
	Out string
	// Setup runs StartSetup's tasks; nil refuses StartSetup.
	Setup SetupFunc
	// Token, if not empty, is the bearer token every request must carry.
	Token []byte
	// Version is reported by GetStatus.
	Version string
	// MemAvailable returns the host memory free for new allocations
	// (default: MemAvailable of /proc/meminfo). Setup and key loads are
	// refused when their estimate does not fit.
	MemAvailable func() (int64, error)
	// EvictDevices frees device copies of keys idle that long and returns
	// the bytes freed; nil when the backend keeps none.
	EvictDevices func(idle time.Duration) (int64, error)
	// KeyTier says where a loaded key set's points live: "device",
	// "pinned" or "host" (the GPU backend's plan). Nil or "": "host".
	KeyTier func(*prover.Keys) string
	// Cluster, when the daemon is a cluster member, returns its view of the
	// cluster for GetStatus.
	Cluster func() (*cuzkv1.ClusterStatus, error)
}

// Server implements cuzkv1connect.ProvingEngineHandler over a runner.Service.
// It is also an actors.Observer: the daemon passes it to the service so that
// WatchJob streams see the partition events.
type Server struct {
	opt     Options
	svc     *runner.Service
	started time.Time
	events  *fanout
	keys    *keyRegistry
	setups  *setupTasks

	submitMu sync.Mutex // an idempotency key's lookup and submission are one step
}

var _ cuzkv1connect.ProvingEngineHandler = (*Server)(nil)

// New returns a server for opt.Service.
func New(opt Options) (*Server, error) {
	if opt.Service == nil {
		return nil, errors.New("service: no runner.Service")
	}
	if opt.Keys == "" {
		opt.Keys = "build/keys"
	}
	if opt.Out == "" {
		opt.Out = "build/proofs"
	}
	if opt.MemAvailable == nil {
		opt.MemAvailable = MemAvailable
	}
	s := &Server{opt: opt, svc: opt.Service, started: time.Now(), events: newFanout(), keys: newKeyRegistry()}
	s.setups = newSetupTasks(s)
	return s, nil
}

// Handler serves the ProvingEngine (gRPC, gRPC-Web, Connect), gRPC reflection
// (v1 and v1alpha, for grpcurl) and, when extra is not nil, the paths it
// routes, all behind the bearer token when there is one.
func (s *Server) Handler(extra http.Handler) http.Handler {
	mux := http.NewServeMux()
	opts := []connect.HandlerOption{connect.WithReadMaxBytes(MaxRequestBytes)}
	path, h := cuzkv1connect.NewProvingEngineHandler(s, opts...)
	mux.Handle(path, h)
	reflector := grpcreflect.NewStaticReflector(cuzkv1connect.ProvingEngineName)
	mux.Handle(grpcreflect.NewHandlerV1(reflector))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector))
	if extra != nil {
		mux.Handle("/", extra)
	}
	return RequireToken(s.opt.Token, mux)
}

// Close ends the WatchJob streams and cancels the setups, waiting for them
// until ctx ends.
func (s *Server) Close(ctx context.Context) error {
	s.events.close()
	return s.setups.stop(ctx)
}

// MaxRequestBytes bounds a request message: a submission names a key set
// and a seed. (Outside circuits' witnesses will need more.)
const MaxRequestBytes = 1 << 20

// codeOf maps a runner or store error to a Connect code.
func codeOf(err error) connect.Code {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return connect.CodeDeadlineExceeded
	case errors.Is(err, context.Canceled):
		return connect.CodeCanceled
	case isNotFound(err):
		return connect.CodeNotFound
	case isInvalid(err):
		return connect.CodeInvalidArgument
	case errors.Is(err, runner.ErrExists):
		return connect.CodeAlreadyExists
	case errors.Is(err, runner.ErrNotRunning), errors.Is(err, runner.ErrBusy), errors.Is(err, runner.ErrNothingToRetry),
		errors.Is(err, runner.ErrFinished), errors.Is(err, runner.ErrTooLarge), errors.Is(err, runner.ErrHostTooLarge),
		errors.Is(err, store.ErrTransition):
		// A partition larger than this daemon's devices or host-memory
		// limit is refused for what the daemon is, not for the request's form;
		// an unfinished job the store will not forget, for the job's state.
		return connect.CodeFailedPrecondition
	case errors.Is(err, runner.ErrClosed):
		return connect.CodeUnavailable
	}
	return connect.CodeInternal
}

// toConnect wraps err with the code its kind calls for.
func toConnect(err error) error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return err
	}
	return connect.NewError(codeOf(err), err)
}

func invalid(format string, args ...any) error {
	return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(format, args...))
}

// Compile-time check that the generated messages are the ones served.
var _ = cuzkv1.File_cuzk_v1_engine_proto
