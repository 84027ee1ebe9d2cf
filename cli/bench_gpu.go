package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/metrics"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/sim"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/trace"
)

// benchGPUFlags are bench prove's flags for --backend gpu.
func benchGPUFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.IntFlag{Name: "partitions", Value: 10, Usage: "gpu: partitions per job", Action: partitionsFlag("partitions")},
		&cli.IntFlag{Name: "jobs", Value: 1, Usage: "gpu: jobs submitted at once per design and worker count; s/job is their wall time over the count, GPU busy is over them all (a stream of jobs, where synthesis runs ahead of the GPU)", Action: intBetween("jobs", 1, 1000)},
		&cli.StringFlag{Name: "designs", Value: strings.Join(actors.Designs, ","), Usage: "gpu: lock designs to run, comma separated"},
		&cli.StringFlag{Name: "workers", Value: "1,2,3", Usage: "gpu: workers per device, comma separated"},
		&cli.StringFlag{Name: "vram-limits", Value: "0", Usage: "gpu: device memory limits to run under, comma separated (0: the whole card)"},
		&cli.StringFlag{Name: "gpu-lib", Usage: "gpu: path of libcuzkgpu.so (default: $CUZK_GPU_LIB, next to cuzk, then build/)"},
		&cli.StringFlag{Name: "trace-dir", Usage: "gpu: write one Chrome trace per row into this directory (trace-<design>-w<workers>-<limit>-log<n>.json, the domain 2^n), and beside it the row as a simulator scenario (scenario-<design>-w<workers>-<limit>-log<n>.json: its jobs, host gate and the device memory its plan leaves the designs; a one-worker row's is the --fit-scenario of cuzk sim calibrate)"},
		&cli.DurationFlag{Name: "card-every", Value: 500 * time.Millisecond, Usage: "gpu: sample nvidia-smi's SM clock, temperature, power and clock event reasons this often over each row and print them after it (every card it lists; 0: not at all, nor where nvidia-smi is missing)"},
		&cli.IntFlag{Name: "gnark-runs", Value: 1, Usage: "gpu: timed runs of gnark's groth16.Prove (one partition) for the CPU figure; 0 skips it", Action: intAtLeast("gnark-runs", 0)},
		&cli.IntFlag{Name: "partition-runs", Value: 5, Usage: "gpu: timed runs of one partition alone through the GPU pipeline (the median is printed); 0 skips them", Action: intAtLeast("partition-runs", 0)},
		&cli.StringFlag{Name: "layout", Value: "auto", Usage: "gpu: the partitions' layout on the device: auto (the plan's), whole (all six vectors staged) or compact (two vectors; compute copies in the rest)"},
		&cli.StringFlag{Name: "msm-tables", Value: "auto", Usage: "gpu: precomputed MSM tables of resident keys (copies of the points times powers of two: one set of buckets for several windows): auto (when the MSMs are whole and the tables fit beside two partitions) or off",
			Action: func(_ *cli.Context, v string) error {
				if err := gpuprove.CheckMSMTables(v); err != nil {
					return fmt.Errorf("--msm-tables %s: %w", v, err)
				}
				return nil
			}},
		&cli.StringFlag{Name: "key-tier", Value: "auto", Usage: "gpu: where the keys' points are kept, as prove's --key-tier: auto, device, pinned, host or disk (streamed from the key set's points file, written next to the keys on first use)",
			Action: func(_ *cli.Context, v string) error {
				if err := gpuprove.CheckKeyTier(v); err != nil {
					return fmt.Errorf("--key-tier %s: %w", v, err)
				}
				return nil
			}},
		&cli.BoolFlag{Name: "ntt-in-place", Usage: "gpu: run the NTTs in place (a bit-reversal pass, no scratch vector) whatever the plan would choose"},
		&cli.StringFlag{Name: "chunk-points", Value: "0", Usage: "gpu: the most points one MSM call sees, a power of two from 64K to 4M (0: the plan's choice); with --key-tier, --layout and --ntt-in-place a smaller run can take a larger one's plan, to calibrate the simulator on it",
			Action: func(_ *cli.Context, v string) error { _, err := chunkPoints(v); return err }},
		bg2Flag(),
		copiesInOrderFlag(),
		&cli.StringFlag{Name: "copy-load", Value: "off", Usage: "gpu: run each row beside another stream's host→device copies of a --copy-load-bytes pinned buffer, one after another for the whole row, on every device (on), or alone and then again beside them (also), or alone (off); a row beside them is named design+copies and its trace trace-...-copies.json: a one-worker row's against the row alone is sim calibrate's --copies-trace (device.stream_stall, what another copy costs a kernel that streams its keys)",
			Action: func(_ *cli.Context, v string) error { _, err := copyLoadModes(v); return err }},
		&cli.StringFlag{Name: "copy-load-bytes", Value: "256MiB", Usage: "gpu: the --copy-load buffer, pinned on the host and as much on the device, outside the plan's memory",
			Action: func(_ *cli.Context, v string) error {
				if n, err := parseBytes(v); err != nil || n <= 0 {
					return fmt.Errorf("--copy-load-bytes %q: want a size such as 256MiB", v)
				}
				return nil
			}},
		&cli.BoolFlag{Name: "lock-hops", Usage: "gpu: send every lease request through its lock's actor, a free mutex's too, as the runtime did before free mutexes were taken in place (the runtime of the proving runs before runs/h200-2026-12-05d; `cuzk sim --lock-hops` predicts it)"},
	}, hostMemFlags()...)
}

