package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpu"
)

// The simulator keeps a kernel's duration fixed whatever else runs on the
// machine; bench interference measures whether that holds on the card. It
// times real kernels alone and beside each load a worker puts on the machine
// while another worker's kernel runs — a host→device copy on the copy
// engine, CPU stages on every core, a kernel of its own on another stream —
// and prints how much longer they took: the simulator profile's
// kernel_slowdown_copy and kernel_slowdown_cpu (docs/simulator.md).

// interferenceKernels and interferenceLoads are what --kernels and
// --interference accept, in the order the table lists them.
var (
	interferenceKernels = []string{"msm", "ntt", "memset"}
	interferenceLoads   = []string{"copy", "cpu", "memset", "all"}
)

// memsetTrain is how many memsets over --memset-bytes make the memset
// kernel: long enough (3.8 ms for 16 of a GiB on the H200) that launching
// it costs little against running it.
const memsetTrain = 16

func benchInterferenceCommand() *cli.Command {
	return &cli.Command{
		Name: "interference",
		Usage: "time kernels alone and beside another stream's host→device copies, CPU work on every core, " +
			"or another stream's kernels: does a kernel slow down while other workers copy and synthesize?",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "kernels", Value: strings.Join(interferenceKernels, ","), Usage: "kernels to time, comma separated: msm (G1, 2^--msm-log points), ntt (forward, 2^--ntt-log), memset (a train of memsets over --memset-bytes)"},
			&cli.StringFlag{Name: "interference", Value: strings.Join(interferenceLoads, ","), Usage: "loads to time them beside (each alone, after the kernel alone), comma separated: copy, cpu, memset, all (copy and cpu together)"},
			&cli.IntFlag{Name: "msm-log", Value: 22, Usage: "log2 of the MSM's points", Action: intBetween("msm-log", 0, 30)},
			&cli.IntFlag{Name: "ntt-log", Value: 24, Usage: "log2 of the NTT's size", Action: intBetween("ntt-log", 0, cuda.MaxLogNTT)},
			&cli.StringFlag{Name: "memset-bytes", Value: "1GiB", Usage: "the memset kernel's buffer, and the memset load's"},
			&cli.StringFlag{Name: "copy-bytes", Value: "1GiB", Usage: "the pinned buffer the copy load copies to the device, whole, again and again"},
			&cli.StringFlag{Name: "cpu-bytes", Value: "2GiB", Usage: "the cpu load's working set, shared among its goroutines (larger than the caches: memory-bound like witness synthesis)"},
			&cli.IntFlag{Name: "cpu-threads", Usage: "goroutines of the cpu load (0: GOMAXPROCS, every core)", Action: intAtLeast("cpu-threads", 0)},
			&cli.IntFlag{Name: "runs", Value: 7, Usage: "timed runs per kernel and load, after one warm-up", Action: intAtLeast("runs", 1)},
			&cli.BoolFlag{Name: "json", Usage: "print the results as JSON"},
			&cli.DurationFlag{Name: "card-every", Value: 500 * time.Millisecond, Usage: "sample nvidia-smi's SM clock, temperature, power and clock event reasons this often over the whole bench and print them at its end (0: not at all, nor where nvidia-smi is missing)"},
			&cli.StringFlag{Name: "gpu-lib", Usage: "path of " + cuda.LibraryName + " (default: $" + cuda.EnvLibrary + ", next to the executable, build/)"},
		},
		Action: runBenchInterference,
	}
}

// interferenceSpec is what the flags ask for.
type interferenceSpec struct {
	kernels, loads   []string
	msmLog, nttLog   int
	memsetBytes      int64
	copyBytes        int64
	cpuBytes         int64
	cpuThreads, runs int
	json             bool
	lib              string
}

