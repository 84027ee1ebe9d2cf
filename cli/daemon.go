package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
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
	"github.com/cuzk/cuzk/store"
)

func daemonFlags() []cli.Flag {
	keep := map[string]bool{"keys": true, "backend": true, "gpu-lib": true, "b-g2": true, "design": true, "workers": true,
		"devices": true, "vram-limit": true, "max-attempts": true, "retry-backoff": true, "metrics-addr": true}
	var out []cli.Flag
	for _, f := range proveFlags() {
		if keep[f.Names()[0]] {
			out = append(out, f)
		}
	}
	return append(out,
		&cli.StringFlag{Name: "store", Required: true, Usage: "the store directory: unfinished jobs in it are resumed at start, new jobs recorded in it"},
		&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9820", Usage: "address of the HTTP API (it has no authentication: keep it on loopback)"},
		&cli.StringFlag{Name: "out", Value: filepath.Join("build", "proofs"), Usage: "directory under which each new job's proofs go, in <out>/<job id>"},
		&cli.DurationFlag{Name: "drain-timeout", Value: 30 * time.Second, Usage: "on SIGINT/SIGTERM, how long to let running stages finish"},
		&cli.DurationFlag{Name: "evict-idle", Value: 10 * time.Minute, Usage: "free a key set when no job has used it this long: its device copy (GPU backend) and, once no running job holds it, its host memory (0: keep keys)"},
	)
}

func daemonCommand() *cli.Command {
	return &cli.Command{
		Name:  "daemon",
		Usage: "resume a store's unfinished jobs, then prove jobs submitted over a JSON HTTP API",
		Flags: daemonFlags(),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("daemon: unexpected arguments %q", c.Args().Slice())
			}
			return daemon(c)
		},
	}
}

func daemon(c *cli.Context) error {
	cfg, indices, vram, err := runSettings(c)
	if err != nil {
		return err
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
	svc, err := runner.StartService(runner.ServiceOptions{Backend: backend, Devices: devices, Config: cfg, Store: st,
		Observer: actors.Observers{m, daemonLog{}}, Seed: uint64(time.Now().UnixNano()),
		Preload: func(k *prover.Keys) error {
			err := preloadKeys(backend, k, cfg.WorkersPerDevice*len(devices))
			reportKeys(backend, m)
			return err
		}})
	if err != nil {
		return err
	}
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
			if n := svc.ForgetIdleKeys(idle); n > 0 {
				slog.Info("forgot idle key sets", "count", n)
			}
		})()
	}
	// Until the server runs, a failure must still stop the actors.
	served := false
	defer func() {
		if !served {
			svc.Close(context.Background())
		}
	}()

	resumed, err := svc.Resume()
	for _, sub := range resumed {
		slog.Info("resumed job", "job", sub.ID, "left", len(sub.Pending), "partitions", sub.Partitions)
	}
	if err != nil {
		// The jobs that could not be resumed stay in the store as they
		// are; the daemon proves the others and serves.
		slog.Error("some unfinished jobs were not resumed", "err", err)
	}

	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	if addr := c.String("metrics-addr"); addr != "" {
		stop, err := serveMetrics(addr, m)
		if err != nil {
			ln.Close()
			return err
		}
		defer stop()
	}
	api := &daemonAPI{svc: svc, keys: c.String("keys"), out: c.String("out"), log: c.App.ErrWriter}
	srv := &http.Server{Handler: api.routes(m.Handler()), ReadHeaderTimeout: 10 * time.Second}
	ctx, stopSignals := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	served = true
	slog.Info("serving", "addr", "http://"+ln.Addr().String(), "store", st.Dir(), "backend", backend.Name(), "design", cfg.Design)

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		svc.Close(context.Background())
		return fmt.Errorf("serve: %w", err)
	}
	// A second signal kills the process at once.
	stopSignals()
	running := svc.InFlight()
	slog.Info("stopping: no new jobs; running stages may finish, the rest stays in the store for the next start",
		"running_jobs", len(running), "drain_timeout", c.Duration("drain-timeout"))
	drainCtx, cancel := context.WithTimeout(context.Background(), c.Duration("drain-timeout"))
	defer cancel()
	// Close first: it answers waiting clients (503) so that Shutdown does
	// not wait for them.
	if err := svc.Close(drainCtx); err != nil {
		slog.Warn("stopped without waiting for every stage", "err", err)
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
	return nil
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

// daemonAPI is the daemon's HTTP API over a Service.
type daemonAPI struct {
	svc  *runner.Service
	keys string    // the key sets' root directory
	out  string    // proofs of new jobs go to out/<job id>
	log  io.Writer // setup progress
}

// maxRequestBytes bounds a request body: a submission is a few fields.
const maxRequestBytes = 1 << 16

func (a *daemonAPI) routes(metricsHandler http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", a.submit)
	mux.HandleFunc("GET /v1/jobs", a.list)
	mux.HandleFunc("GET /v1/jobs/{id}", a.status)
	mux.HandleFunc("GET /v1/jobs/{id}/wait", a.wait)
	mux.HandleFunc("POST /v1/jobs/{id}/retry", a.retry)
	mux.Handle("GET /metrics", metricsHandler)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { unmatched(mux, w, r) })
	return mux
}

