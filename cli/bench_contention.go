package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	rtrace "runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/emu"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/trace"
)

func benchContentionCommand() *cli.Command {
	return &cli.Command{
		Name:  "contention",
		Usage: "drive one device through each lock design with synthetic partitions, to calibrate the simulator",
		Description: "The production actors (scheduler, device, locks, workers) run each design over one device with\n" +
			"synthetic partitions: a CPU stage before the device part (--before), a staged buffer of --staged\n" +
			"bytes of which --copy are copied from the host, a full-occupancy kernel of --kernel (taking\n" +
			"--scratch bytes from the stream-ordered pool while it runs), and a CPU stage after (--after).\n" +
			"It prints items/s, GPU busy, lock waits and OOMs by kind per design and worker count, and with\n" +
			"--trace-dir writes one trace per run, which `cuzk sim calibrate` reads (use one worker).\n" +
			"--backend emu runs on the emulated device (no GPU needed); gpu on the real one; sim predicts the\n" +
			"same table on the simulator from --profile (a profile `cuzk sim calibrate` fitted to a one-worker\n" +
			"run of this bench): its stage costs stand for --kernel, --before and --after, the flags give the\n" +
			"partition's memory, the limit and the items.",
		Flags: append(contentionPartitionFlags(),
			&cli.StringFlag{Name: "profile", Usage: "sim: the calibrated profile (`FILE` or embedded name)"},
			&cli.IntFlag{Name: "seeds", Value: 1, Usage: "sim: predict each row as the mean of the runs of seeds 1..N (counts: their median)", Action: intAtLeast("seeds", 1)},
			&cli.IntFlag{Name: "runs", Value: 1, Usage: "emu, gpu: run each row N times and print their mean (counts: their median), each row's range on stderr; a row whose designs race (split-devsync at 3-4 workers) needs about ten for its mean", Action: intAtLeast("runs", 1)},
			&cli.StringFlag{Name: "designs", Value: strings.Join(actors.Designs, ","), Usage: "lock designs to run, comma separated"},
			&cli.StringFlag{Name: "workers", Value: "1,2,3", Usage: "worker counts to run, comma separated"},
			&cli.StringFlag{Name: "trace-dir", Usage: "write a trace per run into `DIR` (trace-<design>-w<workers>.json; run i of --runs, seed i of --seeds: -r<i>, -s<i> before .json)"},
		),
		Subcommands: []*cli.Command{contentionCalibrateCommand(contentionPartitionFlags())},
		Action:      runBenchContention,
	}
}

// contentionPartitionFlags are the flags of a bench's device, its synthetic
// partition and its costs, which bench contention and its calibrate share
// (made anew for each command: a flag keeps what it was set to).
func contentionPartitionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "backend", Value: "emu", Usage: "emu: the emulated device; gpu: the real one (the kernel library must load); sim: the simulator's prediction (needs --profile)"},
		&cli.IntFlag{Name: "device", Value: 0, Usage: "gpu: the CUDA device index"},
		&cli.IntFlag{Name: "items", Value: 30, Usage: "synthetic partitions per run", Action: intAtLeast("items", 1)},
		&cli.DurationFlag{Name: "kernel", Value: 200 * time.Millisecond, Usage: "how long one partition's kernel runs alone"},
		&cli.DurationFlag{Name: "before", Value: 100 * time.Millisecond, Usage: "the CPU stage before the device part (the synthesize stage)"},
		&cli.DurationFlag{Name: "after", Value: 50 * time.Millisecond, Usage: "the CPU stage after it (the finalize stage)"},
		&cli.StringFlag{Name: "staged", Value: "4GiB", Usage: "device memory one partition holds from staging to the end of its kernel"},
		&cli.StringFlag{Name: "copy", Value: "1GiB", Usage: "of that, the bytes copied from the host (at most --staged)"},
		&cli.StringFlag{Name: "scratch", Value: "0", Usage: "pool memory the kernel takes while it runs (declared with the job: the budget design keeps room for one kernel's)"},
		&cli.StringFlag{Name: "headroom", Value: "0", Usage: "memory left out of what the designs' ledger sees (for what allocates behind its back)"},
		&cli.StringFlag{Name: "vram-limit", Value: "16GiB", Usage: "the device memory the run may use (the emulated device's capacity; a ballast on the GPU)"},
		&cli.Float64Flag{Name: "copy-gbps", Value: 55, Usage: "emu: host→device bandwidth, GB/s (the H200's pinned 55)", Action: positiveFloat("copy-gbps")},
		&cli.DurationFlag{Name: "free-copy-work", Usage: "emu: work a cudaFree leaves on the copy engine per GiB freed, which the next copy waits behind (the H200's: 2.45ms)"},
		&cli.DurationFlag{Name: "trim-copy-work", Usage: "emu: work a pool trim leaves on the copy engine per GiB it released, which the next copy waits behind, from the trim's start (the H200's: 2.59ms)"},
		&cli.IntFlag{Name: "max-attempts", Value: 3, Usage: "tries per partition before it fails", Action: intAtLeast("max-attempts", 1)},
		&cli.StringFlag{Name: "constraints", Value: "1M", Usage: "the partition size the runs are said to have (for sim calibrate's per-constraint costs)"},
		&cli.BoolFlag{Name: "lock-hops", Usage: "send every lease request through its lock's actor, a free mutex's too, as the runtime did before free mutexes were taken in place (to measure the race that hop made)"},
	}
}

