package cli

import (
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpu"
)

// kernelBenchFlags are shared by bench msm and bench ntt.
func kernelBenchFlags(defaultSizes string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "backend", Value: "gpu", Usage: "what to time: gpu (with the CPU figure from the same run) or cpu"},
		&cli.StringFlag{Name: "log-sizes", Value: defaultSizes, Usage: "log2 of the sizes, comma separated"},
		&cli.IntFlag{Name: "runs", Value: 7, Usage: "timed GPU runs per size, after one warm-up", Action: intAtLeast("runs", 1)},
		&cli.IntFlag{Name: "cpu-runs", Value: 1, Usage: "timed CPU runs per size (0 skips the CPU figure)", Action: intAtLeast("cpu-runs", 0)},
		&cli.StringFlag{Name: "gpu-lib", Usage: "path of " + cuda.LibraryName + " (default: $" + cuda.EnvLibrary + ", next to the executable, build/)"},
	}
}

func benchMSMCommand() *cli.Command {
	flags := append(kernelBenchFlags("20,22,24"),
		&cli.IntFlag{Name: "window", Usage: "MSM window size in bits (0: chosen by size)", Action: intBetween("window", 0, 24)},
		&cli.Float64Flag{Name: "bits-fraction", Usage: "fraction of the scalars that are 0 or 1 (half each), as in bit-heavy witnesses", Action: fraction("bits-fraction")},
		&cli.BoolFlag{Name: "split", Usage: "also time the MSM that drops zero scalars and adds the points of one scalars apart"},
		&cli.StringFlag{Name: "windows", Usage: "also time the GPU MSM at each of these window sizes in bits, comma separated (e.g. 14,15,16,17,18): the sweep behind the library's window table; each result must equal the chosen window's"},
		&cli.StringFlag{Name: "tables", Usage: "also time GPU MSMs over precomputed tables of the points, comma separated as COPIES or COPIES:WINDOW (COPIES 0: one per window; WINDOW 0 or absent: the library's choice), e.g. 0,2,4:16; each table's build is timed once and its result must equal the plain MSM's"})
	return &cli.Command{
		Name:  "msm",
		Usage: "G1 multi-scalar multiplication: GPU (points and scalars on the device) against gnark-crypto MultiExp on all cores",
		Flags: flags,
		Action: func(c *cli.Context) error {
			if f := c.Float64("bits-fraction"); f < 0 || f > 1 {
				return fmt.Errorf("--bits-fraction %v: want a fraction in [0, 1]", f)
			}
			windows, err := parseWindows(c.String("windows"))
			if err != nil {
				return err
			}
			tables, err := parseTables(c.String("tables"))
			if err != nil {
				return err
			}
			kb, err := newKernelBench(c)
			if err != nil {
				return err
			}
			kb.windows, kb.tables = windows, tables
			return kb.msm(c.Int("window"), c.Float64("bits-fraction"), c.Bool("split"))
		},
	}
}

func benchNTTCommand() *cli.Command {
	return &cli.Command{
		Name:  "ntt",
		Usage: "Fr NTT, natural order in and out: GPU (data on the device) against gnark-crypto fft on all cores",
		Flags: kernelBenchFlags("20,22,24"),
		Action: func(c *cli.Context) error {
			kb, err := newKernelBench(c)
			if err != nil {
				return err
			}
			return kb.ntt()
		},
	}
}

type kernelBench struct {
	w       io.Writer
	logs    []int
	runs    int
	cpuRuns int
	dev     *cuda.Device // nil for --backend cpu
	windows []int        // bench msm --windows: window sizes also timed
	tables  []tableShape // bench msm --tables: table MSMs also timed
}

// tableShape is one of bench msm --tables: copies and window as
// cuda.MSMTableShape takes them.
type tableShape struct{ copies, window int }