// gpuBenchRow is one job under one design, worker count and VRAM limit.
type gpuBenchRow struct {
	design      string
	workers     int
	vram        int64
	wall        time.Duration
	busy        float64
	computeWait [2]time.Duration // p50, p99 of the lock that gates kernels
	stageWait   [2]time.Duration // p50, p99 of the staging lock (mem, budget), if any
	ooms, falls int
	retries     int
	verified    int
	computeMean time.Duration
	held        int           // most partitions in host memory at once (the host-memory gate)
	readyWait   time.Duration // mean wait of a prepared partition for a GPU worker
	host        hostUse       // the process's collector, CPU and page faults over the row
	cards       []cardUse     // what nvidia-smi reported of the cards over the row, if sampled
	copies      bool          // run beside --copy-load
	copyGBps    []float64     // what the copy load moved over the row, device by device
}

// benchProveGPU proves one job per design × workers × VRAM limit on the GPU
// and prints a table, with gnark's CPU prover on the same circuit beside it.
func benchProveGPU(c *cli.Context, k *prover.Keys) error {
	nparts := c.Int("partitions")
	if nparts < 1 {
		return fmt.Errorf("--partitions must be at least 1")
	}
	njobs := c.Int("jobs")
	designs := strings.Split(c.String("designs"), ",")
	for _, d := range designs {
		if err := (actors.Config{Design: d}).WithDefaults().Validate(); err != nil {
			return fmt.Errorf("--designs: %w", err)
		}
	}
	workers, err := parseIndexList(c.String("workers"))
	if err != nil {
		return fmt.Errorf("--workers: %w", err)
	}
	var limits []int64
	for _, s := range strings.Split(c.String("vram-limits"), ",") {
		if strings.TrimSpace(s) == "0" {
			limits = append(limits, 0)
			continue
		}
		v, err := parseBytes(s)
		if err != nil {
			return fmt.Errorf("--vram-limits: %w", err)
		}
		limits = append(limits, v)
	}
	traceDir := c.String("trace-dir")
	if traceDir != "" {
		if err := os.MkdirAll(traceDir, 0o755); err != nil {
			return fmt.Errorf("--trace-dir: %w", err)
		}
	}
	out, err := os.MkdirTemp("", "cuzk-bench-proofs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	// nvidia-smi's fields, asked once; each row then samples with them.
	var probe *cardProbe
	if c.Duration("card-every") > 0 {
		probe = probeCards(c.Context)
	}

	bg2, err := bg2Choice(c)
	if err != nil {
		return err
	}
	chunk, err := chunkPoints(c.String("chunk-points"))
	if err != nil {
		return err
	}
	copyModes, err := copyLoadModes(c.String("copy-load"))
	if err != nil {
		return err
	}
	copyBytes, err := parseBytes(c.String("copy-load-bytes")) // positive: the flag's Action checked it
	if err != nil {
		return err
	}
	var rows []gpuBenchRow
	var warm time.Duration
	var device string
	var part prover.Timings       // one partition alone, on the whole card
	var zeros, ones, others int64 // wire scalars of the split MSMs
	inMemory := c.String("keys") == keysInMemory
	if inMemory && c.Int("gnark-runs") == 0 && k.SolverName() == "cuzk" {
		// Keys made for this run: nothing needs the system's instructions
		// once cuzk's solver has its program (9 GiB at porep-sha's 2^26).
		if err := k.ReleaseSystem(); err != nil {
			return err
		}
		fmt.Fprintf(c.App.ErrWriter, "bench: the constraint system's instructions released (cuzk's solver has its program)\n")
	}
	for _, limit := range limits {
		g, err := gpuprove.Open(gpuprove.Options{Library: c.String("gpu-lib"), VRAMLimit: limit, BG2: bg2 != "cpu", SerialG2: bg2 == "gpu-serial",
			Layout: c.String("layout"), NTTInPlace: c.Bool("ntt-in-place"), KeyTier: c.String("key-tier"), ChunkPoints: chunk,
			MSMTables: c.String("msm-tables"), PinnedLimit: stagingPinnedLimit(c), CopiesInOrder: c.Bool("copies-in-order")})
		if err != nil {
			return err
		}
		device = g.Devices[0].Info().Name
		// Pinned staging for every partition the rows may hold at once (each
		// row's jobs, as far as the host-memory gate and the pinned limit
		// go): synthesis runs ahead, and the first row must not pay the
		// pinning, which took porep-sha's first row at 2^22 with 4 jobs from
		// 64 ms of compute a partition to 309 (cudaHostAlloc pins about
		// 1.6 GB/s, docs/cuda-facts.md, and 25 more buffers than the later
		// rows held were pinned in it). The
		// solver's memory for as many solves as run at once, faulted in: a
		// reserved result the warm-up had not written cost five of the six
		// first syntheses of sha at 2^25 3 s each, in whichever design ran
		// first.
		cfg, err := hostSettings(c, actors.Config{Design: designs[0], WorkersPerDevice: slices.Max(workers)}.WithDefaults(), len(g.GPUDevices()))
		if err != nil {
			g.Close()
			return err
		}
		if inMemory {
			// Keys made for this run, streamed from pinned memory: moved
			// there rather than copied, so that the host holds them once.
			start := time.Now()
			moved, err := g.Backend.PinKeysIfStreamed(k)
			if err != nil {
				g.Close()
				return fmt.Errorf("move the keys' points into pinned memory: %w", err)
			}
			if moved {
				fmt.Fprintf(c.App.ErrWriter, "bench: the keys' %s points moved into pinned memory in %.1f s\n", movedSets(k), time.Since(start).Seconds())
			}
		}
		devs, hostBytes := len(g.GPUDevices()), prover.HostFootprint(k)
		solves := min(solvesAtOnce(cfg, devs, hostBytes), nparts*njobs)
		pinned := stagingToPin(cfg, devs, hostBytes, nparts*njobs)
		if cfg.HostMemLimit == 0 {
			pinned = max(slices.Max(workers), nparts, pinned)
		}
		if err := preloadKeys(g.Backend, k, solves, pinned); err != nil {
			g.Close()
			return err
		}
		if limit := capHeapToHost(); limit > 0 {
			fmt.Fprintf(c.App.ErrWriter, "bench: Go heap limited to %.1f GiB (what the host has beside pinned memory)\n", float64(limit)/(1<<30))
		}
		var plan *gpuprove.Plan
		if p, err := g.Backend.Plan(g.Backend.Devices()[0], k); err == nil {
			fmt.Fprintf(c.App.ErrWriter, "bench: limit %s, %s", limitName(limit), p)
			plan = &p
		}
		// One partition outside the timings: the kernels' first launches,
		// the pool's first growth.
		start := time.Now()
		if err := benchWarmUp(c.Context, k, g.Backend); err != nil {
			g.Close()
			return err
		}
		warm = time.Since(start)
		if part == nil && c.Int("partition-runs") > 0 {
			if part, err = benchPartition(c.Context, k, g.Backend, c.Int("partition-runs")); err != nil {
				g.Close()
				return err
			}
		}
		var copies *copyLoad
		if slices.Contains(copyModes, true) {
			if copies, err = newCopyLoad(g.Devices, copyBytes); err != nil {
				return errors.Join(err, g.Close())
			}
			fmt.Fprintf(c.App.ErrWriter, "bench: %s\n", copies.what())
		}
		closeAll := func() error {
			var err error
			if copies != nil {
				err = copies.close()
			}
			return errors.Join(err, g.Close())
		}
		for _, design := range designs {
			for _, w := range workers {
				for _, beside := range copyModes {
					var load *copyLoad
					if beside {
						load = copies
					}
					row, err := benchGPUJob(c, k, g, plan, probe, load, design, w, limit, nparts, njobs, out, traceDir)
					if err != nil {
						return errors.Join(err, closeAll())
					}
					// The whole row as it comes, so a run cut short still reports.
					fmt.Fprintf(c.App.ErrWriter, "bench: %s × %d workers%s, limit %s: %.2f s, busy %.0f%%, compute wait p50 %s p99 %s, stage wait p50 %s p99 %s, compute mean %s, %d OOMs, %d fallbacks, %d retries, %d/%d verified; host: %d partitions held at most, ready wait mean %s; %s\n",
						design, w, copiesNote(row), limitName(limit), row.wall.Seconds(), 100*row.busy, msWait(row.computeWait[0]), msWait(row.computeWait[1]),
						msWait(row.stageWait[0]), msWait(row.stageWait[1]), msWait(row.computeMean), row.ooms, row.falls, row.retries, row.verified, nparts*njobs,
						row.held, msWait(row.readyWait), row.host)
					for _, u := range row.cards {
						fmt.Fprintf(c.App.ErrWriter, "bench:   %s\n", u)
					}
					rows = append(rows, row)
				}
			}
		}
		z, o, other := g.Backend.SplitStats()
		zeros, ones, others = zeros+z, ones+o, others+other
		if err := closeAll(); err != nil {
			return err
		}
	}
	var gnarkPart, gnarkSolve time.Duration
	if runs := c.Int("gnark-runs"); runs > 0 {
		if gnarkPart, gnarkSolve, err = benchGnark(k, runs); err != nil {
			return err
		}
	}

	jobsNote := ""
	if njobs > 1 {
		jobsNote = fmt.Sprintf(" (%d jobs at once a row)", njobs)
	}
	fmt.Fprintf(c.App.Writer, "circuit %s, %d constraints (domain 2^%d), %d partitions per job%s, %s, b_g2 on the %s, %s's solver; GPU warm-up partition %.2f s; %d CPUs, GOMAXPROCS %d\n",
		k.Circuit, k.Constraints(), log2(k.PK.Domain.Cardinality), nparts, jobsNote, device, bg2Name(bg2), k.SolverName(), warm.Seconds(), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	printPartitionComparison(c.App.Writer, part, c.Int("partition-runs"), gnarkPart, gnarkSolve, c.Int("gnark-runs"))
	if all := zeros + ones + others; all > 0 {
		fmt.Fprintf(c.App.Writer, "wire scalars of the A, B, K MSMs: %.1f%% zero (dropped), %.1f%% one (batch additions), %.1f%% other (Pippenger)\n",
			100*float64(zeros)/float64(all), 100*float64(ones)/float64(all), 100*float64(others)/float64(all))
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "design\tworkers\tVRAM limit\ts/job\tGPU busy\tcompute wait p50\tp99\tstage wait p50\tp99\tcompute mean\tOOMs\tfallbacks\tretries\tverified\theld\tready wait\t")
	best := time.Duration(0)
	for _, r := range rows {
		if best == 0 || r.wall < best {
			best = r.wall
		}
		sw50, sw99 := "-", "-"
		if r.design != "single" {
			sw50, sw99 = msWait(r.stageWait[0]), msWait(r.stageWait[1])
		}
		name := r.design
		if r.copies {
			name += "+copies"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.2f\t%.0f%%\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d/%d\t%d\t%s\t\n", name, r.workers, limitName(r.vram),
			r.wall.Seconds(), 100*r.busy, msWait(r.computeWait[0]), msWait(r.computeWait[1]), sw50, sw99, msWait(r.computeMean),
			r.ooms, r.falls, r.retries, r.verified, nparts*njobs, r.held, msWait(r.readyWait))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if gnarkPart > 0 {
		cpuJob := time.Duration(nparts) * gnarkPart
		fmt.Fprintf(c.App.Writer, "gnark groth16.Prove (CPU, all cores): %.2f s per partition, %.2f s per %d-partition job; best GPU job %.2f s: %.1f× faster\n",
			gnarkPart.Seconds(), cpuJob.Seconds(), nparts, best.Seconds(), float64(cpuJob)/float64(best))
	}
	return nil
}

// benchTraceName is the file of one bench prove row's trace: its design,
// workers, VRAM limit and domain (2^logN), so that the rows of several
// sizes in one run keep a trace each.
func benchTraceName(design string, workers int, limit int64, logN int) string {
	return fmt.Sprintf("trace-%s-w%d-%s-log%d.json", design, workers, strings.ReplaceAll(limitName(limit), " ", ""), logN)
}

// benchScenarioName is the file of the scenario written beside a row's
// trace (benchTraceName): scenario-<design>-w<workers>-<limit>-log<n>.json.
func benchScenarioName(traceName string) string {
	return "scenario-" + strings.TrimPrefix(traceName, "trace-")
}

// benchScenario is a bench prove row as the simulator takes it: the jobs
// (count, partitions, constraints a partition, the host memory one holds
// under the gate), the engine (design, workers, host-memory gate, synthesis
// slots) and the device memory the plan leaves the designs. The device has
// the VRAM limit, or on the whole card the memory the plan found free, and
// what the plan holds beside the partitions (keys, chunk buffers, kernel
// scratch, tables) is resident. Of a one-worker row it is the --fit-scenario
// of `cuzk sim calibrate`; with its workers, jobs or gate changed, and the
// calibrated profile set, the scenario of a configuration to predict. The
// profile is left to the user (the simulator's default until one is set).
func benchScenario(name, circuit string, cfg actors.Config, plan gpuprove.Plan, limit int64, devices, constraints int,
	hostBytes int64, njobs, nparts int) sim.Scenario {
	const gib = float64(1 << 30)
	vram := plan.Free
	if limit > 0 {
		vram = limit
	}
	return sim.Scenario{
		Name: name,
		Description: fmt.Sprintf("cuzk bench prove's row as it ran: %d job(s) of %d %s partitions of %d constraints at once, %s with %d workers a device, "+
			"VRAM limit %s; the device memory plan found %s free and holds %s beside the partitions (one partition %s); host-memory gate %s, %d synthesis slots. "+
			"Set profile to the calibrated one (cuzk sim calibrate --fit-scenario this file).",
			njobs, nparts, circuit, constraints, cfg.Design, cfg.WorkersPerDevice, limitName(limit), gpu.FormatBytes(plan.Free),
			gpu.FormatBytes(plan.Reserved()), gpu.FormatBytes(plan.Partition), hostGateName(cfg.HostMemLimit), cfg.SynthWorkers),
		Seed:             1,
		Devices:          devices,
		VRAMGiB:          sim.Round(float64(vram)/gib, 2),
		ResidentGiB:      sim.Round(float64(plan.Reserved())/gib, 2),
		Design:           cfg.Design,
		WorkersPerDevice: cfg.WorkersPerDevice,
		HostMemLimitGiB:  sim.Round(float64(cfg.HostMemLimit)/gib, 3),
		SynthWorkers:     cfg.SynthWorkers,
		LockHops:         cfg.LockHops,
		Jobs: []sim.JobConfig{{ID: circuit, Count: njobs, Partitions: nparts, Size: constraints, Priority: "NORMAL",
			HostGiB: sim.Round(float64(hostBytes)/gib, 3)}},
	}
}

func hostGateName(v int64) string {
	if v <= 0 {
		return "off"
	}
	return gpu.FormatBytes(v)
}

// writeBenchScenario writes sc as indented JSON to path.
func writeBenchScenario(path string, sc sim.Scenario) error {
	data, err := json.MarshalIndent(sc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func limitName(v int64) string {
	if v == 0 {
		return "card"
	}
	return gpu.FormatBytes(v)
}

func msWait(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

// benchWarmUp proves one partition with the GPU backend, outside the actors.
func benchWarmUp(ctx context.Context, k *prover.Keys, b prover.Backend) error {
	w, err := prover.Witness(k, []byte("warm-up"), 0)
	if err != nil {
		return err
	}
	if _, _, err := prover.Prove(ctx, k, b, w, nil); err != nil {
		return fmt.Errorf("GPU warm-up proof: %w", err)
	}
	return nil
}

// benchGnark is the median time of gnark's own prover on one partition, and
// of the witness solving it includes (the R1CS solver alone).
func benchGnark(k *prover.Keys, runs int) (prove, solve time.Duration, err error) {
	w, err := prover.Witness(k, []byte("bench"), 0)
	if err != nil {
		return 0, 0, err
	}
	var ds, ss []time.Duration
	for i := 0; i < runs; i++ {
		start := time.Now()
		if _, err := groth16.Prove(k.CS, k.PK, w); err != nil {
			return 0, 0, fmt.Errorf("gnark prove: %w", err)
		}
		ds = append(ds, time.Since(start))
		start = time.Now()
		if err := gnarkSolve(k, w); err != nil {
			return 0, 0, fmt.Errorf("gnark solve: %w", err)
		}
		ss = append(ss, time.Since(start))
	}
	return median(ds), median(ss), nil
}

// gnarkSolve solves w with gnark's R1CS solver. A circuit with commitments
// needs its commitment hint, which gnark's prover supplies itself: there the
// solve is the staged prover's with gnark's solver, which computes the
// commitments as gnark's prover does (on the host).
func gnarkSolve(k *prover.Keys, w witness.Witness) error {
	if _, ok := k.CS.CommitmentInfo.(constraint.Groth16Commitments); !ok || len(k.PK.CommitmentKeys) == 0 {
		_, err := k.CS.Solve(w, k.SolverOptions...)
		return err
	}
	gk := &prover.Keys{Circuit: k.Circuit, Layout: k.Layout, CS: k.CS, PK: k.PK, VK: k.VK,
		Solver: prover.SolverGnark, SolverOptions: k.SolverOptions}
	sol, err := prover.SynthesizeWith(gk, w)
	if err != nil {
		return err
	}
	sol.Release()
	return nil
}

// benchPartition proves one partition alone through the staged pipeline on
// the GPU backend, runs times, and returns the stage times of the median
// run (by total).
func benchPartition(ctx context.Context, k *prover.Keys, b prover.Backend, runs int) (prover.Timings, error) {
	w, err := prover.Witness(k, []byte("bench"), 0)
	if err != nil {
		return nil, err
	}
	var all []prover.Timings
	for i := 0; i < runs; i++ {
		_, t, err := prover.Prove(ctx, k, b, w, nil)
		if err != nil {
			return nil, fmt.Errorf("GPU partition: %w", err)
		}
		all = append(all, t)
	}
	slices.SortFunc(all, func(a, b prover.Timings) int { return int(partitionWall(a) - partitionWall(b)) })
	return all[(len(all)-1)/2], nil
}

// partitionWall is one partition's time alone: b_g2 runs beside stage and
// compute.
func partitionWall(t prover.Timings) time.Duration {
	return t["synthesize"] + t["prep"] + max(t["stage"]+t["compute"], t["b_g2"]) + t["finalize"]
}

// printPartitionComparison sets one partition on the GPU against gnark's
// prover, whole and from a solved witness (without the R1CS solver, which
// both run on the CPU).
func printPartitionComparison(w io.Writer, t prover.Timings, runs int, gnark, gnarkSolve time.Duration, gnarkRuns int) {
	if t == nil {
		return
	}
	whole := partitionWall(t)
	proving := whole - t["synthesize"]
	fmt.Fprintf(w, "one partition on the GPU (median of %d): %.3f s (synthesize %.3f, prep %.3f, stage %.3f, compute %.3f, b_g2 %.3f, finalize %.3f incl. verify)\n",
		runs, whole.Seconds(), t["synthesize"].Seconds(), t["prep"].Seconds(), t["stage"].Seconds(), t["compute"].Seconds(), t["b_g2"].Seconds(), t["finalize"].Seconds())
	if gnark <= 0 {
		return
	}
	fmt.Fprintf(w, "gnark groth16.Prove, one partition (median of %d): %.3f s, of which solving %.3f s; speed-up whole %.1f×, from a solved witness %.1f× (%.3f s against %.3f s)\n",
		gnarkRuns, gnark.Seconds(), gnarkSolve.Seconds(), float64(gnark)/float64(whole),
		float64(gnark-gnarkSolve)/float64(proving), proving.Seconds(), (gnark - gnarkSolve).Seconds())
}

func benchGPUJob(c *cli.Context, k *prover.Keys, g *gpuprove.GPUs, plan *gpuprove.Plan, probe *cardProbe, copies *copyLoad, design string, workers int, limit int64,
	nparts, njobs int, out, traceDir string) (gpuBenchRow, error) {
	row := gpuBenchRow{design: design, workers: workers, vram: limit, copies: copies != nil}
	m := metrics.New()
	waits := &leaseWaits{byLock: map[string][]time.Duration{}}
	obs := actors.Observers{m, waits}
	cfg, err := hostSettings(c, actors.Config{Design: design, WorkersPerDevice: workers}.WithDefaults(), len(g.GPUDevices()))
	if err != nil {
		return row, err
	}
	cfg.LockHops = c.Bool("lock-hops")
	var tw *trace.Writer
	var tf *os.File
	if traceDir != "" {
		name := benchTraceName(design, workers, limit, log2(k.PK.Domain.Cardinality))
		if copies != nil {
			name = strings.TrimSuffix(name, ".json") + "-copies.json"
		}
		if plan != nil {
			scName := benchScenarioName(name)
			sc := benchScenario(strings.TrimSuffix(scName, ".json"), k.Circuit, cfg, *plan, limit, len(g.GPUDevices()),
				k.Constraints(), prover.HostFootprint(k), njobs, nparts)
			if err := writeBenchScenario(filepath.Join(traceDir, scName), sc); err != nil {
				return row, fmt.Errorf("--trace-dir: %w", err)
			}
		}
		f, err := os.Create(filepath.Join(traceDir, name))
		if err != nil {
			return row, fmt.Errorf("--trace-dir: %w", err)
		}
		tf, tw = f, trace.NewDeferred(f, trace.Interval)
		obs = append(obs, tw)
	}
	var subs []runner.Submission
	for j := range njobs {
		seed := []byte(fmt.Sprintf("bench-%s-%d", design, workers))
		id := fmt.Sprintf("bench-%s-w%d", design, workers)
		if njobs > 1 {
			seed, id = fmt.Appendf(seed, "-%d", j), fmt.Sprintf("%s-j%d", id, j)
		}
		subs = append(subs, runner.Submission{JobRequest: runner.JobRequest{ID: id, Keys: k, Seed: seed, Partitions: nparts},
			Out: filepath.Join(out, id)})
	}
	var stopCopies func() ([]float64, error)
	if copies != nil {
		if stopCopies, err = copies.run(c.Context); err != nil {
			if tw != nil {
				tw.Close()
				tf.Close()
			}
			return row, err
		}
	}
	cards := probe.watch(c.Duration("card-every"))
	before := readHostUse()
	reports, wall, err := benchJobs(c.Context, runner.ServiceOptions{Backend: g.Backend, Devices: g.GPUDevices(), Config: cfg,
		Observer: obs, Seed: uint64(time.Now().UnixNano())}, subs)
	row.host = readHostUse().since(before)
	row.cards = cards.stop()
	if stopCopies != nil {
		var cerr error
		row.copyGBps, cerr = stopCopies()
		err = errors.Join(err, cerr)
	}
	if tw != nil {
		if cerr := tw.Close(); cerr != nil && err == nil {
			err = cerr
		}
		tf.Close()
	}
	if err != nil {
		return row, err
	}
	if njobs == 1 {
		wall = time.Duration(reports[0].WallMS * float64(time.Millisecond))
	}
	row.wall = wall / time.Duration(njobs)
	for _, r := range reports {
		row.verified += r.Proved
	}
	s := m.Summary()
	row.retries = s.Retried
	row.held, row.readyWait = s.Host.PeakPartitions, s.Host.Ready.Mean
	for _, d := range s.Devices {
		row.busy, row.ooms, row.falls = d.Busy, d.OOMs, d.Fallbacks
	}
	for _, st := range s.Stages {
		if st.Stage == actors.StageCompute.String() {
			row.computeMean = st.Mean
		}
	}
	d, err := actors.LookupDesign(design)
	if err != nil {
		return row, err
	}
	row.computeWait = waits.percentiles(d.Compute)
	row.stageWait = waits.percentiles(d.Staging)
	return row, nil
}

// leaseWaits keeps every lease's wait, by lock.
type leaseWaits struct {
	mu     sync.Mutex
	byLock map[string][]time.Duration
}

func (l *leaseWaits) Observe(e actors.Event) {
	if e.Kind != actors.EvLeaseGrant {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byLock[e.Lock] = append(l.byLock[e.Lock], e.Took)
}

// percentiles returns the p50 and p99 waits of a lock (nearest rank).
func (l *leaseWaits) percentiles(lock string) [2]time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	ds := slices.Clone(l.byLock[lock])
	if len(ds) == 0 {
		return [2]time.Duration{}
	}
	slices.Sort(ds)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(ds))+0.999999) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return [2]time.Duration{rank(0.50), rank(0.99)}
}

func bg2Name(choice string) string {
	if choice == "cpu" {
		return "CPU"
	}
	return "GPU"
}

// benchJobs proves jobs, submitted at once, on a service of its own over an
// in-memory store, and returns their reports and the time until the last
// was done.
func benchJobs(ctx context.Context, opt runner.ServiceOptions, subs []runner.Submission) ([]runner.JobStatus, time.Duration, error) {
	st, err := store.OpenInMemory()
	if err != nil {
		return nil, 0, err
	}
	defer st.Close()
	opt.Store = st
	svc, err := runner.StartService(opt)
	if err != nil {
		return nil, 0, err
	}
	defer svc.Close(context.Background())
	start := time.Now()
	reps, err := svc.Run(ctx, subs, 30*time.Second)
	if err != nil {
		return nil, 0, err
	}
	return reps, time.Since(start), nil
}

// chunkPoints reads --chunk-points: 0, or a power of two within the
// planner's chunk sizes.
func chunkPoints(s string) (int, error) {
	if strings.TrimSpace(s) == "0" {
		return 0, nil
	}
	n, err := parseCount(s)
	if err != nil {
		return 0, fmt.Errorf("--chunk-points: %w", err)
	}
	if n < gpuprove.MinChunkPoints || n > gpuprove.MaxChunkPoints || n&(n-1) != 0 {
		return 0, fmt.Errorf("--chunk-points %s: want 0 or a power of two from %d to %d", s, gpuprove.MinChunkPoints, gpuprove.MaxChunkPoints)
	}
	return n, nil
}