// contentionSpec is one bench's synthetic partition and device.
type contentionSpec struct {
	kernel, before, after time.Duration
	staged, copy, scratch int64
	headroom, limit       int64
	items, maxAttempts    int
	size                  int
	lockHops              bool // actors.Config.LockHops
}

// contentionRow is what one design × workers run measured.
type contentionRow struct {
	Design       string
	Workers      int
	Wall         time.Duration
	Proved       int
	Failed       int
	ItemsPerS    float64
	GPUBusyPct   float64
	OOMPreStage  int
	OOMFallback  int
	Fallbacks    int
	Retries      int
	LockWaits    map[string][2]time.Duration // p50, p99
	LockOrder    []string
	DeviceWaited int // device ops that reported waiting for another stream
	// Errors counts why attempts failed (retried or failed for good).
	Errors map[string]int
	// Draws is how many runs the row is the mean of (--seeds on the
	// simulator, --runs on a device), DrawNoun what they are ("seeds" or
	// "runs"), DrawRange their lowest and highest items/s, DrawSD the
	// standard deviation of their items/s, and DrawsOOM how many of them
	// met an OOM.
	Draws     int
	DrawNoun  string
	DrawRange [2]float64
	DrawSD    float64
	DrawsOOM  int
}

func runBenchContention(c *cli.Context) error {
	spec, err := contentionSpecFrom(c)
	if err != nil {
		return err
	}
	designs := strings.Split(c.String("designs"), ",")
	for _, d := range designs {
		if _, err := actors.LookupDesign(d); err != nil {
			return fmt.Errorf("--designs: %w", err)
		}
	}
	var workers []int
	for _, s := range strings.Split(c.String("workers"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("--workers: %q is not a worker count", s)
		}
		workers = append(workers, n)
	}
	traceDir := c.String("trace-dir")
	if traceDir != "" {
		if err := os.MkdirAll(traceDir, 0o755); err != nil {
			return fmt.Errorf("--trace-dir: %w", err)
		}
	}
	var simulated *contentionSim
	open := contentionOpener(c, spec)
	switch {
	case c.String("backend") == "sim":
		if simulated, err = newContentionSim(c.String("profile"), spec, c.Int("seeds")); err != nil {
			return err
		}
	case open == nil:
		return fmt.Errorf("bench contention --backend %s: want emu, gpu or sim", c.String("backend"))
	}
	w := c.App.Writer
	costs := fmt.Sprintf("kernel %v, before %v, after %v", spec.kernel, spec.before, spec.after)
	if simulated != nil {
		costs = "stage costs from profile " + simulated.profile.Name
	}
	fmt.Fprintf(w, "backend %s, %s limit, %s, staged %s (copied %s), scratch %s, headroom %s, %d items a run\n",
		c.String("backend"), gpu.FormatBytes(spec.limit), costs, gpu.FormatBytes(spec.staged),
		gpu.FormatBytes(spec.copy), gpu.FormatBytes(spec.scratch), gpu.FormatBytes(spec.headroom), spec.items)
	var rows []contentionRow
	for _, d := range designs {
		for _, n := range workers {
			tracePath := ""
			if traceDir != "" {
				tracePath = filepath.Join(traceDir, contentionTraceName(d, n))
			}
			var row contentionRow
			if simulated != nil {
				row, err = simulated.run(d, n, tracePath)
			} else {
				row, err = runContentionDraws(c.Context, open, spec, d, n, c.Int("runs"), tracePath)
			}
			if err != nil {
				return fmt.Errorf("%s × %d workers: %w", d, n, err)
			}
			rows = append(rows, row)
			printContentionErrors(c.App.ErrWriter, row)
		}
	}
	printContention(w, rows)
	return nil
}