func interferenceSpecFrom(c *cli.Context) (interferenceSpec, error) {
	s := interferenceSpec{msmLog: c.Int("msm-log"), nttLog: c.Int("ntt-log"), cpuThreads: c.Int("cpu-threads"),
		runs: c.Int("runs"), json: c.Bool("json"), lib: c.String("gpu-lib")}
	var err error
	if s.kernels, err = pickList("kernels", c.String("kernels"), interferenceKernels); err != nil {
		return s, err
	}
	if s.loads, err = pickList("interference", c.String("interference"), interferenceLoads); err != nil {
		return s, err
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"memset-bytes", &s.memsetBytes}, {"copy-bytes", &s.copyBytes}, {"cpu-bytes", &s.cpuBytes}} {
		if *f.dst, err = parseBytes(c.String(f.name)); err != nil {
			return s, fmt.Errorf("--%s: %w", f.name, err)
		}
	}
	if s.cpuThreads == 0 {
		s.cpuThreads = runtime.GOMAXPROCS(0)
	}
	if s.runs < 1 {
		return s, errors.New("--runs must be at least 1")
	}
	return s, nil
}

// pickList reads a comma-separated subset of known, kept in known's order.
func pickList(flag, s string, known []string) ([]string, error) {
	want := map[string]bool{}
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if !slices.Contains(known, v) {
			return nil, fmt.Errorf("--%s: unknown %q (want %s)", flag, v, strings.Join(known, ", "))
		}
		want[v] = true
	}
	var out []string
	for _, k := range known {
		if want[k] {
			out = append(out, k)
		}
	}
	if len(out) == 0 && flag == "kernels" {
		return nil, fmt.Errorf("--%s: none given (want some of %s)", flag, strings.Join(known, ", "))
	}
	return out, nil
}

// ifKernel is one kernel the bench times: run queues it on the stream given
// (the MSM also waits for it, as its API does).
type ifKernel struct {
	name, what string
	run        func(s cuda.Stream) error
	// check compares a run's result with the first run's, where the kernel
	// has one that repeats (the MSM's sum): interference must not change it.
	check func() error
}

// ifLoad is something that runs beside the kernels: started before a row's
// warm-up, stopped after its last run.
type ifLoad interface {
	name() string
	what() string
	// start returns once the load runs steadily (its first unit of work is
	// done).
	start(ctx context.Context) error
	// stop ends it and returns once none of its goroutines runs and its
	// device work has completed.
	stop() error
	// achieved is the bytes per second it moved between w0 and w1.
	achieved(w0, w1 time.Time) float64
	stats() ifLoadStats
}

// ifLoadStats is what a load did over the whole bench.
type ifLoadStats struct {
	Name    string `json:"name"`
	Starts  int    `json:"starts"`
	Stops   int    `json:"stops"`
	Units   int64  `json:"units"` // copies, memsets, or chunks of CPU work
	Bytes   int64  `json:"bytes"`
	Running bool   `json:"running"` // still running when the bench ended: never, or it is a bug
}

// ifTimes are one row's timed runs, in ms.
type ifTimes struct {
	Median float64   `json:"median"`
	P90    float64   `json:"p90"`
	Runs   []float64 `json:"runs"`
}

// ifRow is one kernel beside one load ("alone": none).
type ifRow struct {
	Kernel       string             `json:"kernel"`
	Interference string             `json:"interference"`
	Device       ifTimes            `json:"device_ms"`
	Host         ifTimes            `json:"host_ms"`
	SlowDevice   float64            `json:"slowdown_device,omitempty"` // 0: unknown (the device clock read 0 alone)
	SlowHost     float64            `json:"slowdown_host,omitempty"`
	AchievedGBps map[string]float64 `json:"achieved_gbps,omitempty"` // per load, over the timed runs
}

// ifReport is the bench's result, as --json prints it.
type ifReport struct {
	GPU      string        `json:"gpu"`
	Library  string        `json:"library"`
	CPUs     int           `json:"cpus"`
	Runs     int           `json:"runs"`
	Clocks   string        `json:"clocks"`
	Kernels  []string      `json:"kernels"`
	Loads    []string      `json:"loads"`
	Rows     []ifRow       `json:"rows"`
	Stopped  []ifLoadStats `json:"interferers"`
	Warnings []string      `json:"warnings,omitempty"`
	Cards    []string      `json:"cards,omitempty"` // nvidia-smi's samples over the whole bench, card by card
}

const ifClocks = "device: CUDA events recorded on the kernel's stream before and after it; host: the host clock from before the first event's record to the return of the sync on the second"

