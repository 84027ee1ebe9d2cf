package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
)

// bench pool-beside measures, with one worker, what the split designs' runs
// of several workers showed on the H200: a cudaMemPoolTrimTo, and the
// cudaMallocAsync that grows the pool back after it, take longer while a
// kernel runs on the device than alone (the simulator profile's
// device.pool_slowdown_kernel, docs/simulator.md). Each round stages a
// partition as the contention bench does, trims and grows back a buffer of
// the same size alone, then launches the partition's kernel and, --delay
// after the launch, trims and grows back the same buffer beside it. Its
// trace is one `cuzk sim calibrate --beside-trace` reads.

func benchPoolBesideCommand() *cli.Command {
	return &cli.Command{
		Name: "pool-beside",
		Usage: "time the pool's trims and growths back alone and beside a running kernel (one worker): " +
			"the simulator's device.pool_slowdown_kernel",
		Description: "Each round: a buffer of --staged bytes is allocated from the stream-ordered pool and freed, so that\n" +
			"the pool caches it; the pool is trimmed and grown back by it (alone). Then a partition is staged\n" +
			"(--staged bytes, --copy of them copied) and its kernel (--kernel long, the contention bench's\n" +
			"synthetic kernel, taking --scratch) launched; --delay after the launch the pool is trimmed and\n" +
			"grown back by the cached buffer again (beside the kernel). It prints the medians per GiB and\n" +
			"writes the calls and the kernels as a trace (--trace) that `cuzk sim calibrate --beside-trace`\n" +
			"fits device.pool_slowdown_kernel from.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "backend", Value: "emu", Usage: "emu: the emulated device; gpu: the real one (the kernel library must load)"},
			&cli.IntFlag{Name: "device", Value: 0, Usage: "gpu: the CUDA device index"},
			&cli.IntFlag{Name: "rounds", Value: 8, Usage: "rounds (one trim and growth alone, one beside the kernel each)", Action: intAtLeast("rounds", 1)},
			&cli.DurationFlag{Name: "kernel", Value: 200 * time.Millisecond, Usage: "how long the kernel runs alone"},
			&cli.DurationFlag{Name: "delay", Usage: "how long after the kernel's launch the trim beside it starts (at most half of --kernel)"},
			&cli.StringFlag{Name: "staged", Value: "4GiB", Usage: "the partition's buffer, and the buffer trimmed and grown back"},
			&cli.StringFlag{Name: "copy", Value: "1GiB", Usage: "of the partition's buffer, the bytes copied from the host before its kernel"},
			&cli.StringFlag{Name: "scratch", Value: "0", Usage: "pool memory the kernel takes while it runs"},
			&cli.StringFlag{Name: "vram-limit", Value: "140GiB", Usage: "the device memory the run may use (a ballast below it slows pool growth by itself: leave the whole card)"},
			&cli.Float64Flag{Name: "copy-gbps", Value: 55, Usage: "emu: host→device bandwidth, GB/s", Action: positiveFloat("copy-gbps")},
			&cli.BoolFlag{Name: "touch", Usage: "before each trim, the cached block holds a partition (copied into, run over by the kernel), as a design's buffer does before the next pre-stage trims it; else it is allocated and freed untouched"},
			&cli.StringFlag{Name: "trace", Usage: "write the calls and kernels as a trace to `FILE`"},
			&cli.BoolFlag{Name: "json", Usage: "print the results as JSON"},
		},
		Action: runBenchPoolBeside,
	}
}

// poolCall is one timed trim or growth back.
type poolCall struct {
	Round  int
	Trim   bool // else the growth back after it
	Beside bool // a kernel ran as it was called
	Start  time.Duration
	Took   time.Duration
	Bytes  int64 // a trim's released bytes; a growth's allocated
}

// poolBesideResult is what the probe printed: medians in ms per GiB.
type poolBesideResult struct {
	Rounds             int
	StagedBytes        int64
	Delay              time.Duration
	Touched            bool    // the cached block held a partition before each trim
	TrimAlone          float64 `json:"trim_alone_ms_per_gib"`
	TrimBeside         float64 `json:"trim_beside_ms_per_gib"`
	GrowthAlone        float64 `json:"growth_alone_ms_per_gib"`
	GrowthBeside       float64 `json:"growth_beside_ms_per_gib"`
	TrimSlowdown       float64 `json:"trim_slowdown"`
	GrowthSlowdown     float64 `json:"growth_slowdown"`
	KernelMs           float64 `json:"kernel_ms"` // the kernels' median, launch to its stream's sync
	Calls              []poolCall
	kernels            [][2]time.Duration
	trimStream, kernel gpu.Stream
}