func contentionSpecFrom(c *cli.Context) (contentionSpec, error) {
	s := contentionSpec{kernel: c.Duration("kernel"), before: c.Duration("before"), after: c.Duration("after"),
		items: c.Int("items"), maxAttempts: c.Int("max-attempts"), lockHops: c.Bool("lock-hops")}
	if err := s.readBytes(c); err != nil {
		return s, err
	}
	n, err := parseCount(c.String("constraints"))
	if err != nil {
		return s, fmt.Errorf("--constraints: %w", err)
	}
	s.size = n
	return s, s.validate()
}

// contentionOpener opens spec's device on the backend c names, emu (with c's
// --copy-gbps, --free-copy-work and --trim-copy-work, where c has them) or
// gpu (--device); nil for any other backend.
func contentionOpener(c *cli.Context, spec contentionSpec) func() (contentionDevice, error) {
	switch c.String("backend") {
	case "emu":
		gbps, freeWork, trimWork := c.Float64("copy-gbps"), c.Duration("free-copy-work"), c.Duration("trim-copy-work")
		return func() (contentionDevice, error) { return openEmuContention(spec, gbps, freeWork, trimWork) }
	case "gpu":
		idx := c.Int("device")
		return func() (contentionDevice, error) { return openGPUContention(spec, idx) }
	}
	return nil
}

// readBytes sets the spec's amounts of memory from c's flags of them:
// --staged, --copy, --scratch, --headroom and --vram-limit, where c has them
// ("0" or absent: none, a valid amount here).
func (s *contentionSpec) readBytes(c *cli.Context) error {
	for _, f := range []struct {
		flag string
		to   *int64
	}{{"staged", &s.staged}, {"copy", &s.copy}, {"scratch", &s.scratch}, {"headroom", &s.headroom}, {"vram-limit", &s.limit}} {
		if v := strings.TrimSpace(c.String(f.flag)); v == "0" || v == "" {
			continue
		}
		v, err := parseBytes(c.String(f.flag))
		if err != nil {
			return fmt.Errorf("--%s: %w", f.flag, err)
		}
		*f.to = v
	}
	return nil
}

func (s contentionSpec) validate() error {
	switch {
	case s.kernel < 0 || s.before < 0 || s.after < 0:
		return errors.New("--kernel, --before and --after must not be negative")
	case s.staged <= 0:
		return fmt.Errorf("--staged must be positive, got %d", s.staged)
	case s.copy < 0 || s.copy > s.staged:
		return fmt.Errorf("--copy %s: must be between 0 and --staged (%s)", gpu.FormatBytes(s.copy), gpu.FormatBytes(s.staged))
	case s.scratch < 0 || s.headroom < 0:
		return errors.New("--scratch and --headroom must not be negative")
	case s.limit <= 0:
		return fmt.Errorf("--vram-limit must be positive, got %d", s.limit)
	case s.headroom >= s.limit:
		return fmt.Errorf("--headroom %s leaves nothing of the %s limit to the designs", gpu.FormatBytes(s.headroom), gpu.FormatBytes(s.limit))
	}
	return nil
}