// unmatched answers what no route takes, in JSON like every other error: 405
// with Allow when the path has routes for other methods, else 404. (The
// catch-all route keeps the mux from answering in plain text.)
func unmatched(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, fmt.Errorf("%s %s: method not allowed (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	writeError(w, http.StatusNotFound, fmt.Errorf("%s %s: no such endpoint (the API is POST /v1/jobs, GET /v1/jobs, GET /v1/jobs/{id}, GET /v1/jobs/{id}/wait, GET /metrics)", r.Method, r.URL.Path))
}

// submitRequest is the body of POST /v1/jobs.
type submitRequest struct {
	Circuit string `json:"circuit"`
	// Constraints is the target per partition: a number, or a string as
	// --constraints takes it ("16K", "2^20").
	Constraints    json.RawMessage `json:"constraints"`
	Partitions     int             `json:"partitions"`
	Priority       string          `json:"priority"` // default NORMAL
	Seed           string          `json:"seed"`     // hex; default random
	SetupIfMissing bool            `json:"setup_if_missing"`
}

// submitResponse is the answer to POST /v1/jobs.
type submitResponse struct {
	ID string `json:"job_id"`
}

func (a *daemonAPI) submit(w http.ResponseWriter, r *http.Request) {
	var req submitRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request body over %d bytes", maxRequestBytes))
			return
		}
		writeError(w, http.StatusBadRequest, fmt.Errorf("request body: %w", err))
		return
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, errors.New("request body: more than one JSON value"))
		return
	}
	ks, sub, err := a.parseSubmission(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	load := func(dir, circuit string, l circuits.Layout) (*prover.Keys, error) {
		k, err := prover.Load(dir, circuit, l)
		if errors.Is(err, prover.ErrNoKeys) && req.SetupIfMissing {
			return runSetup(ks, a.log)
		}
		return k, err
	}
	sub.Keys, err = a.svc.Keys(ks.dir, ks.circuit.Name(), ks.layout, load)
	if errors.Is(err, prover.ErrNoKeys) {
		writeError(w, http.StatusUnprocessableEntity, fmt.Errorf("no keys for %s at %d constraints in %s: make them with cuzk setup --circuit %s --constraints %d --keys %s, or submit with \"setup_if_missing\": true",
			ks.circuit.Name(), ks.target, ks.dir, ks.circuit.Name(), ks.target, a.keys))
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("keys: %w", err))
		return
	}
	if err := a.svc.Submit(sub); err != nil {
		writeServiceError(w, err)
		return
	}
	slog.Info("job submitted", "job", sub.ID, "circuit", sub.Keys.Circuit, "constraints", sub.Keys.Constraints(),
		"partitions", sub.Partitions, "priority", sub.Priority, "out", sub.Out)
	w.Header().Set("Location", "/v1/jobs/"+sub.ID)
	writeJSON(w, http.StatusAccepted, submitResponse{ID: sub.ID})
}

