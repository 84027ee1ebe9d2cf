package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"connectrpc.com/connect"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/prover"
)

// keyRegistry remembers the key sets this server loaded and where their
// points live, for GetStatus. It keeps no reference to the keys: the
// service decides when they are freed.
type keyRegistry struct {
	mu     sync.Mutex
	loaded map[string]loadedKeys // by absolute dir
}

type loadedKeys struct {
	used time.Time
	tier string
}

func newKeyRegistry() *keyRegistry { return &keyRegistry{loaded: map[string]loadedKeys{}} }

func (r *keyRegistry) used(dir, tier string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loaded[absDir(dir)] = loadedKeys{used: time.Now(), tier: tier}
}

// forget drops what has not been used for idle; the service dropped those
// too unless a running job holds them (GetStatus adds those back).
func (r *keyRegistry) forget(idle time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for dir, l := range r.loaded {
		if time.Since(l.used) >= idle {
			delete(r.loaded, dir)
		}
	}
}

// tier is where a loaded key set lives; "" when this server has not
// loaded it.
func (r *keyRegistry) tier(dir string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loaded[absDir(dir)].tier
}

func absDir(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}

// loadKeys returns the key set ref names, loading it when the service has
// not: never a setup. A key set that is not there fails with
// FailedPrecondition and says how to make it; one whose files do not fit the
// host's free memory fails with ResourceExhausted.
func (s *Server) loadKeys(ctx context.Context, ref keyRef) (*prover.Keys, error) {
	if err := ctx.Err(); err != nil {
		return nil, toConnect(err)
	}
	if s.keys.tier(ref.dir) == "" {
		size, err := dirSize(ref.dir)
		if err != nil {
			return nil, s.noKeys(ref, err)
		}
		if err := s.fits("load keys "+ref.dir, LoadEstimate(size)); err != nil {
			return nil, err
		}
	}
	name, err := ref.circuitName()
	if err == nil {
		k, err := s.svc.Keys(ref.dir, name, ref.layout, nil)
		if err == nil {
			s.keys.used(ref.dir, s.tierOf(k))
			return k, nil
		}
		if !errors.Is(err, prover.ErrNoKeys) {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("keys %s: %w", ref.dir, err))
		}
	}
	return nil, s.noKeys(ref, err)
}

func (s *Server) noKeys(ref keyRef, err error) error {
	if ref.circuit == nil {
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf(
			"no key set %s in %s (%v): make it with cuzk setup --r1cs FILE --keys %s; jobs never run a setup", ref.name, s.opt.Keys, err, s.opt.Keys))
	}
	return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf(
		"no keys for %s at %d constraints in %s (%v): make them with cuzk setup --circuit %s --constraints %d --keys %s, or StartSetup; jobs never run a setup",
		ref.circuit.Name(), ref.target, ref.dir, err, ref.circuit.Name(), ref.target, s.opt.Keys))
}

// fits refuses work whose memory estimate is over the host's free memory.
func (s *Server) fits(what string, need int64) error {
	free, err := s.opt.MemAvailable()
	if err != nil {
		slog.Warn("free host memory unknown; not checked", "for", what, "err", err)
		return nil
	}
	if need > free {
		return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("%s needs about %s of host memory, %s is free",
			what, gpu.FormatBytes(need), gpu.FormatBytes(free)))
	}
	return nil
}

// dirSize is the bytes of the key files in dir; a directory without a
// manifest (no keys, or an unfinished setup) fails with prover.ErrNoKeys.
func dirSize(dir string) (int64, error) {
	m, err := prover.ReadManifest(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for name := range m.Files {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return 0, fmt.Errorf("%w: %w", prover.ErrNoKeys, err)
		}
		n += fi.Size()
	}
	return n, nil
}

// PreloadKeys implements ProvingEngineHandler.
func (s *Server) PreloadKeys(ctx context.Context, req *connect.Request[cuzkv1.PreloadKeysRequest]) (*connect.Response[cuzkv1.PreloadKeysResponse], error) {
	if len(req.Msg.Keys) == 0 {
		return nil, invalid("keys: name at least one key set")
	}
	out := &cuzkv1.PreloadKeysResponse{}
	for _, r := range req.Msg.Keys {
		ref, err := s.keyRef(r)
		if err != nil {
			return nil, err
		}
		k, err := s.loadKeys(ctx, ref)
		if err != nil {
			return nil, err
		}
		size, _ := dirSize(ref.dir)
		out.KeySets = append(out.KeySets, &cuzkv1.KeySetStatus{Dir: ref.dir, Circuit: k.Circuit,
			Constraints: uint64(k.Constraints()), KeyHash: k.Hash, Tier: s.keys.tier(ref.dir), Size: uint64(size)})
		slog.Info("keys preloaded", "dir", ref.dir, "hash", k.Hash)
	}
	return connect.NewResponse(out), nil
}

// tierOf is where a loaded key set's points live: the backend's answer,
// else host memory.
func (s *Server) tierOf(k *prover.Keys) string {
	if s.opt.KeyTier != nil {
		if t := s.opt.KeyTier(k); t != "" {
			return t
		}
	}
	return "host"
}

// EvictKeys implements ProvingEngineHandler.
func (s *Server) EvictKeys(ctx context.Context, req *connect.Request[cuzkv1.EvictKeysRequest]) (*connect.Response[cuzkv1.EvictKeysResponse], error) {
	idle := req.Msg.Idle.AsDuration()
	if idle < 0 {
		return nil, invalid("idle %s: want zero or more", idle)
	}
	out := &cuzkv1.EvictKeysResponse{}
	if s.opt.EvictDevices != nil {
		freed, err := s.opt.EvictDevices(idle)
		if err != nil {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("evict device keys: %w", err))
		}
		out.DeviceBytes = uint64(max(freed, 0))
	}
	out.KeySets = uint32(s.ForgetIdleKeys(idle))
	return connect.NewResponse(out), nil
}

// ForgetIdleKeys drops the host copies of key sets no running job holds and
// none has used for idle, and returns how many (runner.Service.ForgetIdleKeys).
func (s *Server) ForgetIdleKeys(idle time.Duration) int {
	n := s.svc.ForgetIdleKeys(idle)
	s.keys.forget(idle)
	return n
}

// keySets lists the key sets under the keys root: tier "disk", or where
// they live for those loaded or held by a running job (by key hash; a job
// resumed at start loaded its keys without this server, which then reports
// them "host").
func (s *Server) keySets(runningHashes map[string]bool) []*cuzkv1.KeySetStatus {
	entries, err := os.ReadDir(s.opt.Keys)
	if err != nil {
		return nil
	}
	var out []*cuzkv1.KeySetStatus
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(s.opt.Keys, e.Name())
		m, err := prover.ReadManifest(dir)
		if err != nil {
			continue
		}
		size, _ := dirSize(dir)
		tier := s.keys.tier(dir)
		if tier == "" && runningHashes[m.Hash] {
			tier = "host"
		}
		if tier == "" {
			tier = "disk"
		}
		out = append(out, &cuzkv1.KeySetStatus{Dir: dir, Circuit: m.Circuit, Constraints: uint64(max(m.Constraints, 0)),
			KeyHash: m.Hash, Tier: tier, Size: uint64(size)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out
}
