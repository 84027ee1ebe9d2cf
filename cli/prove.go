package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/emu"
	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/metrics"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/trace"
)

func proveFlags() []cli.Flag {
	return append(append(circuitFlags(),
		&cli.IntFlag{Name: "partitions", Value: 10, Usage: "partitions in the job (each one proof), 1 to 100000", Action: partitionsFlag("partitions")},
		&cli.IntFlag{Name: "jobs", Value: 1, Usage: "jobs submitted at once, each with its own seed (seed, then seed+1, ...) and proofs directory", Action: intBetween("jobs", 1, 1000)},
		&cli.StringFlag{Name: "backend", Value: "auto", Usage: "cpu, gpu, or auto (the GPU where the kernel library loads, else the CPU)"},
		&cli.StringFlag{Name: "gpu-lib", Usage: "path of libcuzkgpu.so (default: $CUZK_GPU_LIB, next to cuzk, then build/)"},
		bg2Flag(),
		copiesInOrderFlag(),
		solverFlag(),
		&cli.StringFlag{Name: "out", Usage: "directory for the proofs (default build/proofs/<job id>)"},
		&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of tables"},
		witnessFlag(),
		&cli.BoolFlag{Name: "plan", Usage: "print how one partition uses each device's memory (keys, chunk buffers, MSM scratch, NTT tables, the partition's buffer) and stop; fails when a partition does not fit"},
		&cli.BoolFlag{Name: "setup-if-missing", Usage: "make the keys when there are none (a local, insecure setup for demos)"},
		&cli.StringFlag{Name: "design", Value: "budget", Usage: "lock design: single, split-first, split-devsync, split or budget"},
		&cli.IntFlag{Name: "workers", Value: 3, Usage: "workers per device", Action: intAtLeast("workers", 1)},
		&cli.StringFlag{Name: "devices", Value: "0", Usage: "device indices, e.g. 0,1 (emulated on the CPU backend)"},
		&cli.StringFlag{Name: "vram-limit", Value: "16GiB", Usage: "device memory the designs may use (the emulated devices' capacity on the CPU backend)"},
		&cli.StringFlag{Name: "key-tier", Value: "auto", Usage: "where the GPU backend keeps the proving keys' points: auto (on the device when they fit beside two partitions, else streamed from the host, or from disk beyond --keys-host-limit), device, pinned, host or disk (streamed from the key set's points file, proving.points, written next to the keys on first use)"},
		&cli.StringFlag{Name: "msm-tables", Value: "auto", Usage: "GPU backend: precomputed MSM tables of resident keys (copies of the points times powers of two: one set of buckets for several windows): auto (when the MSMs are whole and the tables fit beside two partitions) or off",
			Action: func(_ *cli.Context, v string) error {
				if err := gpuprove.CheckMSMTables(v); err != nil {
					return fmt.Errorf("--msm-tables %s: %w", v, err)
				}
				return nil
			}},
		&cli.StringFlag{Name: "pinned-limit", Value: "64GiB", Usage: "pinned host memory (cudaHostAlloc) that streamed keys may take; key sets beyond it stream from ordinary memory (off: none pinned)"},
		&cli.StringFlag{Name: "keys-host-limit", Value: "auto", Usage: "host memory the GPU backend's key points may take (pinned or not); with --key-tier auto, a key set beyond it is loaded without its points and streamed from disk: bytes (32GiB), a share of the host's memory (25%), auto (half of what --host-mem-limit leaves of MemTotal) or off (no limit)"},
		&cli.StringFlag{Name: "seed", Usage: "job seed (hex); partitions' inputs derive from it (default: random)"},
		&cli.StringFlag{Name: "priority", Value: "NORMAL", Usage: "LOW, NORMAL, HIGH or CRITICAL"},
		&cli.IntFlag{Name: "max-attempts", Value: 3, Usage: "tries per partition before it is marked failed", Action: intAtLeast("max-attempts", 1)},
		&cli.DurationFlag{Name: "retry-backoff", Usage: "wait before a failed partition is tried again, doubling with each failure (e.g. 200ms; 0: at once)", Action: nonNegativeDuration[time.Duration]("retry-backoff")},
		&cli.StringFlag{Name: "metrics-addr", Usage: "serve Prometheus /metrics on this address while proving (e.g. :9400)"},
		&cli.StringFlag{Name: "trace", Usage: "write lease and stage events to this file as a Chrome trace (open in Perfetto)"},
		&cli.StringFlag{Name: "store", Usage: "checkpoint the job and every partition in this store directory (resume with cuzk resume)"},
	), hostMemFlags()...)
}