// parseSubmission checks a request and returns the keys it names and the
// submission without its keys.
func (a *daemonAPI) parseSubmission(req submitRequest) (*keySpec, runner.Submission, error) {
	var sub runner.Submission
	if req.Circuit == "" {
		return nil, sub, errors.New(`"circuit" is required (mimc, porep or sha)`)
	}
	circ, err := circuits.Lookup(req.Circuit)
	if err != nil {
		return nil, sub, fmt.Errorf(`"circuit": %w`, err)
	}
	target, err := parseConstraints(req.Constraints)
	if err != nil {
		return nil, sub, err
	}
	layout, err := circ.Layout(target)
	if err != nil {
		return nil, sub, fmt.Errorf(`"constraints": %w`, err)
	}
	if req.Partitions < 1 || req.Partitions > store.MaxPartitions {
		return nil, sub, fmt.Errorf(`"partitions" must be 1 to %d, got %d`, store.MaxPartitions, req.Partitions)
	}
	prio := actors.PriorityNormal
	if req.Priority != "" {
		if prio, err = actors.ParsePriority(req.Priority); err != nil {
			return nil, sub, fmt.Errorf(`"priority": %w`, err)
		}
	}
	var seed []byte
	if req.Seed == "" {
		seed = make([]byte, 16)
		rand.Read(seed)
	} else if seed, err = hex.DecodeString(req.Seed); err != nil || len(seed) == 0 {
		return nil, sub, fmt.Errorf(`"seed" %q: want hex digits`, req.Seed)
	}
	// The id is random, not from the seed: two jobs with one seed are
	// two jobs.
	idb := make([]byte, 6)
	rand.Read(idb)
	id := "job-" + hex.EncodeToString(idb)
	ks := &keySpec{circuit: circ, target: target, layout: layout, dir: prover.KeyDir(a.keys, circ.Name(), target)}
	sub = runner.Submission{JobRequest: runner.JobRequest{ID: id, Seed: seed, Partitions: req.Partitions, Priority: prio},
		Target: target, Out: filepath.Join(a.out, id)}
	return ks, sub, nil
}

func parseConstraints(raw json.RawMessage) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, errors.New(`"constraints" is required (a number, or a string such as "16K" or "2^20")`)
	}
	var s string
	if raw[0] != '"' {
		s = string(raw)
	} else if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf(`"constraints": %w`, err)
	}
	n, err := parseCount(s)
	if err != nil {
		return 0, fmt.Errorf(`"constraints": %w`, err)
	}
	return n, nil
}

func (a *daemonAPI) list(w http.ResponseWriter, r *http.Request) {
	jobs, err := a.svc.Jobs()
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, jobs)
}

func (a *daemonAPI) status(w http.ResponseWriter, r *http.Request) {
	js, err := a.svc.Status(r.PathValue("id"))
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, js)
}

func (a *daemonAPI) wait(w http.ResponseWriter, r *http.Request) {
	js, err := a.svc.Wait(r.Context(), r.PathValue("id"))
	if r.Context().Err() != nil {
		return // the client is gone
	}
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, js)
}

// retry proves again a finished job's failed partitions.
func (a *daemonAPI) retry(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	n, err := a.svc.Retry(id)
	if err != nil {
		writeServiceError(w, err)
		return
	}
	slog.Info("retrying failed partitions", "job", id, "partitions", n)
	js, err := a.svc.Status(id)
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, js)
}

// writeServiceError answers with the status that err's kind calls for.
func writeServiceError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, store.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, store.ErrInvalid), errors.Is(err, runner.ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, runner.ErrExists), errors.Is(err, runner.ErrNotRunning), errors.Is(err, runner.ErrBusy),
		errors.Is(err, runner.ErrNothingToRetry):
		code = http.StatusConflict
	case errors.Is(err, runner.ErrClosed):
		code = http.StatusServiceUnavailable
	}
	writeError(w, code, err)
}

type errorResponse struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, errorResponse{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		slog.Debug("write response", "err", err)
	}
}