func runBenchInterference(c *cli.Context) error {
	spec, err := interferenceSpecFrom(c)
	if err != nil {
		return err
	}
	d, err := cuda.Open(spec.lib)
	if err != nil {
		return fmt.Errorf("bench interference: %w", err)
	}
	p, err := d.Properties()
	if err != nil {
		return fmt.Errorf("bench interference: %w", err)
	}
	b := &ifBench{d: d, spec: spec}
	var cards *cardWatch
	if every := c.Duration("card-every"); every > 0 {
		cards = probeCards(c.Context).watch(every)
	}
	rep, err := b.run(c.Context)
	for _, u := range cards.stop() {
		rep.Cards = append(rep.Cards, u.String())
	}
	rep.GPU = fmt.Sprintf("GPU %d: %s, %d SMs, compute %d.%d", p.Index, p.Name, p.SMs, p.Major, p.Minor)
	rep.Library = d.Lib().Path()
	if cerr := b.close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("bench interference: free: %w", cerr))
	}
	for _, l := range b.loads {
		st := l.stats()
		rep.Stopped = append(rep.Stopped, st)
		if st.Running || st.Starts != st.Stops {
			err = errors.Join(err, fmt.Errorf("bench interference: load %s started %d times and stopped %d", st.Name, st.Starts, st.Stops))
		}
	}
	if err != nil {
		return err
	}
	if spec.json {
		return printJSON(c.App.Writer, rep)
	}
	printInterference(c.App.Writer, rep, b)
	return nil
}

// ifBench holds the device, the kernels and the loads, and everything they
// allocated, freed by close in the reverse order.
type ifBench struct {
	d       *cuda.Device
	spec    interferenceSpec
	kernels []*ifKernel
	loads   []ifLoad // in the order they were made, for the report
	byName  map[string]ifLoad
	frees   []func() error
	// e0, e1 time the kernels on ks.
	ks     cuda.Stream
	e0, e1 cuda.Event
}

func (b *ifBench) onClose(f func() error) { b.frees = append(b.frees, f) }

// owned takes a device allocation's result (Malloc, Upload) and frees the
// buffer when the bench closes.
func (b *ifBench) owned(p cuda.Ptr, err error) (cuda.Ptr, error) {
	if err == nil {
		b.onClose(func() error { return b.d.Free(p) })
	}
	return p, err
}

func (b *ifBench) close() error {
	var errs []error
	for i := len(b.frees) - 1; i >= 0; i-- {
		errs = append(errs, b.frees[i]())
	}
	b.frees = nil
	return errors.Join(errs...)
}

// run sets everything up, then times every kernel alone and beside every
// load.
func (b *ifBench) run(ctx context.Context) (ifReport, error) {
	rep := ifReport{CPUs: runtime.NumCPU(), Runs: b.spec.runs, Clocks: ifClocks, Loads: b.spec.loads}
	d := b.d
	var err error
	if b.ks, err = d.NewStream(); err != nil {
		return rep, fmt.Errorf("bench interference: kernel stream: %w", err)
	}
	b.onClose(func() error { return d.DestroyStream(b.ks) })
	if b.e0, err = d.NewEvent(); err != nil {
		return rep, err
	}
	b.onClose(func() error { return d.DestroyEvent(b.e0) })
	if b.e1, err = d.NewEvent(); err != nil {
		return rep, err
	}
	b.onClose(func() error { return d.DestroyEvent(b.e1) })
	for _, name := range b.spec.kernels {
		k, err := b.newKernel(name)
		if err != nil {
			return rep, fmt.Errorf("bench interference: kernel %s: %w", name, err)
		}
		b.kernels = append(b.kernels, k)
		rep.Kernels = append(rep.Kernels, k.name+": "+k.what)
	}
	b.byName = map[string]ifLoad{}
	for _, name := range b.spec.loads {
		for _, part := range loadParts(name) {
			if b.byName[part] != nil {
				continue
			}
			l, err := b.newLoad(part)
			if err != nil {
				return rep, fmt.Errorf("bench interference: load %s: %w", part, err)
			}
			b.byName[part] = l
			b.loads = append(b.loads, l)
		}
	}
	for _, k := range b.kernels {
		alone, err := b.measure(ctx, k, "alone")
		if err != nil {
			return rep, err
		}
		alone.SlowDevice, alone.SlowHost = ratio(alone.Device.Median, alone.Device.Median), ratio(alone.Host.Median, alone.Host.Median)
		rep.Rows = append(rep.Rows, alone)
		for _, name := range b.spec.loads {
			r, err := b.measure(ctx, k, name)
			if err != nil {
				return rep, err
			}
			r.SlowDevice, r.SlowHost = ratio(r.Device.Median, alone.Device.Median), ratio(r.Host.Median, alone.Host.Median)
			rep.Rows = append(rep.Rows, r)
		}
		if len(b.spec.loads) > 0 {
			// The kernel alone once more: how far it drifts on its own
			// (clocks, temperature) is the noise the slowdowns stand on.
			again, err := b.measure(ctx, k, "alone")
			if err != nil {
				return rep, err
			}
			again.Interference = "alone-again"
			again.SlowDevice, again.SlowHost = ratio(again.Device.Median, alone.Device.Median), ratio(again.Host.Median, alone.Host.Median)
			rep.Rows = append(rep.Rows, again)
		}
		if alone.Device.Median == 0 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: the device clock read 0 ms alone (a library without event timing): device slowdowns unknown", k.name))
		}
	}
	return rep, nil
}

