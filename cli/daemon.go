package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/metrics"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/service"
	"github.com/cuzk/cuzk/store"
)

func daemonFlags() []cli.Flag {
	keep := map[string]bool{"keys": true, "backend": true, "gpu-lib": true, "b-g2": true, "design": true, "workers": true,
		"devices": true, "vram-limit": true, "key-tier": true, "msm-tables": true, "pinned-limit": true, "keys-host-limit": true, "max-attempts": true, "retry-backoff": true, "metrics-addr": true,
		"host-mem-limit": true, "synth-workers": true, "trace": true}
	var out []cli.Flag
	for _, f := range proveFlags() {
		if keep[f.Names()[0]] {
			out = append(out, f)
		}
	}
	return append(append(out,
		&cli.StringFlag{Name: "config", Usage: "read flags from this TOML file (keys are flag names, e.g. listen = \"unix:/run/cuzk.sock\"); flags given on the command line win; an unknown key is an error"},
		&cli.StringFlag{Name: "store", Usage: "the store directory (required): unfinished jobs in it are resumed at start, new jobs recorded in it"},
		&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9820", Usage: "address of the API (gRPC, gRPC-Web, Connect and the /v1 JSON API on one port): host:port, or unix:PATH for a unix socket; off loopback it needs --auth-token-file"},
		&cli.StringFlag{Name: "auth-token-file", Usage: "file holding the bearer token every request must carry (Authorization: Bearer <token>); required to listen off loopback"},
		&cli.StringFlag{Name: "tls-cert", Usage: "serve TLS with this certificate (PEM; with --tls-key)"},
		&cli.StringFlag{Name: "tls-key", Usage: "the private key of --tls-cert (PEM)"},
		&cli.StringFlag{Name: "out", Value: filepath.Join("build", "proofs"), Usage: "directory under which each new job's proofs go, in <out>/<job id>"},
		&cli.DurationFlag{Name: "drain-timeout", Value: 30 * time.Second, Usage: "on SIGINT/SIGTERM, how long to let running stages finish (more than 0)"},
		&cli.DurationFlag{Name: "evict-idle", Value: 10 * time.Minute, Usage: "free a key set when no job has used it this long: its device copy (GPU backend) and, once no running job holds it, its host memory (0: keep keys)"},
		&cli.DurationFlag{Name: "forget-ended", Usage: "remove a job from the store this long after it ended (done, failed or cancelled): its record, partitions and proofs; the files under --out stay (0: keep every job)"},
	), clusterFlags()...)
}

func daemonCommand() *cli.Command {
	return &cli.Command{
		Name:  "daemon",
		Usage: "resume a store's unfinished jobs, then prove jobs submitted over gRPC / Connect (cuzk.v1.ProvingEngine) or the JSON API",
		Flags: daemonFlags(),
		Action: func(c *cli.Context) error {
			if err := applyConfig(c, daemonFlags()); err != nil {
				return err
			}
			if err := checkDaemonFlags(c); err != nil {
				return err
			}
			return daemon(c)
		},
	}
}

// checkDaemonFlags refuses values that make no sense, which the defaults
// would otherwise hide (a --workers 0 made 3, a negative timeout).
func checkDaemonFlags(c *cli.Context) error {
	if c.String("store") == "" {
		return errors.New("--store is required (on the command line or in --config)")
	}
	if c.String("listen") == "" {
		return errors.New("--listen: empty (host:port or unix:PATH)")
	}
	if n := c.Int("workers"); n < 1 {
		return fmt.Errorf("--workers %d: want at least 1", n)
	}
	if n := c.Int("max-attempts"); n < 1 {
		return fmt.Errorf("--max-attempts %d: want at least 1", n)
	}
	if d := c.Duration("retry-backoff"); d < 0 {
		return fmt.Errorf("--retry-backoff %s: want 0 (at once) or more", d)
	}
	if d := c.Duration("drain-timeout"); d <= 0 {
		return fmt.Errorf("--drain-timeout %s: want more than 0", d)
	}
	if d := c.Duration("evict-idle"); d < 0 {
		return fmt.Errorf("--evict-idle %s: want 0 (keep keys) or more", d)
	}
	if d := c.Duration("forget-ended"); d < 0 {
		return fmt.Errorf("--forget-ended %s: want 0 (keep every job) or more", d)
	}
	return nil
}