func proveCommand() *cli.Command {
	return &cli.Command{
		Name:  "prove",
		Usage: "prove a partitioned job through the actors under a lock design",
		Flags: proveFlags(),
		Action: func(c *cli.Context) error {
			return prove(c)
		},
	}
}

func prove(c *cli.Context) error {
	if ws := c.StringSlice("witness"); len(ws) > 0 {
		return proveWitnesses(c, ws)
	}
	ks, err := keySpecFromFlags(c)
	if err != nil {
		return err
	}
	nparts := c.Int("partitions")
	if nparts < 1 {
		return fmt.Errorf("--partitions must be at least 1, got %d", nparts)
	}
	njobs := c.Int("jobs")
	if njobs < 1 {
		return fmt.Errorf("--jobs must be at least 1, got %d", njobs)
	}
	prio, err := actors.ParsePriority(c.String("priority"))
	if err != nil {
		return fmt.Errorf("--priority: %w", err)
	}
	seed, err := jobSeed(c.String("seed"))
	if err != nil {
		return err
	}
	cfg, indices, vram, err := runSettings(c)
	if err != nil {
		return err
	}
	backend, devices, closeDevices, err := openBackend(c, indices, vram, cfg.Pool)
	if err != nil {
		return err
	}
	defer closeDevices()

	ks.loadOpt = keyLoadOptions(c, backend)
	k, err := loadKeys(ks, c.Bool("setup-if-missing"), c.App.ErrWriter)
	if err != nil {
		return err
	}
	if c.Bool("plan") {
		return printPlan(c.App.Writer, backend, devices, k)
	}
	if err := holdKeysOnce(c, backend, k); err != nil {
		return err
	}
	var subs []runner.Submission
	for i := range njobs {
		jseed := seed
		if i > 0 {
			jseed = seedPlus(seed, i)
		}
		jobID := "job-" + hex.EncodeToString(jseed[:min(6, len(jseed))])
		if njobs > 1 {
			jobID = fmt.Sprintf("job-%s-%d", hex.EncodeToString(seed[:min(6, len(seed))]), i)
		}
		out := c.String("out")
		switch {
		case out == "":
			out = filepath.Join("build", "proofs", jobID)
		case njobs > 1:
			out = filepath.Join(out, jobID)
		}
		subs = append(subs, runner.Submission{JobRequest: runner.JobRequest{ID: jobID, Keys: k, Seed: jseed, Partitions: nparts, Priority: prio},
			Target: ks.target, Out: out})
	}
	return runSubmissions(c, cfg, backend, devices, indices, subs)
}

// runSubmissions opens the store (--store, else one in memory) and proves subs
// on it.
func runSubmissions(c *cli.Context, cfg actors.Config, backend prover.Backend, devices []gpu.Device, indices []int, subs []runner.Submission) (err error) {
	// Without --store the jobs are recorded in memory: the same service
	// runs them, and nothing outlives the process.
	var st *store.Store
	dir := c.String("store")
	if dir != "" {
		st, err = store.Open(dir, nil)
	} else {
		st, err = store.OpenInMemory()
	}
	if err != nil {
		return err
	}
	defer st.Close()
	if dir != "" {
		for _, sub := range subs {
			fmt.Fprintf(c.App.ErrWriter, "job %s: checkpoints in %s (resume with: cuzk resume --store %s)\n", sub.ID, dir, dir)
		}
	}
	return runJobs(c, cfg, backend, devices, indices, st, subs)
}