func loadParts(name string) []string {
	if name == "all" {
		return []string{"copy", "cpu"}
	}
	return []string{name}
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// measure times k beside the loads of interference (none for "alone"): the
// loads start and reach their pace, one warm-up run, the timed runs, then
// the loads stop and report what they moved meanwhile.
func (b *ifBench) measure(ctx context.Context, k *ifKernel, interference string) (row ifRow, err error) {
	row = ifRow{Kernel: k.name, Interference: interference}
	var loads []ifLoad
	if interference != "alone" {
		for _, part := range loadParts(interference) {
			loads = append(loads, b.byName[part])
		}
	}
	stop, err := startLoads(ctx, loads)
	if err != nil {
		return row, fmt.Errorf("bench interference: %w", err)
	}
	defer func() {
		if serr := stop(); serr != nil {
			err = errors.Join(err, fmt.Errorf("bench interference: %s beside %s: %w", k.name, interference, serr))
		}
	}()
	if _, _, err := b.timeOnce(k); err != nil { // warm-up
		return row, fmt.Errorf("bench interference: %s beside %s: %w", k.name, interference, err)
	}
	var dev, host []time.Duration
	w0 := time.Now()
	for range b.spec.runs {
		dv, hv, err := b.timeOnce(k)
		if err == nil && k.check != nil {
			err = k.check()
		}
		if err != nil {
			return row, fmt.Errorf("bench interference: %s beside %s: %w", k.name, interference, err)
		}
		dev, host = append(dev, dv), append(host, hv)
	}
	w1 := time.Now()
	// The rates are read after the loads stopped, from what they logged
	// while the kernel ran.
	if err := stop(); err != nil {
		return row, fmt.Errorf("bench interference: %s beside %s: %w", k.name, interference, err)
	}
	row.Device, row.Host = summarize(dev), summarize(host)
	for _, l := range loads {
		if row.AchievedGBps == nil {
			row.AchievedGBps = map[string]float64{}
		}
		row.AchievedGBps[l.name()] = l.achieved(w0, w1) / 1e9
	}
	return row, nil
}

// startLoads starts loads under a context of their own and returns once
// each runs at its pace; a load whose start fails has stopped, and those
// started before it are stopped, their errors joined to its. stop cancels
// them and returns once none runs; called again it does nothing.
func startLoads(ctx context.Context, loads []ifLoad) (stop func() error, err error) {
	lctx, cancel := context.WithCancel(ctx)
	var running []ifLoad
	stop = func() error {
		cancel()
		var errs []error
		for _, l := range running {
			if err := l.stop(); err != nil {
				errs = append(errs, fmt.Errorf("load %s: %w", l.name(), err))
			}
		}
		running = nil
		return errors.Join(errs...)
	}
	for _, l := range loads {
		if err := l.start(lctx); err != nil {
			return nil, errors.Join(fmt.Errorf("start load %s: %w", l.name(), err), stop())
		}
		running = append(running, l)
	}
	return stop, nil
}

// timeOnce runs k once on the kernel stream between two events.
func (b *ifBench) timeOnce(k *ifKernel) (dev, host time.Duration, err error) {
	d := b.d
	start := time.Now()
	if err := d.RecordEvent(b.e0, b.ks); err != nil {
		return 0, 0, err
	}
	if err := k.run(b.ks); err != nil {
		return 0, 0, err
	}
	if err := d.RecordEvent(b.e1, b.ks); err != nil {
		return 0, 0, err
	}
	if err := d.EventSync(b.e1); err != nil {
		return 0, 0, err
	}
	host = time.Since(start)
	dev, err = d.Elapsed(b.e0, b.e1)
	return dev, host, err
}

func summarize(ds []time.Duration) ifTimes {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	t := ifTimes{Median: durMs(median(ds)), P90: durMs(nearestRank(sorted, 90))}
	for _, d := range ds {
		t.Runs = append(t.Runs, durMs(d))
	}
	return t
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// newKernel makes a kernel and its device data.
func (b *ifBench) newKernel(name string) (*ifKernel, error) {
	d := b.d
	switch name {
	case "msm":
		n := 1 << b.spec.msmLog
		points, scalars := benchPoints(n), benchScalars(n)
		pp, err := b.owned(cuda.Upload(d, points, b.ks))
		if err != nil {
			return nil, err
		}
		ps, err := b.owned(cuda.Upload(d, scalars, b.ks))
		if err != nil {
			return nil, err
		}
		k := &ifKernel{name: fmt.Sprintf("msm 2^%d", b.spec.msmLog),
			what: "G1 MSM, random scalars, points and scalars on the device, scratch from the pool, until the sum is on the host"}
		var first, last bls12381.G1Affine
		have := false
		k.run = func(s cuda.Stream) error {
			jac, err := d.MSM(pp, ps, n, cuda.Montgomery, cuda.MSMOptions{}, s)
			last.FromJacobian(&jac)
			if err == nil && !have {
				first, have = last, true
			}
			return err
		}
		k.check = func() error {
			if !last.Equal(&first) {
				return errors.New("the MSM's sum differs from its first run's")
			}
			return nil
		}
		return k, nil
	case "ntt":
		dom, err := d.NewDomain(b.spec.nttLog, b.ks)
		if err != nil {
			return nil, err
		}
		b.onClose(dom.Close)
		buf, err := b.owned(cuda.Upload(d, benchScalars(1<<b.spec.nttLog), b.ks))
		if err != nil {
			return nil, err
		}
		return &ifKernel{name: fmt.Sprintf("ntt 2^%d", b.spec.nttLog),
			what: "Fr NTT forward, natural order in and out, in place on the device",
			run:  func(s cuda.Stream) error { return dom.NTT(buf, false, false, s) }}, nil
	case "memset":
		n := b.spec.memsetBytes
		buf, err := b.owned(d.Malloc(n))
		if err != nil {
			return nil, err
		}
		return &ifKernel{name: "memset", what: fmt.Sprintf("%d memsets of %s, memory-bound, full occupancy", memsetTrain, gpu.FormatBytes(n)),
			run: func(s cuda.Stream) error {
				for range memsetTrain {
					if err := d.Memset(buf, 0, n, s); err != nil {
						return err
					}
				}
				return nil
			}}, nil
	}
	return nil, fmt.Errorf("unknown kernel %q", name)
}

// newLoad makes a load and what it needs.
func (b *ifBench) newLoad(name string) (ifLoad, error) {
	d := b.d
	switch name {
	case "copy":
		n := b.spec.copyBytes
		host, err := d.HostAlloc(n)
		if err != nil {
			return nil, err
		}
		b.onClose(func() error { return d.HostFree(host) })
		dst, err := b.owned(d.Malloc(n))
		if err != nil {
			return nil, err
		}
		return b.newDeviceLoop("copy", fmt.Sprintf("host→device copies of a %s pinned buffer, one after another on a stream of their own", gpu.FormatBytes(n)),
			n, 1, func(s cuda.Stream) error { return d.CopyInAsync(dst, host, 0, n, s) })
	case "memset":
		n := b.spec.memsetBytes
		buf, err := b.owned(d.Malloc(n))
		if err != nil {
			return nil, err
		}
		// Eight memsets between two syncs keep the stream from running dry
		// while the host waits.
		return b.newDeviceLoop("memset", fmt.Sprintf("memsets of %s, one after another on a stream of their own (another worker's kernel)", gpu.FormatBytes(n)),
			n, 8, func(s cuda.Stream) error { return d.Memset(buf, 1, n, s) })
	case "cpu":
		return newCPULoad(b.spec.cpuThreads, b.spec.cpuBytes), nil
	}
	return nil, fmt.Errorf("unknown load %q", name)
}

// progressLog is when a load's work completed: cumulative bytes at times.
type progressLog struct {
	at    []time.Time
	bytes []int64
}

func (p *progressLog) add(t time.Time, total int64) {
	p.at = append(p.at, t)
	p.bytes = append(p.bytes, total)
}

// rate is the bytes per second between the first completion at or after w0
// and the last at or before w1; with fewer than two completions in the
// window (work units longer than the kernel's runs), over the whole log.
func (p *progressLog) rate(w0, w1 time.Time) float64 {
	i := slices.IndexFunc(p.at, func(t time.Time) bool { return !t.Before(w0) })
	j := -1
	for k := len(p.at) - 1; k >= 0; k-- {
		if !p.at[k].After(w1) {
			j = k
			break
		}
	}
	if i < 0 || j <= i {
		i, j = 0, len(p.at)-1
	}
	if j <= i {
		return 0
	}
	dt := p.at[j].Sub(p.at[i]).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(p.bytes[j]-p.bytes[i]) / dt
}

// deviceLoop queues the same device work on a stream of its own, batch
// units at a time, keeping one batch queued behind the one running, until
// it is stopped.
type deviceLoop struct {
	d           *cuda.Device
	label, desc string
	unit        int64 // bytes a unit moves
	batch       int
	queue       func(s cuda.Stream) error
	// ahead is how many batches stay queued behind the one running while
	// the host waits: 1 keeps the stream from running dry; 0 waits for
	// each batch before queuing the next, so that the stream is empty for
	// a moment between batches (bench prove's copy load: a device-wide
	// wait of the prover's, a cudaFree's, must find the device idle).
	ahead int
	s     cuda.Stream
	ev    [2]cuda.Event

	loadCounters
	done chan struct{}
	err  error
	log  progressLog // of the current start; read after it stopped
}

// loadCounters is a load's bookkeeping, which stats reads while it runs: how
// often it started and stopped, the units of work it did, whether it runs.
type loadCounters struct {
	mu            sync.Mutex
	starts, stops int
	units         int64
	running       bool
}

// begin marks a start, with reset readying under the lock what the start
// needs; a load already running is an error.
func (c *loadCounters) begin(reset func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return errors.New("already running")
	}
	c.running = true
	c.starts++
	if reset != nil {
		reset()
	}
	return nil
}

// whileRunning says whether the load runs, calling f under the lock if so.
func (c *loadCounters) whileRunning(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running && f != nil {
		f()
	}
	return c.running
}

// end marks a stop.
func (c *loadCounters) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running = false
	c.stops++
}