// contentionDevice is an opened device and the synthetic work that runs on
// it.
type contentionDevice interface {
	Device() gpu.Device
	// Kernel is the partition's synthetic device work: a copy of the
	// spec's bytes (Stage) and a kernel of the spec's length (Run).
	Kernel(p actors.PartitionID) *gpu.Kernel
	Close() error
}

// emuContention is the emulated device: copies take their bandwidth, kernels
// hold the one compute engine for their length, scratch comes from the pool.
type emuContention struct {
	d         *emu.Device
	spec      contentionSpec
	hostCalls // the kernels' scratch allocations, as the GPU backend's
}

func openEmuContention(spec contentionSpec, gbps float64, freeWork, trimWork time.Duration) (contentionDevice, error) {
	e := &emuContention{spec: spec}
	d, err := emu.New(emu.Options{Name: "emulated", Capacity: spec.limit, CopyBandwidth: gbps * 1e9,
		PoolGrowCost: 10 * time.Millisecond, PoolRegrowCost: time.Millisecond, FreeCopyWorkPerGiB: freeWork,
		TrimCopyWorkPerGiB: trimWork, Scratch: e.scratchCall})
	if err != nil {
		return nil, err
	}
	e.d = d
	return e, nil
}

// scratchCall reports a kernel's scratch allocation as the card's host code
// does (scratch_malloc), when the run is traced.
func (e *emuContention) scratchCall(partition string, took time.Duration, bytes int64) {
	e.reportCall("scratch_malloc", partition, e.clock()-took, bytes, nil)
}

func (e *emuContention) Device() gpu.Device { return headroomDevice{e.d, e.spec.headroom} }

func (e *emuContention) Kernel(p actors.PartitionID) *gpu.Kernel {
	k := e.spec.kernel
	return &gpu.Kernel{Partition: p.String(), Scratch: e.spec.scratch, Run: func(ctx context.Context) error {
		return sleepCtx(ctx, k)
	}}
}

func (e *emuContention) Close() error { e.d.Close(); return nil }

// headroomDevice reports less memory than the device has: what the designs'
// ledger must leave to the kernel's scratch.
type headroomDevice struct {
	gpu.Device
	headroom int64
}

func (h headroomDevice) Info() gpu.Info {
	i := h.Device.Info()
	i.Total -= h.headroom
	return i
}

// contentionExec is the synthetic executor: the stage before the device part
// is the synthesize stage, the one after it the finalize stage; prep and
// b_g2 take no time.
type contentionExec struct {
	dev  contentionDevice
	spec contentionSpec
}

func (x *contentionExec) RunStage(ctx context.Context, w actors.StageWork) error {
	switch w.Stage {
	case actors.StageSynthesize:
		return sleepCtx(ctx, x.spec.before)
	case actors.StageFinalize:
		return sleepCtx(ctx, x.spec.after)
	}
	return ctx.Err()
}

func (x *contentionExec) Kernel(p actors.PartitionID, device int) *gpu.Kernel { return x.dev.Kernel(p) }

func (x *contentionExec) Release(actors.PartitionID) {}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runContentionDraws runs one design with n workers runs times on the
// device, one after another, and gives their mean (meanRow). The first
// run's trace goes to tracePath, run i's beside it with "-r<i>" before the
// extension, so that each run's race can be read (cuzk sim calibrate
// --race-trace).
func runContentionDraws(ctx context.Context, open func() (contentionDevice, error), spec contentionSpec, design string, n, runs int, tracePath string) (contentionRow, error) {
	return meanOfDraws(runs, "runs", func(i int) (contentionRow, error) {
		row, err := runContention(ctx, open, spec, design, n, drawTracePath(tracePath, "r", i))
		if err != nil && runs > 1 {
			err = fmt.Errorf("run %d: %w", i, err)
		}
		return row, err
	})
}

// contentionTraceName is the file a run of design with n workers writes its
// trace to (its first draw's; drawTracePath gives the others').
func contentionTraceName(design string, n int) string {
	return fmt.Sprintf("trace-%s-w%d.json", design, n)
}