// seedPlus is seed read as a big-endian number, plus i.
func seedPlus(seed []byte, i int) []byte {
	out := slices.Clone(seed)
	carry := i
	for j := len(out) - 1; j >= 0 && carry > 0; j-- {
		v := int(out[j]) + carry
		out[j], carry = byte(v), v>>8
	}
	return out
}

// runJobs proves jobs of the same keys at once (or what is left of them: a
// submission with Pending is resumed) on a service over st, each into its own
// directory (Submission.Out), and prints their reports. SIGINT or SIGTERM
// stops the run: the stages running are cancelled, and what is not proved
// stays in the store for resume.
func runJobs(c *cli.Context, cfg actors.Config, backend prover.Backend, devices []gpu.Device, indices []int,
	st *store.Store, reqs []runner.Submission) error {
	k := reqs[0].Keys
	todo := 0
	for _, req := range reqs {
		if req.Pending != nil {
			todo += len(req.Pending)
		} else {
			todo += req.Partitions
		}
	}
	// Pinned staging for every partition the run may hold at once (the
	// gate's room, at most the partitions to prove): pinning one while the
	// GPU works stalls its compute for as long (porep-sha at 2^22: 25
	// buffers pinned during a run took compute from 64 to 309 ms a
	// partition), so it is done before the first synthesis.
	hostBytes := prover.HostFootprint(k)
	pinned := stagingToPin(cfg, len(devices), hostBytes, todo)
	if err := preloadKeys(backend, k, solvesAtOnce(cfg, len(devices), hostBytes), pinned); err != nil {
		return err
	}
	if _, gpu := backend.(*gpuprove.Backend); gpu {
		if limit := capHeapToHost(); limit > 0 {
			slog.Info("Go heap limited to what the host has beside pinned memory", "limit_gib", fmt.Sprintf("%.1f", float64(limit)/(1<<30)))
		}
	}
	m := metrics.New()
	reportKeys(backend, m)
	obs := actors.Observers{m}
	if !c.Bool("json") {
		p := newProgress(c.App.ErrWriter, isTerminal(os.Stderr), todo)
		defer p.finish()
		obs = append(obs, p)
	}
	if addr := c.String("metrics-addr"); addr != "" {
		stop, err := serveMetrics(addr, m)
		if err != nil {
			return err
		}
		defer stop()
	}
	if path := c.String("trace"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		tw := trace.NewDeferred(f, trace.Interval)
		obs = append(obs, tw)
		defer func() {
			if err := tw.Close(); err != nil {
				fmt.Fprintf(c.App.ErrWriter, "trace %s: %v\n", path, err)
			}
			f.Close()
		}()
	}
	svc, err := runner.StartService(runner.ServiceOptions{Backend: backend, Devices: devices, Config: cfg, Store: st,
		Observer: obs, Seed: uint64(time.Now().UnixNano())})
	if err != nil {
		return err
	}
	defer svc.Close(context.Background())
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	reports, err := svc.Run(ctx, reqs, 30*time.Second)
	if err != nil {
		if ctx.Err() == nil {
			return err
		}
		proved := 0
		for _, r := range reports {
			proved += r.Proved
		}
		fmt.Fprintf(c.App.ErrWriter, "interrupted: %d partitions proved", proved)
		if dir := c.String("store"); dir != "" {
			fmt.Fprintf(c.App.ErrWriter, "; the rest is recorded in %s: cuzk resume --store %s finishes it\n", dir, dir)
		} else {
			fmt.Fprintln(c.App.ErrWriter, "; without --store nothing else is kept")
		}
		return err
	}
	wall := time.Since(start)
	failed := 0
	var docs []proveJSON
	for i, rep := range reports {
		req := reqs[i]
		failed += rep.Failed
		if c.Bool("json") {
			docs = append(docs, proveJSON{
				JobStatus: rep, Circuit: k.Circuit, Constraints: k.Constraints(), KeyHash: k.Hash,
				Backend: backend.Name(), BG2: bg2Where(backend), Solver: k.SolverName(), Design: cfg.Design, Workers: cfg.WorkersPerDevice, Devices: indices,
				Out: req.Out, TotalMS: float64(wall.Microseconds()) / 1000,
			})
			continue
		}
		fmt.Fprintf(c.App.Writer, "job %s: %s, %d constraints, %d partitions, backend %s, %s's solver, design %s, %d workers × %d devices\n",
			req.ID, k.Circuit, k.Constraints(), req.Partitions, backend.Name(), k.SolverName(), cfg.Design, cfg.WorkersPerDevice, len(indices))
		printStageTable(c.App.Writer, rep)
		wallJob := time.Duration(rep.WallMS * float64(time.Millisecond))
		fmt.Fprintf(c.App.Writer, "%d/%d proved and verified in %s; proofs in %s\n\n", rep.Proved, req.Partitions, wallJob.Round(time.Millisecond), req.Out)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		var doc any = docs[0]
		if len(docs) > 1 {
			doc = struct {
				Jobs    []proveJSON `json:"jobs"`
				TotalMS float64     `json:"total_wall_ms"`
			}{docs, float64(wall.Microseconds()) / 1000}
		}
		if err := enc.Encode(doc); err != nil {
			return err
		}
	} else if len(reports) > 1 {
		fmt.Fprintf(c.App.Writer, "%d jobs in %s\n\n", len(reports), wall.Round(time.Millisecond))
	}
	// The summary goes beside the table; with --json, to stderr, so that
	// stdout stays one JSON object.
	summaryTo := c.App.Writer
	if c.Bool("json") {
		summaryTo = c.App.ErrWriter
	}
	reportKeys(backend, m)
	fmt.Fprint(summaryTo, m.Summary().String())
	if failed > 0 {
		return fmt.Errorf("%d of %d partitions failed", failed, todo)
	}
	return nil
}

