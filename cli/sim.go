package cli

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/sim"
	"github.com/cuzk/cuzk/trace"
)

func simCommand() *cli.Command {
	return &cli.Command{
		Name:  "sim",
		Usage: "simulate how a lock design shares GPUs among workers, on a model of the hardware",
		Description: "Runs the production actors on a virtual clock against models of the GPU (CUDA's semantics)\n" +
			"and the host CPU. Embedded scenarios: " + strings.Join(sim.ScenarioNames(), ", ") + ".\n" +
			"The same scenario and seed always give the same report.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "scenario", Usage: "embedded scenario name or path to a scenario file (JSON); required"},
			&cli.StringFlag{Name: "design", Usage: "override the scenario's lock design (single, split-first, split-devsync, split, budget)"},
			&cli.IntFlag{Name: "workers", Usage: "override the workers per device", Action: intAtLeast("workers", 1)},
			&cli.Uint64Flag{Name: "seed", Usage: "override the scenario's seed"},
			&cli.IntFlag{Name: "seeds", Value: 1, Usage: "run `N` seeds from the seed on and print what they give together: throughput's mean and range, and in how many seeds an OOM, a failed partition or an unended run came (an OOM that turns on a race the model draws is odds, which one seed cannot show)", Action: intAtLeast("seeds", 1)},
			&cli.Float64Flag{Name: "vram-gib", Usage: "override the device memory, GiB", Action: positiveFloat("vram-gib")},
			&cli.DurationFlag{Name: "retry-backoff", Usage: "override the scenario's retry backoff (e.g. 500ms)", Action: nonNegativeDuration[time.Duration]("retry-backoff")},
			&cli.StringFlag{Name: "host-mem-limit", Usage: "override the scenario's host-memory limit: bytes (e.g. 32GiB) or off (each GPU worker synthesizes its own partition)"},
			&cli.IntFlag{Name: "synth-workers", Usage: "override the scenario's synthesis slots under the host-memory limit", Action: intAtLeast("synth-workers", 1)},
			&cli.StringFlag{Name: "cpu-order", Usage: "override the profile's host.cpu_order: shared (the CPU stages share the cores evenly) or lanes (synthesize and prep take them in the order the partitions began, as cuzk prove does unless CUZK_CPU_LANES=off)"},
			&cli.IntFlag{Name: "cpu-hold", Value: -1, Usage: "override the profile's host.cpu_hold (with lanes): how many lanes synthesize while no prepared partition waits for its compute, as cuzk prove holds them (2) unless CUZK_CPU_HOLD=off (0)"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
			&cli.BoolFlag{Name: "lock-hops", Usage: "run the workers as the runtime did before free mutexes were taken in place (every lease through its lock's actor, messages sent during the handler), as the scenario's lock_hops does: the runtime of the predictions and card runs made before runs/h200-2026-12-05d"},
			&cli.BoolFlag{Name: "compare", Usage: "run every design with 1 to 4 workers per device and print one table"},
			&cli.StringFlag{Name: "trace", Usage: "write the virtual timeline as a Chrome trace (the production trace format) to `FILE`"},
			&cli.StringFlag{Name: "timeline", Usage: "draw the virtual timeline as SVG to `FILE`"},
			&cli.Float64Flag{Name: "timeline-until", Usage: "draw only the first `SECONDS` of the timeline (default: all of it)", Action: positiveFloat("timeline-until")},
			&cli.StringFlag{Name: "cluster", Usage: "simulate a farm of hosts proving as one cluster (docs/cluster.md): embedded cluster scenario (" + strings.Join(sim.ClusterScenarioNames(), ", ") + ") or path; takes --seed and --json only"},
		},
		Action:      runSim,
		Subcommands: []*cli.Command{simCalibrateCommand()},
	}
}