// drawTracePath is where draw i of a configuration writes its trace: the
// first draw at path, draw i beside it with "-<mark><i>" before the extension
// (mark "r" for a device's runs, "s" for the simulator's seeds); "" stays "".
func drawTracePath(path, mark string, i int) string {
	if i <= 1 || path == "" {
		return path
	}
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-%s%d%s", strings.TrimSuffix(path, ext), mark, i, ext)
}

// runContention runs one design with n workers over a freshly opened device
// until every item is proved or failed.
func runContention(ctx context.Context, open func() (contentionDevice, error), spec contentionSpec, design string, n int, tracePath string) (row contentionRow, err error) {
	dev, err := open()
	if err != nil {
		return row, err
	}
	defer func() { err = errors.Join(err, dev.Close()) }()
	col := newContentionCollector()
	obs, tw, closeTrace, err := withTrace(actors.Observers{goTraceMarks{ctx}, col}, tracePath)
	if err != nil {
		return row, err
	}
	defer func() { err = errors.Join(err, closeTrace()) }()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exec := &contentionExec{dev: dev, spec: spec}
	rt := runner.NewRuntime(ctx, exec, []gpu.Device{dev.Device()}, 1)
	if hc, ok := dev.(hostCallTracing); ok && tw != nil {
		hc.traceHostCalls(rt.Now, hostCallSpan(tw, dev.Device().Info().Index))
	}
	cfg := actors.Config{Design: design, WorkersPerDevice: n, MaxAttempts: spec.maxAttempts, LockHops: spec.lockHops, Observer: obs}
	eng, err := actors.Start(rt, []gpu.Info{dev.Device().Info()}, cfg)
	if err != nil {
		return row, err
	}
	defer eng.Stop()
	start := time.Now()
	if err := eng.Submit(actors.JobSpec{ID: "bench", Partitions: spec.items, Size: spec.size, VRAM: spec.staged, Copy: spec.copy,
		Scratch: spec.scratch}); err != nil {
		return row, err
	}
	select {
	case <-col.done:
	case <-ctx.Done():
		return row, ctx.Err()
	}
	return col.row(design, n, time.Since(start)), nil
}

// withTrace adds a trace written to path (none when empty) to obs, and
// gives its writer (nil: none); close ends the trace.
func withTrace(obs actors.Observers, path string) (_ actors.Observers, _ *trace.Writer, close func() error, _ error) {
	if path == "" {
		return obs, nil, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--trace-dir: %w", err)
	}
	obs, tw, closeTrace := withTraceTo(obs, f)
	return obs, tw, func() error { return errors.Join(closeTrace(), f.Close()) }, nil
}

// withTraceTo adds to obs a trace writer of the run's events to w; close
// ends the trace (it does not close w).
func withTraceTo(obs actors.Observers, w io.Writer) (_ actors.Observers, _ *trace.Writer, close func() error) {
	tw := trace.NewDeferred(w, trace.Interval)
	return append(obs, tw), tw, tw.Close
}

// hostCallTracing is a contention device whose kernels' host code reports
// the pool calls it makes, which the actors' events do not show: on the GPU
// the kernel's scratch is a cudaMallocAsync made on the device's goroutine
// that issues the kernel, after the launch has returned to the worker, and
// whether it comes before or after another worker's trim, cudaMemGetInfo or
// cudaMallocAsync decides which of them runs out of memory.
// traceHostCalls gives the clock of the run's events and where each call goes.
type hostCallTracing interface {
	traceHostCalls(now func() time.Duration, call func(c hostCall))
}

// hostCall is one call a kernel's host code made: its name, the partition,
// when it was made and how long it took on the clock of the run's events,
// the bytes it asked for and what it returned.
type hostCall struct {
	Name, Partition string
	Start, Took     time.Duration
	Bytes           int64
	Err             error
}

// hostCalls is a contention device's hostCallTracing: the clock of the
// run's events and where the kernels' host code reports its calls, both nil
// when the run is not traced.
type hostCalls struct {
	now  func() time.Duration
	call func(hostCall)
}