type proveJSON struct {
	runner.JobStatus
	Circuit     string  `json:"circuit"`
	Constraints int     `json:"constraints"`
	KeyHash     string  `json:"key_hash"`
	Backend     string  `json:"backend"`
	BG2         string  `json:"b_g2"`
	Solver      string  `json:"solver"`
	Design      string  `json:"design"`
	Workers     int     `json:"workers_per_device"`
	Devices     []int   `json:"devices"`
	Out         string  `json:"out"`
	TotalMS     float64 `json:"total_wall_ms"`
}

// runSettings reads the flags that say how to run, shared by prove, resume and
// the daemon: the actors' config (with the host-memory gate), the device
// indices and the VRAM limit.
func runSettings(c *cli.Context) (cfg actors.Config, indices []int, vram int64, err error) {
	cfg = actors.Config{Design: c.String("design"), WorkersPerDevice: c.Int("workers"), MaxAttempts: c.Int("max-attempts"), RetryBackoff: c.Duration("retry-backoff")}.WithDefaults()
	if err = cfg.Validate(); err != nil {
		return
	}
	if indices, err = parseIndexList(c.String("devices")); err != nil {
		err = fmt.Errorf("--devices: %w", err)
		return
	}
	if cfg, err = hostSettings(c, cfg, len(indices)); err != nil {
		return
	}
	if vram, err = parseBytes(c.String("vram-limit")); err != nil {
		err = fmt.Errorf("--vram-limit: %w", err)
	}
	return
}

func jobSeed(s string) ([]byte, error) {
	if s == "" {
		b := make([]byte, 16)
		_, err := rand.Read(b)
		return b, err
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil, fmt.Errorf("--seed %q: want hex digits", s)
	}
	return b, nil
}