func simCalibrateCommand() *cli.Command {
	return &cli.Command{
		Name:  "calibrate",
		Usage: "set a profile's stage costs and device figures from production traces of one worker on one device",
		Description: "Reads traces written by cuzk prove --trace, bench prove --trace-dir or bench contention\n" +
			"--trace-dir (gzipped or not). The first --trace gives the stage costs (the mean of every stage's\n" +
			"spans, as its cost at the given partition size) and a partition's device memory and copied bytes;\n" +
			"each --size-trace, the same plan's compute at another size, adds a fixed cost to compute's;\n" +
			"every --trace gives the device's figures: the host→device bandwidth, the copy-engine work a\n" +
			"cudaFree leaves (from copies made soon after a free), and the host time of cudaMalloc, cudaFree,\n" +
			"a trim and a pool regrowth. The CPU model's cores and bandwidth shares, and what no trace has ops\n" +
			"for, are the base profile's. With --fit-scenario the stage costs are fitted through the simulator\n" +
			"on the first trace's run instead (pooled with --fit-repeat's runs of it), for runs whose spans of a stage\n" +
			"overlap (docs/simulator.md).",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "trace", Usage: "a production trace (`FILE`, .json or .json.gz); repeat for more, the first gives the stage costs (required unless only --race-trace is given)"},
			&cli.StringFlag{Name: "profile", Required: true, Usage: "the base profile: embedded name or path"},
			&cli.StringFlag{Name: "device-from", Usage: "take the device's figures, and the runtime's lock handoff and completion latency, from `PROFILE` (embedded name or path): a profile calibrated on the same card, such as bench contention calibrate's (malloc, free, trim, pool growth and copy-engine figures that one proving trace has too few ops to fit); the traces' own device fits then apply over them, the CPU model stays --profile's"},
			&cli.StringFlag{Name: "constraints", Usage: "constraints per partition in the trace's job (e.g. 1048305, 1M); required with --trace unless --fit-scenario gives one size (as the scenario bench prove writes beside its trace does)"},
			&cli.StringFlag{Name: "fit-scenario", Usage: "fit the stage costs through the simulator instead: a scenario (`FILE` or embedded name) describing the first trace's run (partitions, sizes, resident memory, host-memory gate), run with --fit-design and --fit-workers; each stage's cost is scaled until its simulated spans' mean equals the trace's (for runs whose syntheses overlap, as bench prove's host-memory gate runs them)"},
			&cli.StringFlag{Name: "fit-design", Value: "budget", Usage: "with --fit-scenario: the design the traced run used"},
			&cli.IntFlag{Name: "fit-workers", Value: 1, Usage: "with --fit-scenario: the GPU workers the traced run used", Action: intAtLeast("fit-workers", 1)},
			&cli.StringSliceFlag{Name: "fit-repeat", Usage: "with --fit-scenario: another trace of the first --trace's run, the same command in another process (`FILE`, .json or .json.gz; repeat for more): its stage spans join the first's, so that the costs are the runs' mean rather than one process's (a synthesis's time moves from process to process; docs/simulator.md); its device ops join the device fits as every --trace's do"},
			&cli.StringSliceFlag{Name: "size-trace", Usage: "`SIZE=FILE`: a one-worker trace in the first --trace's plan (key tier, layout, MSM tables, chunk size) at another partition size, SIZE constraints (e.g. 4194275 or 4M); repeat for more: a line through the compute spans at every size gives the compute stage a fixed cost (base_ms) beside its cost per constraint, so that it scales to other sizes"},
			&cli.StringSliceFlag{Name: "ballast-trace", Usage: "a one-worker trace made under a VRAM limit (`FILE`, .json or .json.gz; repeat for more): its pool regrowths after trims, against the --trace runs' on the whole card, give the extra growth cost per GiB under the limit's ballast (device.pool_growth_ballast_ms_per_gib), and its cudaMallocs that waited for the bytes of the cudaFree just before them how long such a malloc waits per GiB freed (device.malloc_free_wait_ms_per_gib)"},
			&cli.StringFlag{Name: "ballast-limit", Usage: "the VRAM limit the --ballast-trace runs had (e.g. 16GiB): the most their cudaMemGetInfo calls saw free, against it, gives how much less than the limit the ballast left (device.limit_shortfall_mib)"},
			&cli.StringSliceFlag{Name: "beside-trace", Usage: "a trace of 2-4 workers under split, split-first or split-devsync on the whole card, no --vram-limit (`FILE`, .json or .json.gz; repeat for more): how much longer its trims and pool growths took beside another worker's kernel than the profile's one-worker figures say is device.pool_slowdown_kernel; how much longer its kernels ran beside another worker's trims and growths, device.kernel_slowdown_pool (traces with the kernels' scratch allocations, written since runs/h200-2026-12-05)"},
			&cli.StringSliceFlag{Name: "race-trace", Usage: "a trace of split-devsync with 3 or 4 workers on the card (`FILE`, .json or .json.gz; repeat for more): in its ties between a launch and another worker's device sync, the share where the worker granted its lock later called the device first is host.handoff.later_first (set directly: the model then loses more ties than the card did; bench contention calibrate --race fits it through the simulator)"},
			&cli.StringSliceFlag{Name: "latency-trace", Usage: "a trace of the production runtime on a device, one worker is enough (`FILE`, .json or .json.gz; repeat for more): how long its device calls' completions waited for their workers (late_us), by call, is host.completion_latency, and its cudaMemGetInfo calls' median time device.mem_info_ms"},
			&cli.Float64Flag{Name: "stream-gib", Usage: "the key points the traced plan streams host→device a partition as its compute runs, in GiB at the --trace runs' size (bench prove's plan: \"key points N GiB on the host (pinned), streamed\"; 0: the keys are resident): partition.stream_gib, with which a kernel loses the share of its run that needs the copy engine while another copy holds it (default: the base profile's)"},
			&cli.StringSliceFlag{Name: "copies-trace", Usage: "the first --trace's row run again beside endless host→device copies on another stream (`FILE`, .json or .json.gz, bench prove --copy-load's trace-...-copies.json; repeat for more): its compute stages against the --trace run's (and --fit-repeat's) give device.stream_stall, the share of a streaming kernel's copy work (partition.stream_gib, so with --stream-gib) it loses while another copy holds the engine"},
			&cli.StringFlag{Name: "name", Usage: "the new profile's name (default: the base's)"},
			&cli.StringFlag{Name: "out", Usage: "write the profile to `FILE` (default: stdout)"},
		},
		Action: runSimCalibrate,
	}
}