func (h *hostCalls) traceHostCalls(now func() time.Duration, call func(hostCall)) {
	h.now, h.call = now, call
}

// reportCall reports a call of the kernel's host code that began at start
// (on the run's clock), when the run is traced.
func (h *hostCalls) reportCall(name, partition string, start time.Duration, bytes int64, err error) {
	if h.call != nil {
		h.call(hostCall{Name: name, Partition: partition, Start: start, Took: h.now() - start, Bytes: bytes, Err: err})
	}
}

// clock is the run's clock when it is traced, else zero.
func (h *hostCalls) clock() time.Duration {
	if h.now == nil {
		return 0
	}
	return h.now()
}

// hostCallSpan writes each host call as a slice of the trace, on a thread
// named for the partition of a process named for the device's kernel host
// code ("device 0 kernel host code"), with its bytes and its error.
func hostCallSpan(tw *trace.Writer, device int) func(hostCall) {
	process := fmt.Sprintf("device %d kernel host code", device)
	return func(c hostCall) {
		args := []any{"partition", c.Partition, "bytes", c.Bytes}
		if c.Err != nil {
			args = append(args, "err", c.Err.Error())
		}
		tw.Span(process, c.Partition, c.Name, c.Start, c.Took, args...)
	}
}

// goTraceMarks logs, while Go's execution trace runs (--go-trace), the
// workers' stage starts and the locks' grants on the goroutine that emits
// them, so that the trace shows what each goroutine did between a grant and
// its device call (runner.Start logs the call).
type goTraceMarks struct{ ctx context.Context }

func (g goTraceMarks) Observe(e actors.Event) {
	if !rtrace.IsEnabled() {
		return
	}
	switch e.Kind {
	case actors.EvStageStart:
		rtrace.Log(g.ctx, "cuzk", fmt.Sprintf("stage %s %s w%d", e.Stage, e.Partition, e.Worker))
	case actors.EvLeaseGrant:
		rtrace.Log(g.ctx, "cuzk", fmt.Sprintf("grant %s %s w%d", e.Lock, e.Partition, e.Worker))
	}
}

// contentionCollector reads a run's events.
type contentionCollector struct {
	mu        sync.Mutex
	done      chan struct{}
	proved    int
	failed    int
	retries   int
	fallbacks int
	oomFirst  int
	oomFall   int
	waited    int
	waits     map[string][]time.Duration
	order     []string
	computeAt map[int]time.Duration // worker → start of its compute stage
	busy      []span
	first     time.Duration
	started   bool
	end       time.Duration  // when the job finished
	errs      map[string]int // why attempts failed, by message
}

type span struct{ start, end time.Duration }

func newContentionCollector() *contentionCollector {
	return &contentionCollector{done: make(chan struct{}), waits: map[string][]time.Duration{}, computeAt: map[int]time.Duration{},
		errs: map[string]int{}}
}

func (c *contentionCollector) Observe(e actors.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		c.first, c.started = e.At, true
	}
	switch e.Kind {
	case actors.EvLeaseGrant:
		if _, ok := c.waits[e.Lock]; !ok {
			c.order = append(c.order, e.Lock)
		}
		c.waits[e.Lock] = append(c.waits[e.Lock], e.Took)
	case actors.EvStageStart:
		if e.Stage == actors.StageCompute {
			c.computeAt[e.Worker] = e.At
		}
	case actors.EvStageEnd:
		if at, ok := c.computeAt[e.Worker]; ok && e.Stage == actors.StageCompute {
			c.busy = append(c.busy, span{at, e.At})
			delete(c.computeAt, e.Worker)
		}
	case actors.EvDeviceOp:
		if e.Waited {
			c.waited++
		}
	case actors.EvOOM:
		if e.Fallback {
			c.oomFall++
		} else {
			c.oomFirst++
		}
	case actors.EvFallback:
		c.fallbacks++
	case actors.EvPartitionDone:
		c.proved++
	case actors.EvPartitionFailed:
		c.failed++
		c.errs[anyPartition.ReplaceAllString(e.Err, "$1/*")]++
	case actors.EvPartitionRetry:
		c.retries++
		c.errs[anyPartition.ReplaceAllString(e.Err, "$1/*")]++
	case actors.EvJobDone:
		c.end = e.At
		close(c.done)
	}
}