// openBackend picks the prover backend and the devices the designs run on.
func openBackend(c *cli.Context, indices []int, vram int64, pool gpu.PoolPolicy) (prover.Backend, []gpu.Device, func(), error) {
	choice := c.String("backend")
	switch choice {
	case "cpu", "auto", "gpu":
	default:
		return nil, nil, nil, fmt.Errorf("--backend %q: want cpu, gpu or auto", choice)
	}
	bg2, err := bg2Choice(c)
	if err != nil {
		return nil, nil, nil, err
	}
	bg2OnGPU := bg2 == "gpu" || bg2 == "gpu-serial" // asked for, not auto
	if choice != "cpu" {
		b, devs, closeFn, err := openGPU(c, indices, vram, pool, bg2)
		if err == nil {
			return b, devs, closeFn, nil
		}
		if choice == "gpu" {
			return nil, nil, nil, err
		}
		if bg2OnGPU {
			return nil, nil, nil, fmt.Errorf("--b-g2 %s: %w", bg2, err)
		}
		fmt.Fprintf(c.App.ErrWriter, "notice: no GPU backend (%v); proving on the CPU\n", err)
	} else if bg2OnGPU {
		return nil, nil, nil, fmt.Errorf("--b-g2 %s needs the GPU backend, not --backend cpu", bg2)
	}
	var devs []gpu.Device
	var emus []*emu.Device
	for _, i := range indices {
		d, err := emu.New(emu.Options{Index: i, Capacity: vram, Pool: pool})
		if err != nil {
			return nil, nil, nil, err
		}
		devs, emus = append(devs, d), append(emus, d)
	}
	return prover.CPU{}, devs, func() {
		for _, d := range emus {
			d.Close()
		}
	}, nil
}

func printStageTable(w io.Writer, rep runner.JobStatus) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "partition\tdev\tworker\ttries\t")
	for _, s := range prover.StageNames {
		fmt.Fprintf(tw, "%s ms\t", s)
	}
	fmt.Fprintln(tw, "verified\t")
	for _, p := range rep.Partitions {
		dev, worker := "-", "-"
		if p.Ran != nil {
			dev, worker = fmt.Sprint(p.Ran.Device), fmt.Sprint(p.Ran.Worker)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t", p.Index, dev, worker, p.Attempts)
		for _, s := range prover.StageNames {
			fmt.Fprintf(tw, "%.1f\t", p.StagesMS[s])
		}
		v := "yes"
		if p.State != "proved" {
			v = "NO: " + p.LastError
		}
		fmt.Fprintf(tw, "%s\t\n", v)
	}
	tw.Flush()
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// serveMetrics serves /metrics on addr until stop is called.
func serveMetrics(addr string, m *metrics.Metrics) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	slog.Info("serving metrics", "addr", ln.Addr().String())
	return func() { srv.Close() }, nil
}

// holdKeysOnce lets a prove process, whose keys live as long as it does,
// hold each part of them once: the R1CS's instructions are released once
// cuzk's solver has its program (where cuzk's solver handles the circuit),
// and points the GPU backend streams from pinned memory are moved there
// instead of copied (docs/keygen.md). At 2^26 that is 9 GiB and 22 GiB.
// The GPU backend makes its own FFT tables on the device, so the domain's on
// the host go too (8 GiB at 2^26).
func holdKeysOnce(c *cli.Context, backend prover.Backend, k *prover.Keys) error {
	if k.SolverName() == "cuzk" {
		if err := k.ReleaseSystem(); err != nil {
			return err
		}
	}
	gb, ok := backend.(*gpuprove.Backend)
	if !ok {
		return nil
	}
	k.DropDomainTables()
	start := time.Now()
	moved, err := gb.PinKeysIfStreamed(k)
	if err != nil {
		return fmt.Errorf("move the keys' points into pinned memory: %w", err)
	}
	if moved {
		fmt.Fprintf(c.App.ErrWriter, "notice: the keys' %s points moved into pinned memory in %.1f s (streamed from there, held once)\n", movedSets(k), time.Since(start).Seconds())
	}
	return nil
}

// movedSets names the point sets prover.Keys.PinPoints moved into pinned
// memory.
func movedSets(k *prover.Keys) string {
	if k.ZInDeviceOrder() {
		return "A, B, K, G2 B and Z (in the device's order)"
	}
	return "A, B, K and G2 B"
}