func (c *loadCounters) count(units int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.units += units
}

// stats are the counters of load name, whose units move unitBytes each.
func (c *loadCounters) stats(name string, unitBytes int64) ifLoadStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ifLoadStats{Name: name, Starts: c.starts, Stops: c.stops, Units: c.units, Bytes: c.units * unitBytes, Running: c.running}
}

func (b *ifBench) newDeviceLoop(label, desc string, unit int64, batch int, queue func(cuda.Stream) error) (*deviceLoop, error) {
	d := b.d
	l := &deviceLoop{d: d, label: label, desc: desc, unit: unit, batch: batch, queue: queue, ahead: 1}
	var err error
	if l.s, err = d.NewStream(); err != nil {
		return nil, err
	}
	b.onClose(func() error { return d.DestroyStream(l.s) })
	for i := range l.ev {
		if l.ev[i], err = d.NewEvent(); err != nil {
			return nil, err
		}
		ev := l.ev[i]
		b.onClose(func() error { return d.DestroyEvent(ev) })
	}
	return l, nil
}

func (l *deviceLoop) name() string { return l.label }
func (l *deviceLoop) what() string { return l.desc }

func (l *deviceLoop) start(ctx context.Context) error {
	if err := l.begin(func() { l.err, l.log, l.done = nil, progressLog{}, make(chan struct{}) }); err != nil {
		return err
	}
	ready := make(chan error, 1)
	go l.loop(ctx, ready)
	select {
	case err := <-ready:
		return err
	case <-l.done:
		// It ended before its pace was reached: stopped already.
		l.end()
		return l.err
	}
}