func (c *contentionCollector) row(design string, n int, wall time.Duration) contentionRow {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := contentionRow{Design: design, Workers: n, Wall: wall, Proved: c.proved, Failed: c.failed, OOMPreStage: c.oomFirst,
		OOMFallback: c.oomFall, Fallbacks: c.fallbacks, Retries: c.retries, DeviceWaited: c.waited,
		LockWaits: map[string][2]time.Duration{}, LockOrder: slices.Clone(c.order), Errors: maps.Clone(c.errs)}
	if wall > 0 {
		r.ItemsPerS = float64(c.proved) / wall.Seconds()
		r.GPUBusyPct = 100 * unionLength(c.busy).Seconds() / wall.Seconds()
	}
	for lock, ws := range c.waits {
		ws = slices.Clone(ws)
		slices.Sort(ws)
		r.LockWaits[lock] = [2]time.Duration{nearestRank(ws, 50), nearestRank(ws, 99)}
	}
	return r
}

// unionLength is how long at least one span covers.
func unionLength(ss []span) time.Duration {
	ss = slices.Clone(ss)
	slices.SortFunc(ss, func(a, b span) int { return int(a.start - b.start) })
	var total, end time.Duration
	started := false
	var cur span
	for _, s := range ss {
		if !started || s.start > end {
			if started {
				total += end - cur.start
			}
			cur, end, started = s, s.end, true
			continue
		}
		end = max(end, s.end)
	}
	if started {
		total += end - cur.start
	}
	return total
}

func nearestRank(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted)+99)/100 - 1
	return sorted[max(i, 0)]
}

// anyPartition matches a partition's id in an error, so that the same
// reason for different partitions counts once.
var anyPartition = regexp.MustCompile(`\b(bench)/[0-9]+\b`)

// printContentionErrors says why a run's attempts failed, the most frequent
// reasons first, so that a failed row is never a bare number.
func printContentionErrors(w io.Writer, r contentionRow) {
	if r.Draws > 1 {
		// The mean's own standard error: where the designs race, one
		// draw's outcome is one of two orders, and a mean of few draws
		// (or seeds) moves by several per cent.
		fmt.Fprintf(w, "%s × %d: %d %s, items/s %.2f to %.2f (sd %.2f), an OOM in %d of them; the mean's standard error %.2f items/s\n",
			r.Design, r.Workers, r.Draws, r.DrawNoun, r.DrawRange[0], r.DrawRange[1], r.DrawSD, r.DrawsOOM,
			r.DrawSD/math.Sqrt(float64(r.Draws)))
	}
	msgs := slices.Collect(maps.Keys(r.Errors))
	slices.SortFunc(msgs, func(a, b string) int { return cmp.Or(r.Errors[b]-r.Errors[a], strings.Compare(a, b)) })
	for i, m := range msgs {
		if i == 5 {
			fmt.Fprintf(w, "%s × %d: and %d more reasons\n", r.Design, r.Workers, len(msgs)-i)
			break
		}
		fmt.Fprintf(w, "%s × %d: %d attempts failed: %s\n", r.Design, r.Workers, r.Errors[m], m)
	}
}

func printContention(w io.Writer, rows []contentionRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "design\tworkers\titems/s\tGPU busy\tproved\tfailed\tretries\tOOM pre-stage\tOOM fallback\tfallbacks\twaited ops\tlock waits p50/p99\t")
	for _, r := range rows {
		var locks []string
		for _, l := range r.LockOrder {
			q := r.LockWaits[l]
			locks = append(locks, fmt.Sprintf("%s %s/%s", l, msWait(q[0]), msWait(q[1])))
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.1f%%\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", r.Design, r.Workers, r.ItemsPerS, r.GPUBusyPct,
			r.Proved, r.Failed, r.Retries, r.OOMPreStage, r.OOMFallback, r.Fallbacks, r.DeviceWaited, strings.Join(locks, ", "))
	}
	tw.Flush()
}