// calibration is what a profile is fitted from: the base profile, the
// partition size of the --trace runs, and each kind of trace sim calibrate
// reads (any may be empty, but not all).
type calibration struct {
	base         *sim.Profile
	constraints  int
	traces       []sim.Trace // the first gives the stage costs
	repeats      []sim.Trace // more runs of the first's, pooled with it in the fit
	sized        []sim.SizedTrace
	ballast      []sim.Trace
	ballastLimit int64
	beside       []sim.Trace
	race         []sim.Trace
	latency      []sim.Trace
	copies       []sim.Trace // the first trace's run beside endless copies
	// fitScenario, when set, fits the stage costs through the simulator on
	// the first trace's run (fitOptions: its design and workers).
	fitScenario *sim.Scenario
	fitOptions  sim.Options
	name        string // the new profile's name; "" keeps the base's
	// streamGiB, when streamSet, is the keys a partition of constraints
	// streams as its compute runs (partition.stream_gib).
	streamGiB float64
	streamSet bool
}

// fitted is a profile calibration made, with what each figure came from.
type fitted struct {
	profile *sim.Profile
	stages  []sim.StageFit
	device  []sim.DeviceFit
	notes   []string // what the fit saw and did not fit, a line each
}

func runSimCalibrate(c *cli.Context) error {
	base, err := sim.LoadProfile(c.String("profile"))
	if err != nil {
		return err
	}
	if from := c.String("device-from"); from != "" {
		dev, err := sim.LoadProfile(from)
		if err != nil {
			return fmt.Errorf("--device-from: %w", err)
		}
		base = base.WithDeviceOf(dev)
	}
	in := calibration{base: base, name: c.String("name"), streamGiB: c.Float64("stream-gib"), streamSet: c.IsSet("stream-gib")}
	if in.streamSet && !(in.streamGiB >= 0) {
		return fmt.Errorf("--stream-gib %g: want the GiB of key points a partition streams, 0 or more", in.streamGiB)
	}
	for _, f := range []struct {
		flag string
		to   *[]sim.Trace
	}{{"trace", &in.traces}, {"fit-repeat", &in.repeats}, {"ballast-trace", &in.ballast}, {"beside-trace", &in.beside}, {"race-trace", &in.race}, {"latency-trace", &in.latency}, {"copies-trace", &in.copies}} {
		if *f.to, err = readSimTraces(f.flag, c.StringSlice(f.flag)); err != nil {
			return err
		}
	}
	if len(in.copies) > 0 && len(in.traces) == 0 {
		return errors.New("--copies-trace needs --trace (the same row alone)")
	}
	if sc := c.String("fit-scenario"); sc != "" {
		if len(in.traces) == 0 {
			return errors.New("--fit-scenario needs --trace")
		}
		if in.fitScenario, err = sim.LoadScenario(sc); err != nil {
			return fmt.Errorf("--fit-scenario: %w", err)
		}
		in.fitOptions = sim.Options{Design: c.String("fit-design"), Workers: c.Int("fit-workers")}
	} else if len(in.repeats) > 0 {
		return errors.New("--fit-repeat needs --fit-scenario (the run the traces repeat)")
	}
	if len(in.traces) > 0 {
		s := c.String("constraints")
		if s == "" && in.fitScenario != nil {
			// The partitions' size the run's scenario gives (bench prove
			// writes it beside the trace).
			if n := in.fitScenario.PartitionSize(); n > 0 {
				s = strconv.Itoa(n)
			}
		}
		if in.constraints, err = parseCount(s); err != nil {
			return fmt.Errorf("--constraints: %w", err)
		}
	}
	for _, v := range c.StringSlice("size-trace") {
		size, path, ok := strings.Cut(v, "=")
		if !ok || len(in.traces) == 0 {
			return fmt.Errorf("--size-trace %q: want SIZE=FILE, beside a --trace", v)
		}
		n, err := parseCount(size)
		if err != nil {
			return fmt.Errorf("--size-trace %q: %w", v, err)
		}
		ts, err := readSimTraces("size-trace", []string{path})
		if err != nil {
			return err
		}
		in.sized = append(in.sized, sim.SizedTrace{Trace: ts[0], Constraints: n})
	}
	if s := c.String("ballast-limit"); s != "" && len(in.ballast) > 0 {
		if in.ballastLimit, err = parseBytes(s); err != nil || in.ballastLimit <= 0 {
			return fmt.Errorf("--ballast-limit %q: want a size such as 16GiB", s)
		}
	}
	f, err := in.fit()
	if err != nil {
		return err
	}
	f.print(c.App.ErrWriter, base)
	return writeProfile(c.App.Writer, c.String("out"), f.profile)
}