// loop runs until ctx ends, then drains the stream: when it returns, none of
// its work is left on the device.
func (l *deviceLoop) loop(ctx context.Context, ready chan<- error) {
	defer close(l.done)
	var queued, synced int64 // batches
	batchBytes := l.unit * int64(l.batch)
	fail := func(err error) {
		l.err = errors.Join(err, l.d.StreamSync(l.s))
	}
	for ctx.Err() == nil {
		for range l.batch {
			if err := l.queue(l.s); err != nil {
				fail(err)
				return
			}
		}
		if err := l.d.RecordEvent(l.ev[queued%2], l.s); err != nil {
			fail(err)
			return
		}
		queued++
		if queued <= int64(l.ahead) {
			continue
		}
		// Wait for the batch ahead batches before the one just queued.
		if err := l.d.EventSync(l.ev[(queued-1-int64(l.ahead))%2]); err != nil {
			fail(err)
			return
		}
		synced++
		l.log.add(time.Now(), synced*batchBytes)
		l.count(int64(l.batch))
		if synced == 1 {
			ready <- nil
		}
	}
	if err := l.d.StreamSync(l.s); err != nil {
		l.err = err
		return
	}
	if queued > synced {
		l.log.add(time.Now(), queued*batchBytes)
		l.count((queued - synced) * int64(l.batch))
	}
}