func runBenchPoolBeside(c *cli.Context) error {
	spec := contentionSpec{kernel: c.Duration("kernel"), items: 1, maxAttempts: 1, size: 1}
	if err := spec.readBytes(c); err != nil {
		return err
	}
	if err := spec.validate(); err != nil {
		return err
	}
	delay := c.Duration("delay")
	if delay < 0 || delay > spec.kernel/2 {
		return fmt.Errorf("--delay %v: must be between 0 and half of --kernel (%v), so that the trim runs beside the kernel", delay, spec.kernel/2)
	}
	open := contentionOpener(c, spec)
	if open == nil {
		return fmt.Errorf("bench pool-beside --backend %s: want emu or gpu", c.String("backend"))
	}
	cd, err := open()
	if err != nil {
		return err
	}
	res, err := probePoolBeside(cd, spec, c.Int("rounds"), delay, c.Bool("touch"))
	err = errors.Join(err, cd.Close())
	if err != nil {
		return err
	}
	if path := c.String("trace"); path != "" {
		if err := writePoolBesideTrace(path, res); err != nil {
			return err
		}
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, res)
	}
	printPoolBeside(c.App.Writer, c.String("backend"), spec, res)
	return nil
}

// deviceCall submits op and waits for its result: how long the call took from
// the host's side.
func deviceCall(d gpu.Device, op gpu.Op) (gpu.Result, time.Duration, error) {
	ch := make(chan gpu.Result, 1)
	start := time.Now()
	d.Submit(op, func(r gpu.Result) { ch <- r })
	r := <-ch
	took := time.Since(start)
	if r.Err != nil {
		return r, took, fmt.Errorf("%s: %w", op.Kind, r.Err)
	}
	return r, took, nil
}