func daemon(c *cli.Context) error {
	cfg, indices, vram, err := runSettings(c)
	if err != nil {
		return err
	}
	var token []byte
	if path := c.String("auth-token-file"); path != "" {
		if token, err = service.ReadToken(path); err != nil {
			return fmt.Errorf("--auth-token-file: %w", err)
		}
	}
	// Listening is checked before anything slow starts: an exposed address
	// without a token stops here.
	ln, err := service.Listen(service.ListenOptions{Addr: c.String("listen"), Token: token,
		CertFile: c.String("tls-cert"), KeyFile: c.String("tls-key")})
	if err != nil {
		return err
	}
	defer ln.Close()
	if len(token) > 0 && c.String("tls-cert") == "" && !strings.HasPrefix(c.String("listen"), "unix:") && !service.IsLoopback(c.String("listen")) {
		slog.Warn("the bearer token crosses the network in clear text: give --tls-cert and --tls-key")
	}
	st, err := store.Open(c.String("store"), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	backend, devices, closeDevices, err := openBackend(c, indices, vram, cfg.Pool)
	if err != nil {
		return err
	}
	defer closeDevices()
	m := metrics.New()
	// The API server observes the actors (for WatchJob) but is made after
	// the service it serves.
	var events service.Relay
	obs := actors.Observers{m, daemonLog{}, &events}
	tw, closeTrace, err := daemonTrace(c)
	if err != nil {
		return err
	}
	defer closeTrace()
	if tw != nil {
		obs = append(obs, tw)
	}
	node, err := clusterNode(c, len(devices), m.Registry(), tw)
	if err != nil {
		return err
	}
	var dist runner.Distributor
	if node != nil {
		dist = node
		obs = append(obs, node)
	}
	svc, err := runner.StartService(runner.ServiceOptions{Backend: backend, Devices: devices, Config: cfg, Store: st, Cluster: dist,
		Observer: obs, Seed: uint64(time.Now().UnixNano()), Load: keyLoader(keyLoadOptions(c, backend)),
		Preload: func(k *prover.Keys) error {
			hostBytes := prover.HostFootprint(k)
			pinned := stagingToPin(cfg, len(devices), hostBytes, inFlight(cfg, len(devices)))
			err := preloadKeys(backend, k, solvesAtOnce(cfg, len(devices), hostBytes), pinned)
			reportKeys(backend, m)
			return err
		}})
	if err != nil {
		return err
	}
	api, err := service.New(service.Options{Service: svc, Store: st, Backend: backend, Devices: devices, Design: cfg.Design,
		Metrics: m, Keys: c.String("keys"), Out: c.String("out"), Token: token, Version: Version,
		Setup:        daemonSetup(c, c.App.ErrWriter),
		EvictDevices: evictDeviceKeys(backend, m), KeyTier: keyTier(backend), Cluster: clusterStatus(node)})
	if err != nil {
		svc.Close(context.Background())
		return err
	}
	events.Set(api)
	stopEvict := evictIdleKeys(backend, m, c.Duration("evict-idle"), func(device int, freed int64, err error) {
		if err != nil {
			slog.Error("evict idle keys", "device", device, "err", err)
			return
		}
		slog.Info("evicted idle keys", "device", device, "freed", gpu.FormatBytes(freed))
	})
	defer stopEvict()
	// Host copies of idle key sets, on every backend.
	if idle := c.Duration("evict-idle"); idle > 0 {
		defer every(idleCheck(idle), func() {
			if n := api.ForgetIdleKeys(idle); n > 0 {
				slog.Info("forgot idle key sets", "count", n)
			}
		})()
	}
	// Ended jobs leave the store once they are that old.
	if keep := c.Duration("forget-ended"); keep > 0 {
		defer every(idleCheck(keep), func() {
			ids, err := svc.ForgetEnded(time.Now().Add(-keep))
			if len(ids) > 0 {
				slog.Info("forgot ended jobs", "count", len(ids), "jobs", ids)
			}
			if err != nil {
				slog.Error("forget ended jobs", "err", err)
			}
		})()
	}
	// Until the server runs, a failure must still stop the actors.
	served := false
	defer func() {
		if !served {
			svc.Close(context.Background())
			api.Close(context.Background())
		}
	}()

	if node != nil {
		// Joined before the resume: a resumed job's partitions are leased
		// over the cluster.
		if err := node.Start(svc, st); err != nil {
			return err
		}
		defer node.Close()
	}
	resumed, err := svc.Resume()
	for _, sub := range resumed {
		slog.Info("resumed job", "job", sub.ID, "left", len(sub.Pending), "partitions", sub.Partitions)
	}
	if err != nil {
		// The jobs that could not be resumed stay in the store as they
		// are; the daemon proves the others and serves.
		slog.Error("some unfinished jobs were not resumed", "err", err)
	}

	if addr := c.String("metrics-addr"); addr != "" {
		stop, err := serveMetrics(addr, m)
		if err != nil {
			return err
		}
		defer stop()
	}
	legacy := &daemonAPI{svc: svc, api: api}
	srv := service.NewHTTPServer(api.Handler(legacy.routes(m.Handler())))
	ctx, stopSignals := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	serveErr := make(chan error, 1)
	go func() { serveErr <- ln.Serve(srv) }()
	served = true
	slog.Info("serving", "addr", ln.URL(), "store", st.Dir(), "backend", backend.Name(), "design", cfg.Design, "auth", len(token) > 0)

	// A member the cluster no longer takes stops as on a signal, then
	// exits with the reason: started again, it joins as a new member.
	var excluded <-chan struct{}
	var stopErr error
	if node != nil {
		excluded = node.Excluded()
	}
	select {
	case <-ctx.Done():
	case <-excluded:
		stopErr = node.Err()
	case err := <-serveErr:
		svc.Close(context.Background())
		api.Close(context.Background())
		return fmt.Errorf("serve: %w", err)
	}
	// A second signal kills the process at once.
	stopSignals()
	running := svc.InFlight()
	slog.Info("stopping: no new jobs; running stages may finish, the rest stays in the store for the next start",
		"running_jobs", len(running), "drain_timeout", c.Duration("drain-timeout"))
	drainCtx, cancel := context.WithTimeout(context.Background(), c.Duration("drain-timeout"))
	defer cancel()
	// Close first: it answers waiting clients (Unavailable, 503) and ends
	// the event streams, so that Shutdown does not wait for them.
	if err := svc.Close(drainCtx); err != nil {
		slog.Warn("stopped without waiting for every stage", "err", err)
	}
	if err := api.Close(drainCtx); err != nil {
		slog.Warn("stopped without waiting for the setup", "err", err)
	}
	shutCtx, cancelShut := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelShut()
	if err := srv.Shutdown(shutCtx); err != nil {
		srv.Close()
	}
	for _, id := range running {
		if js, err := svc.Status(id); err == nil && js.State == runner.StateRunning {
			slog.Info("left for the next start", "job", id, "left", js.Pending, "partitions", js.NumPartitions)
		}
	}
	return stopErr
}

// daemonSetup makes key sets for StartSetup as cuzk setup does (--keygen
// auto: on the GPU where the kernel library loads). A setup cannot be
// interrupted; ctx only stops one that has not begun.
func daemonSetup(c *cli.Context, log io.Writer) service.SetupFunc {
	gpuLib := c.String("gpu-lib")
	return func(ctx context.Context, circuit string, target int, dir string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		circ, err := circuits.Lookup(circuit)
		if err != nil {
			return err
		}
		l, err := circ.Layout(target)
		if err != nil {
			return err
		}
		_, err = runSetup(&keySpec{circuit: circ, target: target, layout: l, dir: dir, keygen: "auto", gpuLib: gpuLib}, log)
		return err
	}
}

// keyTier is where the GPU backend keeps a key set's points (its plan on
// the first device: device, pinned or host); nil on other backends.
func keyTier(b prover.Backend) func(*prover.Keys) string {
	p := prover.CapabilitiesOf(b).Keys
	if p == nil {
		return nil
	}
	return func(k *prover.Keys) string {
		devs := p.Devices()
		if len(devs) == 0 {
			return ""
		}
		plan, err := p.DevicePlan(devs[0], k)
		if err != nil {
			return ""
		}
		return plan.KeyTier()
	}
}

// evictDeviceKeys frees the device copies of keys idle that long, on a
// backend that keeps them; nil on one that does not.
func evictDeviceKeys(b prover.Backend, m *metrics.Metrics) func(time.Duration) (int64, error) {
	h := prover.CapabilitiesOf(b).Keys
	if h == nil {
		return nil
	}
	return func(idle time.Duration) (int64, error) {
		var total int64
		var errs []error
		for _, i := range h.Devices() {
			freed, err := h.EvictIdleOn(i, idle)
			m.KeysEvicted(i, freed)
			total += freed
			if err != nil {
				errs = append(errs, fmt.Errorf("device %d: %w", i, err))
			}
		}
		reportKeys(b, m)
		return total, errors.Join(errs...)
	}
}

// daemonLog logs each job's end and each partition that fails for good.
type daemonLog struct{}

func (daemonLog) Observe(e actors.Event) {
	switch e.Kind {
	case actors.EvPartitionFailed:
		slog.Warn("partition failed", "partition", e.Partition.String(), "err", e.Err)
	case actors.EvJobDone:
		if e.Err != "" {
			slog.Warn("job failed", "job", e.Partition.Job, "proved", e.Count, "err", e.Err)
		} else {
			slog.Info("job done", "job", e.Partition.Job, "proved", e.Count)
		}
	}
}