func (l *deviceLoop) stop() error {
	var done chan struct{}
	if !l.whileRunning(func() { done = l.done }) {
		return nil
	}
	// The caller has cancelled the loop's context.
	<-done
	l.end()
	return l.err
}

func (l *deviceLoop) achieved(w0, w1 time.Time) float64 { return l.log.rate(w0, w1) }

func (l *deviceLoop) stats() ifLoadStats { return l.loadCounters.stats(l.label, l.unit) }

// cpuLoad is CPU work like witness synthesis: goroutines multiplying field
// elements over a working set larger than the caches, so that they keep
// every core and much of the host's memory bandwidth busy.
type cpuLoad struct {
	threads int
	perSet  int // elements of each of a goroutine's two slices
	sets    [][2][]fr.Element
	logs    []progressLog // per goroutine, of the current start

	loadCounters
	wg sync.WaitGroup
}

// cpuChunk is the elements a cpu goroutine multiplies between two looks at
// its context, and cpuLogEvery how many chunks between two log entries.
const (
	cpuChunk    = 4096
	cpuLogEvery = 16
	// cpuBytesPerMul is what a multiplication a[i] *= b[i] moves: two
	// elements read, one written.
	cpuBytesPerMul = 3 * fr.Bytes
)

func newCPULoad(threads int, bytes int64) *cpuLoad {
	per := int(bytes / int64(2*fr.Bytes*threads))
	return &cpuLoad{threads: threads, perSet: max(per, cpuChunk)}
}

func (l *cpuLoad) name() string { return "cpu" }
func (l *cpuLoad) what() string {
	return fmt.Sprintf("%d goroutines multiplying Fr elements over %s, memory-bound like witness synthesis",
		l.threads, gpu.FormatBytes(int64(l.threads*2*l.perSet*fr.Bytes)))
}

func (l *cpuLoad) start(ctx context.Context) error {
	if err := l.begin(nil); err != nil {
		return err
	}
	if l.sets == nil {
		// Made once, by the goroutines' first start, kept for the next.
		l.sets = make([][2][]fr.Element, l.threads)
	}
	l.logs = make([]progressLog, l.threads)
	var ready sync.WaitGroup
	ready.Add(l.threads)
	l.wg.Add(l.threads)
	for g := range l.threads {
		go l.work(ctx, g, &ready)
	}
	ready.Wait()
	return nil
}