// fit fits the profile: the stage costs from the first trace (or through the
// simulator), the device's figures from every trace, then what each other
// kind of trace fits, in sim calibrate's order.
func (in calibration) fit() (fitted, error) {
	var f fitted
	var err error
	p := in.base
	switch {
	case len(in.traces) == 0:
		// Only what the other kinds of trace fit, added to the profile
		// as it is.
		if len(in.race) == 0 && len(in.ballast) == 0 && len(in.beside) == 0 && len(in.latency) == 0 {
			return f, errors.New("--trace: give one or more (or --race-trace, --ballast-trace, --beside-trace or --latency-trace alone, to add what they fit to --profile)")
		}
	case in.fitScenario != nil:
		if p, f.device, err = sim.CalibrateDevice(p, in.constraints, append(slices.Clone(in.traces), in.repeats...)...); err != nil {
			return f, err
		}
		runs := append([]sim.Trace{in.traces[0]}, in.repeats...)
		if p, f.stages, err = sim.FitThrough(p, in.fitScenario, in.fitOptions, in.constraints, runs...); err != nil {
			return f, err
		}
	default:
		if p, f.stages, err = sim.Calibrate(p, in.traces[0].JSON, in.constraints, in.traces[0].Name); err != nil {
			return f, err
		}
		if p, f.device, err = sim.CalibrateDevice(p, in.constraints, in.traces...); err != nil {
			return f, err
		}
	}
	if len(in.sized) > 0 {
		var sf sim.SizeFit
		if p, sf, err = sim.FitComputeSizes(p, in.traces[0], in.constraints, in.sized...); err != nil {
			return f, err
		}
		f.notes = append(f.notes, fmt.Sprintf("compute     spans at %d sizes → %g ms + %.4f ns per constraint", len(sf.Sizes), sf.BaseMs, sf.PerConstraintNs))
	}
	if len(in.ballast) > 0 {
		var bf []sim.DeviceFit
		if p, bf, err = sim.CalibrateBallast(p, in.ballastLimit, in.ballast...); err != nil {
			return f, err
		}
		if len(bf) == 0 {
			return f, errors.New("--ballast-trace: no pool regrowth after a trim in the traces (run a design that trims, such as split), no cudaMalloc that waited for the bytes of the cudaFree before it (run single without CPU stages), and no cudaMemGetInfo with its free bytes for --ballast-limit")
		}
		f.device = append(f.device, bf...)
	}
	if len(in.beside) > 0 {
		var bf sim.PoolBesideFit
		if p, bf, err = sim.CalibratePoolBeside(p, in.beside...); err != nil {
			return f, err
		}
		f.device = append(f.device, sim.DeviceFit{Field: "device.pool_slowdown_kernel", Count: bf.Beside, Value: bf.Slowdown})
		if bf.Alone > 0 {
			f.notes = append(f.notes, fmt.Sprintf("the beside traces' %d trims and growths with no kernel beside them took %g times the profile's one-worker figures (not fitted: the model charges them those)",
				bf.Alone, bf.AloneRatio))
		}
		if bf.Kernels > 0 {
			f.device = append(f.device, sim.DeviceFit{Field: "device.kernel_slowdown_pool", Count: bf.Kernels, Value: bf.KernelSlowdown})
		}
	}
	if len(in.race) > 0 {
		var rf sim.RaceFit
		if p, rf, err = sim.CalibrateRace(p, in.race...); err != nil {
			return f, err
		}
		f.device = append(f.device, sim.DeviceFit{Field: "host.handoff.later_first", Count: rf.Ties, Value: p.Host.Handoff.LaterFirst})
	}
	if len(in.latency) > 0 {
		var lf []sim.DeviceFit
		if p, lf, err = sim.CalibrateCompletionLatency(p, in.latency...); err != nil {
			return f, err
		}
		f.device = append(f.device, lf...)
	}
	if in.streamSet {
		if p, err = p.WithStream(in.streamGiB, in.constraints); err != nil {
			return f, fmt.Errorf("--stream-gib: %w", err)
		}
		f.notes = append(f.notes, fmt.Sprintf("partition.stream_gib given: %g GiB a partition at %d constraints → %g at the reference size", in.streamGiB, in.constraints, p.Partition.StreamGiB))
	}
	if len(in.copies) > 0 {
		var sf sim.StreamStallFit
		alone := append([]sim.Trace{in.traces[0]}, in.repeats...)
		if p, sf, err = sim.CalibrateStreamStall(p, in.constraints, alone, in.copies); err != nil {
			return f, fmt.Errorf("--copies-trace: %w", err)
		}
		f.device = append(f.device, sim.DeviceFit{Field: "device.stream_stall", Count: sf.Beside, Value: sf.Stall})
		f.notes = append(f.notes, fmt.Sprintf("compute beside endless copies: median %g ms of %d stages against %g ms of %d alone; the stream's duty %g (its copy work at h2d_gbps over the kernel), of which the kernels lost %g",
			sf.BesideMs, sf.Beside, sf.AloneMs, sf.Alone, sf.Duty, sf.Stall))
	}
	if in.name != "" {
		p.Name = in.name
	}
	sim.NoteDeviceFits(p, f.device)
	f.profile = p
	return f, nil
}