// parseTables reads --tables: COPIES or COPIES:WINDOW, comma separated,
// copies in [0, 32], windows 0 or in [4, 24].
func parseTables(s string) ([]tableShape, error) {
	var out []tableShape
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		cs, ws, hasWindow := strings.Cut(f, ":")
		copies, err := strconv.Atoi(cs)
		bad := err != nil || copies < 0 || copies > 32
		window := 0
		if hasWindow {
			window, err = strconv.Atoi(ws)
			bad = bad || err != nil || window != 0 && (window < 4 || window > 24)
		}
		if bad {
			return nil, fmt.Errorf("bench msm: --tables: %q is not COPIES (0..32) or COPIES:WINDOW (window 0 or 4..24)", f)
		}
		out = append(out, tableShape{copies, window})
	}
	return out, nil
}

func newKernelBench(c *cli.Context) (*kernelBench, error) {
	kb := &kernelBench{w: c.App.Writer, runs: c.Int("runs"), cpuRuns: c.Int("cpu-runs")}
	for _, s := range strings.Split(c.String("log-sizes"), ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 0 || v > cuda.MaxLogNTT {
			return nil, fmt.Errorf("--log-sizes: %q is not a log2 size in [0, %d]", s, cuda.MaxLogNTT)
		}
		kb.logs = append(kb.logs, v)
	}
	if kb.runs < 1 {
		return nil, errors.New("--runs must be at least 1")
	}
	switch c.String("backend") {
	case "cpu":
		if kb.cpuRuns < 1 {
			kb.cpuRuns = 1
		}
	case "gpu":
		d, err := cuda.Open(c.String("gpu-lib"))
		if err != nil {
			return nil, fmt.Errorf("--backend gpu: %w", err)
		}
		kb.dev = d
		p, err := d.Properties()
		if err != nil {
			return nil, err
		}
		build := d.Lib().BuildInfo()
		if build == "" {
			build = "unknown (built before cuzk_build_info)"
		}
		fmt.Fprintf(kb.w, "GPU %d: %s, %d SMs, compute %d.%d, library %s (build: %s)\n", p.Index, p.Name, p.SMs, p.Major, p.Minor,
			d.Lib().Path(), build)
	default:
		return nil, fmt.Errorf("--backend %q: want gpu or cpu", c.String("backend"))
	}
	fmt.Fprintf(kb.w, "CPU: %d cores (GOMAXPROCS %d)\n", runtime.NumCPU(), runtime.GOMAXPROCS(0))
	return kb, nil
}

type benchRow struct {
	log            int
	what           string
	gpu            []time.Duration
	cpu            []time.Duration
	gpuIncl, cpuIn string
}