// probePoolBeside runs the rounds on cd's device.
func probePoolBeside(cd contentionDevice, spec contentionSpec, rounds int, delay time.Duration, touch bool) (*poolBesideResult, error) {
	d := cd.Device()
	res := &poolBesideResult{Rounds: rounds, StagedBytes: spec.staged, Delay: delay, Touched: touch,
		trimStream: d.NewStream(), kernel: d.NewStream()}
	t0 := time.Now()
	p, k := res.trimStream, res.kernel
	var short int // trims that released other than the cached block
	var first string
	// cache leaves a block of the staged size free in the pool, nothing
	// pending on it; touched, the block first holds a partition of its
	// own (copied into and run over by the kernel, whose scratch the pool
	// then caches too), as a design's buffer does before the next
	// pre-stage trims it.
	cache := func(part actors.PartitionID) error {
		r, _, err := deviceCall(d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: p, Bytes: spec.staged})
		if err != nil {
			return err
		}
		if touch {
			kern := cd.Kernel(part)
			if _, _, err := deviceCall(d, gpu.Op{Kind: gpu.OpCopyIn, Stream: p, Buffer: r.Buffer, Bytes: spec.copy, Kernel: kern}); err != nil {
				return err
			}
			if _, _, err := deviceCall(d, gpu.Op{Kind: gpu.OpCompute, Stream: p, Kernel: kern}); err != nil {
				return err
			}
		}
		if _, _, err := deviceCall(d, gpu.Op{Kind: gpu.OpFreeAsync, Stream: p, Buffer: r.Buffer}); err != nil {
			return err
		}
		_, _, err = deviceCall(d, gpu.Op{Kind: gpu.OpStreamSync, Stream: p})
		return err
	}
	// trimAndGrow trims the pool, which releases the cached block, and
	// grows it back by a buffer of the same size, which it caches again.
	trimAndGrow := func(round int, beside bool) error {
		at := time.Since(t0)
		r, took, err := deviceCall(d, gpu.Op{Kind: gpu.OpTrimPool})
		if err != nil {
			return err
		}
		// Alone the pool holds nothing but the cached block (touched:
		// and the scratch its kernel took). Beside the kernel, its
		// scratch may have been carved out of that block, so the trim
		// releases the rest, and the growth back is by that.
		aloneShort := r.Released != spec.staged
		if touch {
			aloneShort = r.Released < spec.staged
		}
		if (aloneShort && !beside) || r.Released <= 0 {
			if short == 0 {
				first = fmt.Sprintf("round %d released %s", round, gpu.FormatBytes(r.Released))
			}
			short++
		}
		res.Calls = append(res.Calls, poolCall{Round: round, Trim: true, Beside: beside, Start: at, Took: took, Bytes: r.Released})
		grow := spec.staged
		if beside && r.Released > 0 {
			grow = min(r.Released, spec.staged)
		}
		at = time.Since(t0)
		g, took, err := deviceCall(d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: p, Bytes: grow})
		if err != nil {
			return err
		}
		res.Calls = append(res.Calls, poolCall{Round: round, Beside: beside, Start: at, Took: took, Bytes: grow})
		if _, _, err := deviceCall(d, gpu.Op{Kind: gpu.OpFreeAsync, Stream: p, Buffer: g.Buffer}); err != nil {
			return err
		}
		_, _, err = deviceCall(d, gpu.Op{Kind: gpu.OpStreamSync, Stream: p})
		return err
	}
	for round := range rounds {
		// From an empty pool: cache a block, trim and grow back alone.
		if _, _, err := deviceCall(d, gpu.Op{Kind: gpu.OpTrimPool}); err != nil {
			return nil, err
		}
		if err := cache(actors.PartitionID{Job: "cached", Partition: 2 * round}); err != nil {
			return nil, err
		}
		if err := trimAndGrow(round, false); err != nil {
			return nil, err
		}
		// The partition takes the cached block; another is cached beside it.
		part := actors.PartitionID{Job: "probe", Partition: round}
		r, _, err := deviceCall(d, gpu.Op{Kind: gpu.OpMallocAsync, Stream: k, Bytes: spec.staged})
		if err != nil {
			return nil, err
		}
		buf := r.Buffer
		if err := cache(actors.PartitionID{Job: "cached", Partition: 2*round + 1}); err != nil {
			return nil, err
		}
		kern := cd.Kernel(part)
		if _, _, err := deviceCall(d, gpu.Op{Kind: gpu.OpCopyIn, Stream: k, Buffer: buf, Bytes: spec.copy, Kernel: kern}); err != nil {
			return nil, err
		}
		if _, _, err := deviceCall(d, gpu.Op{Kind: gpu.OpStreamSync, Stream: k}); err != nil {
			return nil, err
		}
		launch := time.Since(t0)
		if _, _, err := deviceCall(d, gpu.Op{Kind: gpu.OpCompute, Stream: k, Kernel: kern, Async: true}); err != nil {
			return nil, err
		}
		time.Sleep(delay - (time.Since(t0) - launch))
		if err := trimAndGrow(round, true); err != nil {
			return nil, err
		}
		if _, _, err := deviceCall(d, gpu.Op{Kind: gpu.OpStreamSync, Stream: k}); err != nil {
			return nil, err
		}
		res.kernels = append(res.kernels, [2]time.Duration{launch, time.Since(t0)})
		if _, _, err := deviceCall(d, gpu.Op{Kind: gpu.OpFreeAsync, Stream: k, Buffer: buf}); err != nil {
			return nil, err
		}
		if _, _, err := deviceCall(d, gpu.Op{Kind: gpu.OpStreamSync, Stream: k}); err != nil {
			return nil, err
		}
	}
	if short > 0 {
		return nil, fmt.Errorf("%d of %d trims released other than the %s the pool cached (%s): the pool did not keep the freed buffer, or something else held memory in it, so the probe measured nothing",
			short, 2*rounds, gpu.FormatBytes(spec.staged), first)
	}
	// A call counts as beside the kernel only if the kernel outlasted it.
	for i, c := range res.Calls {
		if c.Beside {
			kr := res.kernels[c.Round]
			res.Calls[i].Beside = c.Start >= kr[0] && c.Start+c.Took <= kr[1]
		}
	}
	res.summarize()
	return res, nil
}