// print writes what each figure was fitted from, one line a stage and a
// device figure.
func (f fitted) print(w io.Writer, base *sim.Profile) {
	p := f.profile
	for _, s := range f.stages {
		sp := p.Stages[s.Stage]
		var simulated, jitter string
		if s.SimMs > 0 {
			simulated = fmt.Sprintf(" (simulated %9.3f)", s.SimMs)
		}
		if sp.Jitter != nil {
			jitter = fmt.Sprintf(", jitter %g", *sp.Jitter)
		}
		var alone string
		if s.AloneCount > 0 {
			alone = fmt.Sprintf("; not fitted through the simulator (its simulated mean did not settle), its cost the mean of the %d spans that ran alone, %.3f ms", s.AloneCount, s.AloneMs)
		}
		fmt.Fprintf(w, "%-10s %3d spans, mean %9.3f ms%s → %.4f ns per constraint%s%s\n", s.Stage, s.Count, s.MeanMs, simulated, sp.PerConstraintNs, jitter, alone)
	}
	if p.Jitter != base.Jitter {
		fmt.Fprintf(w, "jitter     the other stages' run-to-run variation (the root mean square of those above) → %g\n", p.Jitter)
	}
	for _, d := range f.device {
		fmt.Fprintf(w, "%-20s %3d ops → %g\n", d.Field, d.Count, d.Value)
	}
	for _, n := range f.notes {
		fmt.Fprintln(w, n)
	}
}