func (l *cpuLoad) work(ctx context.Context, g int, ready *sync.WaitGroup) {
	defer l.wg.Done()
	set := &l.sets[g]
	if set[0] == nil {
		for k := range set {
			set[k] = make([]fr.Element, l.perSet)
			for i := range set[k] {
				set[k][i].SetUint64(uint64(i + k + 2))
			}
		}
	}
	a, b := set[0], set[1]
	log := &l.logs[g]
	var muls int64
	chunks := 0
	signalled := false
	for ctx.Err() == nil {
		for lo := 0; lo < len(a) && ctx.Err() == nil; lo += cpuChunk {
			hi := min(lo+cpuChunk, len(a))
			for i := lo; i < hi; i++ {
				a[i].Mul(&a[i], &b[i])
			}
			muls += int64(hi - lo)
			if chunks++; chunks%cpuLogEvery == 0 {
				log.add(time.Now(), muls*cpuBytesPerMul)
				if !signalled {
					signalled = true
					ready.Done()
				}
			}
		}
	}
	if !signalled {
		ready.Done()
	}
	l.count(int64(chunks))
}

func (l *cpuLoad) stop() error {
	if !l.whileRunning(nil) {
		return nil
	}
	l.wg.Wait()
	l.end()
	return nil
}

func (l *cpuLoad) achieved(w0, w1 time.Time) float64 {
	var r float64
	for i := range l.logs {
		r += l.logs[i].rate(w0, w1)
	}
	return r
}

func (l *cpuLoad) stats() ifLoadStats { return l.loadCounters.stats("cpu", cpuChunk*cpuBytesPerMul) }

func printInterference(w io.Writer, rep ifReport, b *ifBench) {
	fmt.Fprintln(w, rep.GPU+", library "+rep.Library)
	fmt.Fprintf(w, "CPU: %d cores (GOMAXPROCS %d)\n", rep.CPUs, runtime.GOMAXPROCS(0))
	for _, k := range rep.Kernels {
		fmt.Fprintln(w, "kernel "+k)
	}
	for _, l := range b.loads {
		fmt.Fprintf(w, "load %s: %s\n", l.name(), l.what())
	}
	if slices.Contains(rep.Loads, "all") {
		fmt.Fprintln(w, "load all: copy and cpu together")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kernel\tinterference\tdevice ms\tp90\tdevice ×\thost ms\tp90\thost ×\tinterferer GB/s\t")
	for _, r := range rep.Rows {
		var got []string
		for _, name := range loadParts(r.Interference) {
			if v, ok := r.AchievedGBps[name]; ok {
				got = append(got, fmt.Sprintf("%s %.1f", name, v))
			}
		}
		ach := "-"
		if len(got) > 0 {
			ach = strings.Join(got, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%s\t%.2f\t%.2f\t%s\t%s\t\n", r.Kernel, r.Interference,
			r.Device.Median, r.Device.P90, slowdown(r.SlowDevice), r.Host.Median, r.Host.P90, slowdown(r.SlowHost), ach)
	}
	tw.Flush()
	fmt.Fprintf(w, "Times: median and p90 (nearest rank) of %d runs after a warm-up, each load running throughout; %s.\n", rep.Runs, rep.Clocks)
	fmt.Fprintln(w, "Slowdown: against the same kernel alone; alone-again times it alone after the loads, for the drift the slowdowns stand on. Interferer GB/s: what each load moved while the kernel's timed runs ran.")
	for _, card := range rep.Cards {
		fmt.Fprintln(w, "Over the bench, "+card)
	}
	fmt.Fprintln(w, "For the simulator's profile: kernel_slowdown_copy = the copy row's device slowdown − 1, kernel_slowdown_cpu = the cpu row's − 1 (docs/simulator.md).")
	for _, s := range rep.Stopped {
		fmt.Fprintf(w, "load %s: started %d times, stopped %d; %d units, %s moved\n", s.Name, s.Starts, s.Stops, s.Units, gpu.FormatBytes(s.Bytes))
	}
	for _, warn := range rep.Warnings {
		fmt.Fprintln(w, "warning: "+warn)
	}
}

func slowdown(v float64) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3fx", v)
}