func (r *poolBesideResult) summarize() {
	perGiB := func(trim, beside bool) float64 {
		var v []float64
		for _, c := range r.Calls {
			if c.Trim == trim && c.Beside == beside && c.Bytes > 0 {
				v = append(v, float64(c.Took)/1e6/(float64(c.Bytes)/float64(1<<30)))
			}
		}
		return median(v)
	}
	r.TrimAlone, r.TrimBeside = perGiB(true, false), perGiB(true, true)
	r.GrowthAlone, r.GrowthBeside = perGiB(false, false), perGiB(false, true)
	if r.TrimAlone > 0 && r.TrimBeside > 0 {
		r.TrimSlowdown = r.TrimBeside/r.TrimAlone - 1
	}
	if r.GrowthAlone > 0 && r.GrowthBeside > 0 {
		r.GrowthSlowdown = r.GrowthBeside/r.GrowthAlone - 1
	}
	var ks []float64
	for _, k := range r.kernels {
		ks = append(ks, float64(k[1]-k[0])/1e6)
	}
	r.KernelMs = median(ks)
}

func printPoolBeside(w io.Writer, backend string, spec contentionSpec, r *poolBesideResult) {
	touched := "untouched"
	if r.Touched {
		touched = "touched"
	}
	fmt.Fprintf(w, "backend %s, %s limit, kernel %v (median %.1f ms from launch to sync), staged %s (copied %s), scratch %s, trims %v after the launch, cached blocks %s, %d rounds\n",
		backend, gpu.FormatBytes(spec.limit), spec.kernel, r.KernelMs, gpu.FormatBytes(spec.staged), gpu.FormatBytes(spec.copy),
		gpu.FormatBytes(spec.scratch), r.Delay, touched, r.Rounds)
	var n [2][2]int // trim?, beside?
	for _, c := range r.Calls {
		n[b2i(c.Trim)][b2i(c.Beside)]++
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "call\talone ms/GiB\tbeside ms/GiB\tslowdown\tcalls alone/beside\t")
	fmt.Fprintf(tw, "trim\t%.3f\t%.3f\t%.3f\t%d/%d\t\n", r.TrimAlone, r.TrimBeside, r.TrimSlowdown, n[1][0], n[1][1])
	fmt.Fprintf(tw, "growth back\t%.3f\t%.3f\t%.3f\t%d/%d\t\n", r.GrowthAlone, r.GrowthBeside, r.GrowthSlowdown, n[0][0], n[0][1])
	tw.Flush()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writePoolBesideTrace writes the calls as the production trace's device
// ops ('i' events at their end, took_us, bytes) on the probe's thread, and
// the kernels as compute spans on the device: what `cuzk sim calibrate
// --beside-trace` reads.
func writePoolBesideTrace(path string, r *poolBesideResult) error {
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	var ev []map[string]any
	ev = append(ev, map[string]any{"name": "process_name", "ph": "M", "pid": 0, "args": map[string]any{"name": "device 0 (pool-beside probe)"}})
	for i, k := range r.kernels {
		ev = append(ev, map[string]any{"name": "compute", "ph": "X", "pid": 0, "tid": 1, "ts": us(k[0]), "dur": us(k[1] - k[0]),
			"args": map[string]any{"partition": fmt.Sprintf("probe/%d", i)}})
	}
	for _, c := range r.Calls {
		name := gpu.OpMallocAsync.String()
		if c.Trim {
			name = gpu.OpTrimPool.String()
		}
		ev = append(ev, map[string]any{"name": name, "ph": "i", "s": "t", "pid": 0, "tid": 0, "ts": us(c.Start + c.Took),
			"args": map[string]any{"partition": fmt.Sprintf("probe/%d", c.Round), "took_us": us(c.Took), "bytes": c.Bytes, "waited": false}})
	}
	slices.SortStableFunc(ev, func(a, b map[string]any) int {
		ta, _ := a["ts"].(float64)
		tb, _ := b["ts"].(float64)
		switch {
		case ta < tb:
			return -1
		case ta > tb:
			return 1
		}
		return 0
	})
	data, err := json.Marshal(map[string]any{"traceEvents": ev})
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("--trace: %w", err)
	}
	return nil
}