// writeProfile writes p as indented JSON to the file out, or to w when out
// is empty.
func writeProfile(w io.Writer, out string, p *sim.Profile) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if out != "" {
		return os.WriteFile(out, b, 0o644)
	}
	_, err = w.Write(b)
	return err
}

// readSimTraces reads the traces a repeated flag names (.json or .json.gz).
func readSimTraces(flag string, paths []string) ([]sim.Trace, error) {
	var out []sim.Trace
	for _, path := range paths {
		data, err := readMaybeGzip(path)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", flag, err)
		}
		out = append(out, sim.Trace{Name: path, JSON: data})
	}
	return out, nil
}

// readMaybeGzip reads a file, gunzipping it when its name ends in .gz.
func readMaybeGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer z.Close()
		r = z
	}
	return io.ReadAll(r)
}

func runSim(c *cli.Context) error {
	if c.IsSet("cluster") {
		return runClusterSim(c)
	}
	if !c.IsSet("scenario") {
		return fmt.Errorf("sim: --scenario is required (embedded: %s)", strings.Join(sim.ScenarioNames(), ", "))
	}
	scn, err := sim.LoadScenario(c.String("scenario"))
	if err != nil {
		return err
	}
	o := sim.Options{Design: c.String("design"), Workers: c.Int("workers"), VRAMGiB: c.Float64("vram-gib")}
	if c.IsSet("retry-backoff") {
		d := c.Duration("retry-backoff")
		o.RetryBackoff = &d
	}
	if c.IsSet("seed") {
		seed := c.Uint64("seed")
		o.Seed = &seed
	}
	if c.IsSet("host-mem-limit") {
		limit, err := parseHostMemLimit(c.String("host-mem-limit"), func() (int64, error) {
			return 0, fmt.Errorf("the simulated host has no memory to take a share of")
		})
		if err != nil {
			return fmt.Errorf("--host-mem-limit: %w", err)
		}
		gib := float64(limit) / (1 << 30)
		o.HostMemLimitGiB = &gib
	}
	o.SynthWorkers = c.Int("synth-workers")
	o.LockHops = c.Bool("lock-hops")
	o.CPUOrder = c.String("cpu-order")
	if h := c.Int("cpu-hold"); h >= 0 {
		o.CPUHold = &h
	}
	w := c.App.Writer
	seeds := c.Int("seeds")
	if seeds > 1 && (c.IsSet("trace") || c.IsSet("timeline")) {
		return fmt.Errorf("sim: --trace and --timeline record one seed's run; they take no --seeds")
	}
	if seeds > 1 && isTerminal(os.Stderr) {
		runs := seeds
		if c.Bool("compare") {
			runs *= len(actors.Designs) * compareWorkers
		}
		var stop func()
		o.SeedDone, stop = seedProgress(c.App.ErrWriter, runs)
		defer stop()
	}
	if c.Bool("compare") {
		if c.IsSet("trace") || c.IsSet("timeline") || c.IsSet("design") || c.IsSet("workers") {
			return fmt.Errorf("sim: --compare runs every design and worker count; it takes no --design, --workers, --trace or --timeline")
		}
		if seeds > 1 {
			sums, err := sim.CompareSeeds(scn, o, compareWorkers, seeds)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(w, sums)
			}
			return sim.WriteSeedsTable(w, sums)
		}
		reps, err := sim.Compare(scn, o, compareWorkers)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return sim.WriteCompareJSON(w, reps)
		}
		return sim.WriteCompareTable(w, reps)
	}
	if seeds > 1 {
		reps, err := sim.Seeds(scn, o, seeds)
		if err != nil {
			return err
		}
		sum := sim.Summarize(reps)
		if c.Bool("json") {
			return printJSON(w, struct {
				Summary sim.SeedSummary `json:"summary"`
				Reports []*sim.Report   `json:"reports"`
			}{sum, reps})
		}
		return sim.WriteSeedsTable(w, []sim.SeedSummary{sum})
	}
	o.Record = c.IsSet("timeline")
	var tw *trace.Writer
	if path := c.String("trace"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		defer f.Close()
		tw = trace.New(f)
		o.Observer = tw
	}
	res, err := sim.Run(scn, o)
	if err != nil {
		return err
	}
	if tw != nil {
		if err := tw.Close(); err != nil {
			return fmt.Errorf("sim: write %s: %w", c.String("trace"), err)
		}
	}
	if path := c.String("timeline"); path != "" {
		until := time.Duration(c.Float64("timeline-until") * float64(time.Second))
		draw := func(w io.Writer) error { return res.WriteTimelineWindow(w, 0, until) }
		if err := writeFile(path, draw); err != nil {
			return err
		}
	}
	if c.Bool("json") {
		return res.Report.WriteJSON(w)
	}
	return res.Report.WriteText(w)
}