func msDur(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

func (kb *kernelBench) print(rows []benchRow) {
	tw := tabwriter.NewWriter(kb.w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\twhat\tGPU median ms\tmin\tmax\tCPU ms\tCPU/GPU\t")
	for _, r := range rows {
		g, mn, mx, cpu, ratio := "-", "-", "-", "-", "-"
		if len(r.gpu) > 0 {
			g, mn, mx = msDur(median(r.gpu)), msDur(slices.Min(r.gpu)), msDur(slices.Max(r.gpu))
		}
		if len(r.cpu) > 0 {
			cpu = msDur(median(r.cpu))
		}
		if len(r.gpu) > 0 && len(r.cpu) > 0 {
			ratio = fmt.Sprintf("%.1fx", float64(median(r.cpu))/float64(median(r.gpu)))
		}
		fmt.Fprintf(tw, "2^%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.log, r.what, g, mn, mx, cpu, ratio)
	}
	tw.Flush()
	if len(rows) > 0 {
		if kb.dev != nil {
			fmt.Fprintf(kb.w, "GPU time: %s; median of %d runs after a warm-up.\n", rows[0].gpuIncl, kb.runs)
		}
		if kb.cpuRuns > 0 {
			fmt.Fprintf(kb.w, "CPU time: %s; median of %d runs.\n", rows[0].cpuIn, kb.cpuRuns)
		}
	}
}

// benchScalars are uniform below 2^254 (so below r) in Montgomery form: any
// such value is the Montgomery form of some element.
func benchScalars(n int) []fr.Element {
	v := make([]fr.Element, n)
	r := mrand.New(mrand.NewPCG(mrand.Uint64(), mrand.Uint64()))
	for i := range v {
		v[i] = fr.Element{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64() >> 2}
	}
	return v
}

// benchPoints are n distinct G1 points: base[i mod 4096] + top[i / 4096] for
// random base and top points, cheaper than n scalar multiplications.
func benchPoints(n int) []bls12381.G1Affine {
	const span = 4096
	_, _, g1, _ := bls12381.Generators()
	base := bls12381.BatchScalarMultiplicationG1(&g1, benchScalars(min(n, span)))
	top := bls12381.BatchScalarMultiplicationG1(&g1, benchScalars((n+span-1)/span))
	out := make([]bls12381.G1Affine, n)
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += 1 << 16 {
		hi := min(lo+1<<16, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			jac := make([]bls12381.G1Jac, hi-lo)
			for i := lo; i < hi; i++ {
				jac[i-lo].FromAffine(&base[i%span])
				jac[i-lo].AddMixed(&top[i/span])
			}
			copy(out[lo:hi], bls12381.BatchJacobianToAffineG1(jac))
		}()
	}
	wg.Wait()
	return out
}

// msm times the G1 MSM; a fraction bits of the scalars are 0 or 1, and with
// split the MSM that sets those apart gets a row of its own.
func (kb *kernelBench) msm(window int, bits float64, split bool) error {
	var rows []benchRow
	for _, lg := range kb.logs {
		n := 1 << lg
		var windowRows []benchRow // --windows, after the size's other rows
		points, scalars := benchPoints(n), benchScalars(n)
		if bits > 0 {
			r := mrand.New(mrand.NewPCG(uint64(lg), 0))
			for i := range scalars {
				if x := r.Float64(); x < bits/2 {
					scalars[i].SetZero()
				} else if x < bits {
					scalars[i].SetOne()
				}
			}
		}
		what := "G1 MSM"
		if bits > 0 {
			what = fmt.Sprintf("G1 MSM, %.0f%% 0/1", 100*bits)
		}
		row := benchRow{log: lg, what: what,
			gpuIncl: "scalars and points already on the device; digits, sort, bucket sums, window sums, result to host",
			cpuIn:   "gnark-crypto G1Affine.MultiExp, all cores"}
		splitRow := row
		splitRow.what += ", split"
		var gpuRes, cpuRes bls12381.G1Affine
		if kb.dev != nil {
			d := kb.dev
			pp, err := cuda.Upload(d, points, cuda.DefaultStream)
			if err != nil {
				return err
			}
			ps, err := cuda.Upload(d, scalars, cuda.DefaultStream)
			if err != nil {
				_ = d.Free(pp)
				return err
			}
			// One warm-up run, then the timed ones; the results of the
			// plain and the split MSM must be the same point.
			timeIt := func(opt cuda.MSMOptions, times *[]time.Duration) (bls12381.G1Affine, cuda.MSMStats, error) {
				var res bls12381.G1Affine
				var st cuda.MSMStats
				for i := 0; i <= kb.runs; i++ {
					start := time.Now()
					jac, s, err := d.MSMWithStats(pp, ps, n, cuda.Montgomery, opt, cuda.DefaultStream)
					el := time.Since(start)
					if err != nil {
						return res, st, err
					}
					if i > 0 {
						*times = append(*times, el)
					}
					res.FromJacobian(&jac)
					st = s
				}
				return res, st, nil
			}
			gpuRes, _, err = timeIt(cuda.MSMOptions{Window: window}, &row.gpu)
			for _, w := range kb.windows {
				if err != nil {
					break
				}
				wrow := benchRow{log: lg, what: fmt.Sprintf("%s, c=%d", what, w), gpuIncl: row.gpuIncl, cpuIn: row.cpuIn}
				var wres bls12381.G1Affine
				if wres, _, err = timeIt(cuda.MSMOptions{Window: w}, &wrow.gpu); err == nil && !wres.Equal(&gpuRes) {
					err = fmt.Errorf("MSM 2^%d: the result at window %d differs from the chosen window's", lg, w)
				}
				windowRows = append(windowRows, wrow)
			}
			for _, ts := range kb.tables {
				if err != nil {
					break
				}
				var trow benchRow
				if trow, err = kb.tableRow(d, points, ps, lg, what, ts, gpuRes, row); err == nil {
					windowRows = append(windowRows, trow)
				}
			}
			if err == nil && split {
				var splitRes bls12381.G1Affine
				var st cuda.MSMStats
				splitRes, st, err = timeIt(cuda.MSMOptions{Window: window, Split: true}, &splitRow.gpu)
				if err == nil {
					fmt.Fprintf(kb.w, "2^%d: %d zero, %d one, %d other scalars\n", lg, st.Zero, st.One, st.Other)
					if !splitRes.Equal(&gpuRes) {
						err = fmt.Errorf("MSM 2^%d: split result differs from the plain MSM", lg)
					}
				}
			}
			_ = d.Free(pp)
			_ = d.Free(ps)
			if err != nil {
				return err
			}
		}
		for i := 0; i < kb.cpuRuns; i++ {
			start := time.Now()
			if _, err := cpuRes.MultiExp(points, scalars, ecc.MultiExpConfig{}); err != nil {
				return err
			}
			row.cpu = append(row.cpu, time.Since(start))
		}
		if kb.dev != nil && kb.cpuRuns > 0 && !gpuRes.Equal(&cpuRes) {
			return fmt.Errorf("MSM 2^%d: GPU result differs from gnark-crypto", lg)
		}
		rows = append(rows, row)
		if kb.dev != nil && split {
			splitRow.cpu = row.cpu
			rows = append(rows, splitRow)
		}
		rows = append(rows, windowRows...)
	}
	kb.print(rows)
	return nil
}

// tableRow times the MSM of points (host) and ps (device scalars) over a
// table of shape ts, built on the device from the points; its result must
// equal want. The table is freed before it returns.
func (kb *kernelBench) tableRow(d *cuda.Device, points []bls12381.G1Affine, ps cuda.Ptr, lg int, what string, ts tableShape,
	want bls12381.G1Affine, like benchRow) (benchRow, error) {
	n := len(points)
	var start time.Time // the build's, once the points are in
	tab, err := d.NewMSMTable(n, false, ts.window, ts.copies, func(rows cuda.Ptr) error {
		err := cuda.CopyIn(d, rows, points, cuda.DefaultStream)
		start = time.Now()
		return err
	}, cuda.DefaultStream)
	if err != nil {
		return benchRow{}, fmt.Errorf("MSM 2^%d: table: %w", lg, err)
	}
	built := time.Since(start)
	defer d.Free(tab.Ptr)
	row := benchRow{log: lg, what: fmt.Sprintf("%s, table %d copies c=%d (%s, built in %s ms)", what, tab.Copies, tab.Window,
		gpu.FormatBytes(tab.Bytes), msDur(built)), gpuIncl: like.gpuIncl, cpuIn: like.cpuIn}
	opt := tab.Options(cuda.MSMOptions{})
	var res bls12381.G1Affine
	for i := 0; i <= kb.runs; i++ {
		start := time.Now()
		jac, err := d.MSM(tab.Ptr, ps, n, cuda.Montgomery, opt, cuda.DefaultStream)
		el := time.Since(start)
		if err != nil {
			return row, err
		}
		if i > 0 {
			row.gpu = append(row.gpu, el)
		}
		res.FromJacobian(&jac)
	}
	if !res.Equal(&want) {
		return row, fmt.Errorf("MSM 2^%d: the result over a table of %d copies at window %d differs from the plain MSM's", lg, tab.Copies, tab.Window)
	}
	return row, nil
}

// parseWindows reads --windows: window sizes in bits, comma separated,
// each in [4, 24] (the library's range for a forced window).
func parseWindows(s string) ([]int, error) {
	ws, bad, ok := intsIn(s, 4, 24)
	if !ok {
		return nil, fmt.Errorf("bench msm: --windows: %q is not a window size in [4, 24]", bad)
	}
	return ws, nil
}

func (kb *kernelBench) ntt() error {
	var rows []benchRow
	for _, lg := range kb.logs {
		n := 1 << lg
		data := benchScalars(n)
		fwd := benchRow{log: lg, what: "NTT forward",
			gpuIncl: "data on the device, natural order in and out, CUDA events around the transform",
			cpuIn:   "gnark-crypto fft.Domain.FFT (DIF) + BitReverse, all cores"}
		inv := benchRow{log: lg, what: "NTT inverse coset", gpuIncl: fwd.gpuIncl, cpuIn: fwd.cpuIn}
		var gpuOut []fr.Element
		if kb.dev != nil {
			d := kb.dev
			dom, err := d.NewDomain(lg, cuda.DefaultStream)
			if err != nil {
				return err
			}
			buf, err := cuda.Upload(d, data, cuda.DefaultStream)
			if err != nil {
				_ = dom.Close()
				return err
			}
			e0, _ := d.NewEvent()
			e1, _ := d.NewEvent()
			timeIt := func(inverse, coset bool) (time.Duration, error) {
				return timeOnDevice(d, e0, e1, func() error { return dom.NTT(buf, inverse, coset, cuda.DefaultStream) })
			}
			// The first forward result is kept for the check against the CPU.
			if _, err := timeIt(false, false); err != nil {
				return err
			}
			gpuOut = make([]fr.Element, n)
			if err := cuda.CopyOut(d, gpuOut, buf, cuda.DefaultStream); err != nil {
				return err
			}
			for i := 0; i < kb.runs; i++ {
				el, err := timeIt(false, false)
				if err != nil {
					return err
				}
				fwd.gpu = append(fwd.gpu, el)
			}
			for i := 0; i <= kb.runs; i++ {
				el, err := timeIt(true, true)
				if err != nil {
					return err
				}
				if i > 0 {
					inv.gpu = append(inv.gpu, el)
				}
			}
			_ = d.DestroyEvent(e0)
			_ = d.DestroyEvent(e1)
			_ = d.Free(buf)
			_ = dom.Close()
		}
		if kb.cpuRuns > 0 {
			gd := fft.NewDomain(uint64(n))
			for i := 0; i < kb.cpuRuns; i++ {
				a := slices.Clone(data)
				start := time.Now()
				gd.FFT(a, fft.DIF)
				fft.BitReverse(a)
				fwd.cpu = append(fwd.cpu, time.Since(start))
				if i == 0 && gpuOut != nil {
					for j := range a {
						if !a[j].Equal(&gpuOut[j]) {
							return fmt.Errorf("NTT 2^%d: GPU element %d differs from gnark-crypto", lg, j)
						}
					}
				}
				start = time.Now()
				gd.FFTInverse(a, fft.DIF, fft.OnCoset())
				fft.BitReverse(a)
				inv.cpu = append(inv.cpu, time.Since(start))
			}
		}
		rows = append(rows, fwd, inv)
	}
	kb.print(rows)
	return nil
}

// timeOnDevice times the work f queues on the default stream, between two
// events.
func timeOnDevice(d *cuda.Device, e0, e1 cuda.Event, f func() error) (time.Duration, error) {
	if err := d.RecordEvent(e0, cuda.DefaultStream); err != nil {
		return 0, err
	}
	if err := f(); err != nil {
		return 0, err
	}
	if err := d.RecordEvent(e1, cuda.DefaultStream); err != nil {
		return 0, err
	}
	if err := d.EventSync(e1); err != nil {
		return 0, err
	}
	return d.Elapsed(e0, e1)
}