func writeFile(path string, write func(w io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("sim: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sim: write %s: %w", path, err)
	}
	return nil
}

// runClusterSim runs a cluster scenario: one GPU measured on its host
// scenario with the actors, then the farm on the cluster's lease tables.
func runClusterSim(c *cli.Context) error {
	for _, f := range []string{"scenario", "design", "workers", "vram-gib", "retry-backoff", "compare", "seeds", "trace", "timeline", "timeline-until", "lock-hops"} {
		if c.IsSet(f) {
			return fmt.Errorf("sim --cluster: --%s does not apply (the host scenario named in the cluster scenario sets the GPU)", f)
		}
	}
	scn, err := sim.LoadClusterScenario(c.String("cluster"))
	if err != nil {
		return err
	}
	began := time.Now()
	rate, workers, err := sim.MeasureGPURate(scn.Host)
	if err != nil {
		return err
	}
	rep, err := sim.RunCluster(scn, rate, workers, c.Uint64("seed"))
	if err != nil {
		return err
	}
	took := time.Since(began)
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	if err := rep.WriteText(c.App.Writer); err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "  ran in %.2f s\n", took.Seconds())
	return err
}

// compareWorkers is the most workers a device has in --compare's rows.
const compareWorkers = 4

// seedProgress keeps one terminal line on w up to date while a run of many
// seeds goes: the seeded runs ended of total, and the time so far. done
// counts one (safe for concurrent use); stop ends the line.
func seedProgress(w io.Writer, total int) (done func(), stop func()) {
	var n atomic.Int64
	start := time.Now()
	draw := func() {
		k := n.Load()
		fmt.Fprintf(w, "\r[%7.1fs] %d of %d seeded runs (%.0f %%)", time.Since(start).Seconds(), k, total, 100*float64(k)/float64(total))
	}
	quit, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				draw()
			}
		}
	}()
	return func() { n.Add(1) }, func() {
		close(quit)
		<-ended
		draw()
		fmt.Fprintln(w)
	}
}
