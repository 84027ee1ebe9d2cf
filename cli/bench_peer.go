package cli

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/cuda"
)

// The peer is sppark (github.com/supranational/sppark), timed by a small
// driver (peer/driver) that reads the inputs this command writes and writes
// back what it computed; peer/run.sh builds it. See docs/peer.md.

// Byte sizes of the layouts the driver shares with gnark-crypto: 64-bit
// little-endian limbs, Montgomery form, points affine in and Jacobian out.
const (
	frBytes      = fr.Bytes
	fpBytes      = fp.Bytes
	g1AffBytes   = 2 * fpBytes
	g2AffBytes   = 4 * fpBytes
	g1JacBytes   = 3 * fpBytes
	g2JacBytes   = 6 * fpBytes
	peerMaxLog   = 28 // the driver's bound: sppark's NTT is built for 2^28
	peerTimesTag = "times_ms:"
)

func benchPeerCommand() *cli.Command {
	return &cli.Command{
		Name:  "peer",
		Usage: "cuzk's MSM and NTT beside sppark's on the same inputs, both checked against gnark-crypto (needs peer/run.sh's driver)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "driver", Required: true, Usage: "the peer driver executable that peer/run.sh builds"},
			&cli.StringFlag{Name: "inputs", Required: true, Usage: "directory for the input and result files (about 2.3 GB at the default sizes)"},
			&cli.StringFlag{Name: "out", Required: true, Usage: "directory for the driver's logs and peer.json"},
			&cli.StringFlag{Name: "g1-log-sizes", Value: "20,22,24", Usage: "log2 sizes of the G1 MSMs (empty: none)"},
			&cli.StringFlag{Name: "g2-log-sizes", Value: "20", Usage: "log2 sizes of the G2 MSMs (empty: none)"},
			&cli.BoolFlag{Name: "g1-tables", Usage: "also time cuzk's G1 MSMs over precomputed tables of the points (one copy per window, built before the timed runs), as rows \"G1 MSM, table\" beside sppark's times of the plain row"},
			&cli.StringFlag{Name: "ntt-log-sizes", Value: "24", Usage: "log2 sizes of the forward NTTs (empty: none)"},
			&cli.IntFlag{Name: "runs", Value: 5, Usage: "timed runs per case and library, after one warm-up", Action: intBetween("runs", 1, 1000)},
			&cli.DurationFlag{Name: "driver-timeout", Value: 3 * time.Minute, Usage: "longest one driver call may take"},
			&cli.StringFlag{Name: "gpu-lib", Usage: "path of " + cuda.LibraryName + " (default: $" + cuda.EnvLibrary + ", next to the executable, build/)"},
		},
		Action: func(c *cli.Context) error {
			plan, err := peerPlanFrom(c)
			if err != nil {
				return err
			}
			d, err := cuda.Open(c.String("gpu-lib"))
			if err != nil {
				return fmt.Errorf("bench peer: %w", err)
			}
			p, err := d.Properties()
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "GPU %d: %s, %d SMs, compute %d.%d, library %s\n", p.Index, p.Name, p.SMs, p.Major, p.Minor, d.Lib().Path())
			return plan.run(c.Context, c.App.Writer, gpuSelf{d})
		},
	}
}

// peerPlan is what one bench peer run measures and where its files go.
type peerPlan struct {
	driver  peerDriver
	inputs  string
	g1, g2  []int
	ntt     []int
	runs    int
	jsonOut string
	tables  bool // bench peer --g1-tables
}

func peerPlanFrom(c *cli.Context) (*peerPlan, error) {
	p := &peerPlan{inputs: c.String("inputs"), runs: c.Int("runs"), tables: c.Bool("g1-tables")}
	var err error
	if p.g1, err = peerLogSizes("g1-log-sizes", c.String("g1-log-sizes")); err != nil {
		return nil, err
	}
	if p.g2, err = peerLogSizes("g2-log-sizes", c.String("g2-log-sizes")); err != nil {
		return nil, err
	}
	if p.ntt, err = peerLogSizes("ntt-log-sizes", c.String("ntt-log-sizes")); err != nil {
		return nil, err
	}
	if len(p.g1)+len(p.g2)+len(p.ntt) == 0 {
		return nil, errors.New("bench peer: no sizes to measure")
	}
	if p.runs < 1 {
		return nil, errors.New("bench peer: --runs must be at least 1")
	}
	path := c.String("driver")
	if st, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("bench peer: --driver: %w", err)
	} else if st.IsDir() || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("bench peer: --driver %s is not an executable file", path)
	}
	if c.Duration("driver-timeout") <= 0 {
		return nil, errors.New("bench peer: --driver-timeout must be positive")
	}
	out := c.String("out")
	for _, dir := range []string{p.inputs, out} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("bench peer: %w", err)
		}
	}
	p.driver = peerDriver{path: path, logDir: out, timeout: c.Duration("driver-timeout")}
	p.jsonOut = filepath.Join(out, "peer.json")
	return p, nil
}

// peerLogSizes parses a comma-separated list of log2 sizes; empty is none.
func peerLogSizes(flag, s string) ([]int, error) {
	out, bad, ok := intsIn(s, 1, peerMaxLog)
	if !ok {
		return nil, fmt.Errorf("bench peer: --%s: %q is not a log2 size in [1, %d]", flag, bad, peerMaxLog)
	}
	return out, nil
}

// peerRow is one line of the table: one kernel at one size, timed by both
// libraries. Checked holds only when both results equal gnark-crypto's.
type peerRow struct {
	Kernel   string    `json:"kernel"`
	Log      int       `json:"log"`
	CuzkMs   []float64 `json:"cuzk_ms"`
	PeerMs   []float64 `json:"sppark_ms"`
	CuzkOK   bool      `json:"cuzk_matches_gnark"`
	PeerOK   bool      `json:"sppark_matches_gnark"`
	Problems []string  `json:"problems,omitempty"`
}

func (r *peerRow) fail(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// peerInputs are written once at the largest sizes; smaller cases use
// prefixes, in memory here and in the files for the driver.
type peerInputs struct {
	scalars                     []fr.Element
	g1                          []bls12381.G1Affine
	g2                          []bls12381.G2Affine
	scalarsPath, g1Path, g2Path string
}

func (p *peerPlan) run(ctx context.Context, w io.Writer, self peerSelf) error {
	start := time.Now()
	in, err := p.writeInputs()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "inputs: %d scalars, %d G1 and %d G2 points written to %s in %s\n",
		len(in.scalars), len(in.g1), len(in.g2), p.inputs, time.Since(start).Round(time.Millisecond))
	var rows []peerRow
	for _, lg := range p.g1 {
		rows = append(rows, p.msmG1(ctx, self, in, lg)...)
	}
	for _, lg := range p.g2 {
		rows = append(rows, p.msmG2(ctx, self, in, lg))
	}
	for _, lg := range p.ntt {
		rows = append(rows, p.nttForward(ctx, self, in, lg))
	}
	printPeerTable(w, rows, p.runs)
	fmt.Fprintf(w, "total %s\n", time.Since(start).Round(time.Millisecond))
	if b, err := json.MarshalIndent(rows, "", "  "); err != nil {
		return err
	} else if err := os.WriteFile(p.jsonOut, b, 0o644); err != nil {
		return fmt.Errorf("bench peer: %w", err)
	}
	for _, r := range rows {
		if len(r.Problems) > 0 || !r.CuzkOK || !r.PeerOK {
			return errors.New("bench peer: some cases failed or were not checked (see the problems above)")
		}
	}
	return nil
}

func (p *peerPlan) writeInputs() (*peerInputs, error) {
	maxOf := func(v []int) int {
		if len(v) == 0 {
			return -1
		}
		return slices.Max(v)
	}
	in := &peerInputs{
		scalarsPath: filepath.Join(p.inputs, "scalars.bin"),
		g1Path:      filepath.Join(p.inputs, "g1.bin"),
		g2Path:      filepath.Join(p.inputs, "g2.bin"),
	}
	if lg := max(maxOf(p.g1), maxOf(p.g2), maxOf(p.ntt)); lg >= 0 {
		in.scalars = benchScalars(1 << lg)
		if err := writeElements(in.scalarsPath, in.scalars, frBytes, encodeFr); err != nil {
			return nil, err
		}
	}
	if lg := maxOf(p.g1); lg >= 0 {
		in.g1 = benchPoints(1 << lg)
		if err := writeElements(in.g1Path, in.g1, g1AffBytes, encodeG1Affine); err != nil {
			return nil, err
		}
	}
	if lg := maxOf(p.g2); lg >= 0 {
		in.g2 = benchPointsG2(1 << lg)
		if err := writeElements(in.g2Path, in.g2, g2AffBytes, encodeG2Affine); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// benchPointsG2 are n distinct G2 points, made as benchPoints makes G1's.
func benchPointsG2(n int) []bls12381.G2Affine {
	const span = 4096
	_, _, _, g2 := bls12381.Generators()
	base := bls12381.BatchScalarMultiplicationG2(&g2, benchScalars(min(n, span)))
	top := bls12381.BatchScalarMultiplicationG2(&g2, benchScalars((n+span-1)/span))
	out := make([]bls12381.G2Affine, n)
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += 1 << 14 {
		hi := min(lo+1<<14, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var jac bls12381.G2Jac
			for i := lo; i < hi; i++ {
				jac.FromAffine(&base[i%span])
				jac.AddMixed(&top[i/span])
				out[i].FromJacobian(&jac)
			}
		}()
	}
	wg.Wait()
	return out
}

// msmG1 is the G1 case at 2^lg, and with --g1-tables a second row: cuzk
// over a table of the points against the same gnark-crypto answer, beside
// sppark's times of the plain case (sppark is given no table).
func (p *peerPlan) msmG1(ctx context.Context, self peerSelf, in *peerInputs, lg int) []peerRow {
	n := 1 << lg
	var w bls12381.G1Affine
	_, wantErr := w.MultiExp(in.g1[:n], in.scalars[:n], ecc.MultiExpConfig{})
	row := peerMSM(ctx, p, "G1 MSM", "g1", lg, in.g1Path, in.scalarsPath,
		func() (bls12381.G1Affine, error) { return w, wantErr },
		func() (bls12381.G1Affine, []float64, error) { return self.msmG1(in.g1[:n], in.scalars[:n], p.runs) },
		func(b []byte) (a bls12381.G1Affine, err error) {
			jac, err := decodeG1Jac(b)
			a.FromJacobian(&jac)
			return a, err
		})
	if !p.tables || wantErr != nil {
		return []peerRow{row}
	}
	table := peerRow{Kernel: "G1 MSM, table", Log: lg, PeerMs: row.PeerMs, PeerOK: row.PeerOK}
	got, ms, err := self.msmG1Table(in.g1[:n], in.scalars[:n], p.runs)
	table.CuzkMs = ms
	if err != nil {
		table.fail("cuzk: %v", err)
	} else if table.CuzkOK = got.Equal(&w); !table.CuzkOK {
		table.fail("cuzk: result over the table differs from gnark-crypto")
	}
	return []peerRow{row, table}
}

func (p *peerPlan) msmG2(ctx context.Context, self peerSelf, in *peerInputs, lg int) peerRow {
	n := 1 << lg
	return peerMSM(ctx, p, "G2 MSM", "g2", lg, in.g2Path, in.scalarsPath,
		func() (w bls12381.G2Affine, err error) {
			_, err = w.MultiExp(in.g2[:n], in.scalars[:n], ecc.MultiExpConfig{})
			return w, err
		},
		func() (bls12381.G2Affine, []float64, error) { return self.msmG2(in.g2[:n], in.scalars[:n], p.runs) },
		func(b []byte) (a bls12381.G2Affine, err error) {
			jac, err := decodeG2Jac(b)
			a.FromJacobian(&jac)
			return a, err
		})
}

// peerMSM is one MSM case on either group: gnark-crypto's answer (want),
// cuzk's timed result (self), then sppark's through the driver on the
// points and scalars files, read back from its result file (decode); each
// result is checked against the answer.
func peerMSM[A any, PA interface {
	*A
	Equal(*A) bool
}](ctx context.Context, p *peerPlan, kernel, group string, lg int, points, scalars string,
	want func() (A, error), self func() (A, []float64, error), decode func([]byte) (A, error)) peerRow {
	row := peerRow{Kernel: kernel, Log: lg}
	w, err := want()
	if err != nil {
		row.fail("gnark-crypto MultiExp: %v", err)
		return row
	}
	got, ms, err := self()
	row.CuzkMs = ms
	if err != nil {
		row.fail("cuzk: %v", err)
	} else if row.CuzkOK = PA(&got).Equal(&w); !row.CuzkOK {
		row.fail("cuzk: result differs from gnark-crypto")
	}
	res := filepath.Join(p.inputs, fmt.Sprintf("sppark-%s-%d.bin", group, lg))
	row.PeerMs, err = p.driver.run(ctx, fmt.Sprintf("msm-%s-%d", group, lg), "msm-"+group, strconv.Itoa(lg), points, scalars, strconv.Itoa(p.runs), res)
	if err == nil {
		var b []byte
		var a A
		if b, err = os.ReadFile(res); err == nil {
			a, err = decode(b)
		}
		if err == nil && !PA(&a).Equal(&w) {
			err = errors.New("result differs from gnark-crypto")
		}
		row.PeerOK = err == nil
	}
	if err != nil {
		row.fail("sppark: %v", err)
	}
	return row
}

// peerSelf is cuzk's side of each case: one warm-up, then runs timed
// runs, returning the last result (the warm-up's for the NTT) and the times
// in milliseconds. gpuSelf is the real one; tests use one on the CPU.
type peerSelf interface {
	msmG1(points []bls12381.G1Affine, scalars []fr.Element, runs int) (bls12381.G1Affine, []float64, error)
	msmG2(points []bls12381.G2Affine, scalars []fr.Element, runs int) (bls12381.G2Affine, []float64, error)
	// msmG1Table is msmG1 over a precomputed table of the points, built
	// before the warm-up and not timed.
	msmG1Table(points []bls12381.G1Affine, scalars []fr.Element, runs int) (bls12381.G1Affine, []float64, error)
	nttForward(data []fr.Element, lg, runs int) ([]fr.Element, []float64, error)
}

// gpuSelf times cuzk's kernels as bench msm and bench ntt do.
type gpuSelf struct{ d *cuda.Device }

func (g gpuSelf) msmG1(points []bls12381.G1Affine, scalars []fr.Element, runs int) (bls12381.G1Affine, []float64, error) {
	return timeCuzkMSM(g.d, points, scalars, runs, func(pp, ps cuda.Ptr) (bls12381.G1Affine, error) {
		jac, err := g.d.MSM(pp, ps, len(points), cuda.Montgomery, cuda.MSMOptions{}, cuda.DefaultStream)
		var a bls12381.G1Affine
		a.FromJacobian(&jac)
		return a, err
	})
}

func (g gpuSelf) msmG1Table(points []bls12381.G1Affine, scalars []fr.Element, runs int) (bls12381.G1Affine, []float64, error) {
	tab, err := g.d.NewMSMTable(len(points), false, 0, 0,
		func(rows cuda.Ptr) error { return cuda.CopyIn(g.d, rows, points, cuda.DefaultStream) }, cuda.DefaultStream)
	if err != nil {
		return bls12381.G1Affine{}, nil, err
	}
	defer func() { _ = g.d.Free(tab.Ptr) }()
	// The table is the points: timeCuzkMSM's own upload of them goes unused.
	return timeCuzkMSM(g.d, points[:0], scalars, runs, func(_, ps cuda.Ptr) (bls12381.G1Affine, error) {
		jac, err := g.d.MSM(tab.Ptr, ps, len(points), cuda.Montgomery, tab.Options(cuda.MSMOptions{}), cuda.DefaultStream)
		var a bls12381.G1Affine
		a.FromJacobian(&jac)
		return a, err
	})
}

func (g gpuSelf) msmG2(points []bls12381.G2Affine, scalars []fr.Element, runs int) (bls12381.G2Affine, []float64, error) {
	return timeCuzkMSM(g.d, points, scalars, runs, func(pp, ps cuda.Ptr) (bls12381.G2Affine, error) {
		jac, err := g.d.MSMG2(pp, ps, len(points), cuda.Montgomery, cuda.MSMOptions{}, cuda.DefaultStream)
		var a bls12381.G2Affine
		a.FromJacobian(&jac)
		return a, err
	})
}

func (g gpuSelf) nttForward(data []fr.Element, lg, runs int) ([]fr.Element, []float64, error) {
	return timeCuzkNTT(g.d, data, lg, runs)
}

// timeCuzkMSM uploads the points and scalars, then times one warm-up and
// runs MSMs as bench msm does: wall time around the call, which returns with
// the result on the host. It returns the last result.
func timeCuzkMSM[P any, A any](d *cuda.Device, points []P, scalars []fr.Element, runs int, msm func(pp, ps cuda.Ptr) (A, error)) (A, []float64, error) {
	var res A
	pp, err := cuda.Upload(d, points, cuda.DefaultStream)
	if err != nil {
		return res, nil, err
	}
	defer func() { _ = d.Free(pp) }()
	ps, err := cuda.Upload(d, scalars, cuda.DefaultStream)
	if err != nil {
		return res, nil, err
	}
	defer func() { _ = d.Free(ps) }()
	var ms []float64
	for i := 0; i <= runs; i++ {
		start := time.Now()
		res, err = msm(pp, ps)
		el := time.Since(start)
		if err != nil {
			return res, ms, err
		}
		if i > 0 {
			ms = append(ms, float64(el)/float64(time.Millisecond))
		}
	}
	return res, ms, nil
}

func (p *peerPlan) nttForward(ctx context.Context, self peerSelf, in *peerInputs, lg int) peerRow {
	n := 1 << lg
	row := peerRow{Kernel: "Fr NTT fwd", Log: lg}
	want := slices.Clone(in.scalars[:n])
	fft.NewDomain(uint64(n)).FFT(want, fft.DIF)
	fft.BitReverse(want)
	got, ms, err := self.nttForward(in.scalars[:n], lg, p.runs)
	row.CuzkMs = ms
	if err != nil {
		row.fail("cuzk: %v", err)
	} else if i := firstDiff(got, want); i >= 0 {
		row.fail("cuzk: element %d differs from gnark-crypto", i)
	} else {
		row.CuzkOK = true
	}
	res := filepath.Join(p.inputs, fmt.Sprintf("sppark-ntt-%d.bin", lg))
	row.PeerMs, err = p.driver.run(ctx, fmt.Sprintf("ntt-%d", lg), "ntt", strconv.Itoa(lg), in.scalarsPath, strconv.Itoa(p.runs), res)
	if err == nil {
		var b []byte
		if b, err = os.ReadFile(res); err == nil {
			got, err = decodeFrs(b, n)
		}
		if err == nil {
			if i := firstDiff(got, want); i >= 0 {
				err = fmt.Errorf("element %d differs from gnark-crypto", i)
			}
		}
		row.PeerOK = err == nil
	}
	if err != nil {
		row.fail("sppark: %v", err)
	}
	return row
}

// timeCuzkNTT times forward NTTs as bench ntt does: data on the device,
// CUDA events around each transform. The output of the warm-up (the first
// transform of data) is returned for the check; the timed runs transform
// the previous output in place.
func timeCuzkNTT(d *cuda.Device, data []fr.Element, lg, runs int) ([]fr.Element, []float64, error) {
	dom, err := d.NewDomain(lg, cuda.DefaultStream)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = dom.Close() }()
	buf, err := cuda.Upload(d, data, cuda.DefaultStream)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = d.Free(buf) }()
	e0, err := d.NewEvent()
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = d.DestroyEvent(e0) }()
	e1, err := d.NewEvent()
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = d.DestroyEvent(e1) }()
	once := func() (time.Duration, error) {
		return timeOnDevice(d, e0, e1, func() error { return dom.NTT(buf, false, false, cuda.DefaultStream) })
	}
	if _, err := once(); err != nil {
		return nil, nil, err
	}
	out := make([]fr.Element, len(data))
	if err := cuda.CopyOut(d, out, buf, cuda.DefaultStream); err != nil {
		return nil, nil, err
	}
	var ms []float64
	for i := 0; i < runs; i++ {
		el, err := once()
		if err != nil {
			return out, ms, err
		}
		ms = append(ms, float64(el)/float64(time.Millisecond))
	}
	return out, ms, nil
}

func firstDiff(got, want []fr.Element) int {
	if len(got) != len(want) {
		return min(len(got), len(want))
	}
	for i := range got {
		if !got[i].Equal(&want[i]) {
			return i
		}
	}
	return -1
}

// peerDriver runs the driver executable, one case per call.
type peerDriver struct {
	path    string
	logDir  string
	timeout time.Duration
}

// run calls the driver with args, keeps its output in logDir/driver-NAME.log
// and returns the times it printed.
func (pd peerDriver) run(ctx context.Context, name string, args ...string) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, pd.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, pd.path, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// After a kill, stop waiting for output from any children it left.
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	log := fmt.Sprintf("$ %s %s\n--- stdout\n%s--- stderr\n%s", pd.path, strings.Join(args, " "), stdout.String(), stderr.String())
	logPath := filepath.Join(pd.logDir, "driver-"+name+".log")
	if err := os.WriteFile(logPath, []byte(log), 0o644); err != nil {
		return nil, fmt.Errorf("keep the driver's output: %w", err)
	}
	if ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("driver took longer than %s (output in %s)", pd.timeout, logPath)
	}
	if runErr != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return nil, fmt.Errorf("driver: %v: %s (output in %s)", runErr, msg, logPath)
	}
	return parsePeerTimes(stdout.String())
}

// parsePeerTimes reads the driver's "times_ms: t1 t2 ..." line.
func parsePeerTimes(stdout string) ([]float64, error) {
	for _, line := range strings.Split(stdout, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), peerTimesTag)
		if !ok {
			continue
		}
		var ms []float64
		for _, f := range strings.Fields(rest) {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("driver printed %q as a time", f)
			}
			ms = append(ms, v)
		}
		if len(ms) == 0 {
			return nil, errors.New("driver printed no times")
		}
		return ms, nil
	}
	return nil, fmt.Errorf("driver printed no %q line", peerTimesTag)
}

// writeElements writes v to path, size bytes per element as encode lays
// them out, buffered so that gigabyte inputs need no second copy in memory.
func writeElements[T any](path string, v []T, size int, encode func(dst []byte, e *T)) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench peer: %w", err)
	}
	bw := bufio.NewWriterSize(f, 4<<20)
	buf := make([]byte, size)
	for i := range v {
		encode(buf, &v[i])
		if _, err := bw.Write(buf); err != nil {
			_ = f.Close()
			return fmt.Errorf("bench peer: write %s: %w", path, err)
		}
	}
	if err := bw.Flush(); err != nil {
		_ = f.Close()
		return fmt.Errorf("bench peer: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench peer: write %s: %w", path, err)
	}
	return nil
}

// The layouts below are gnark-crypto's in memory on a little-endian machine
// and blst's (sppark's host types): limbs least significant first, in
// Montgomery form, X before Y before Z, A0 before A1.

func putLimbs(dst []byte, limbs []uint64) []byte {
	for _, l := range limbs {
		binary.LittleEndian.PutUint64(dst, l)
		dst = dst[8:]
	}
	return dst
}

func getLimbs(src []byte, limbs []uint64) []byte {
	for i := range limbs {
		limbs[i] = binary.LittleEndian.Uint64(src)
		src = src[8:]
	}
	return src
}

func encodeFr(dst []byte, e *fr.Element) { putLimbs(dst, e[:]) }

func encodeG1Affine(dst []byte, p *bls12381.G1Affine) {
	putLimbs(putLimbs(dst, p.X[:]), p.Y[:])
}

func encodeG2Affine(dst []byte, p *bls12381.G2Affine) {
	dst = putLimbs(putLimbs(dst, p.X.A0[:]), p.X.A1[:])
	putLimbs(putLimbs(dst, p.Y.A0[:]), p.Y.A1[:])
}

// decodeG1Jac reads the driver's G1 result. Infinity (Z = 0) becomes
// gnark-crypto's (1, 1, 0).
func decodeG1Jac(b []byte) (bls12381.G1Jac, error) {
	var p bls12381.G1Jac
	if len(b) != g1JacBytes {
		return p, fmt.Errorf("G1 result has %d bytes, want %d", len(b), g1JacBytes)
	}
	getLimbs(getLimbs(getLimbs(b, p.X[:]), p.Y[:]), p.Z[:])
	for _, e := range []*fp.Element{&p.X, &p.Y, &p.Z} {
		if !fpCanonical(e) {
			return p, errors.New("G1 result has a coordinate that is not below the modulus")
		}
	}
	if p.Z.IsZero() {
		p.X.SetOne()
		p.Y.SetOne()
	}
	return p, nil
}

func decodeG2Jac(b []byte) (bls12381.G2Jac, error) {
	var p bls12381.G2Jac
	if len(b) != g2JacBytes {
		return p, fmt.Errorf("G2 result has %d bytes, want %d", len(b), g2JacBytes)
	}
	rest := getLimbs(getLimbs(b, p.X.A0[:]), p.X.A1[:])
	rest = getLimbs(getLimbs(rest, p.Y.A0[:]), p.Y.A1[:])
	getLimbs(getLimbs(rest, p.Z.A0[:]), p.Z.A1[:])
	for _, e := range []*fp.Element{&p.X.A0, &p.X.A1, &p.Y.A0, &p.Y.A1, &p.Z.A0, &p.Z.A1} {
		if !fpCanonical(e) {
			return p, errors.New("G2 result has a coordinate that is not below the modulus")
		}
	}
	if p.Z.IsZero() {
		p.X.SetOne()
		p.Y.SetOne()
	}
	return p, nil
}

// fpCanonical: gnark-crypto's arithmetic assumes limbs below the modulus,
// as sppark's host code keeps them; a value that is not means a wrong layout.
func fpCanonical(e *fp.Element) bool {
	var be [fp.Bytes]byte
	for i, l := range e {
		binary.BigEndian.PutUint64(be[fp.Bytes-8*(i+1):], l)
	}
	return new(big.Int).SetBytes(be[:]).Cmp(fp.Modulus()) < 0
}

func decodeFrs(b []byte, n int) ([]fr.Element, error) {
	if len(b) != n*frBytes {
		return nil, fmt.Errorf("NTT result has %d bytes, want %d", len(b), n*frBytes)
	}
	out := make([]fr.Element, n)
	for i := range out {
		b = getLimbs(b, out[i][:])
	}
	return out, nil
}

func printPeerTable(w io.Writer, rows []peerRow, runs int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kernel\tsize\tcuzk ms\tsppark ms\tsppark/cuzk\tchecked\t")
	for _, r := range rows {
		c, s, ratio := "-", "-", "-"
		if len(r.CuzkMs) > 0 {
			c = fmt.Sprintf("%.2f", median(r.CuzkMs))
		}
		if len(r.PeerMs) > 0 {
			s = fmt.Sprintf("%.2f", median(r.PeerMs))
		}
		if len(r.CuzkMs) > 0 && len(r.PeerMs) > 0 && median(r.CuzkMs) > 0 {
			ratio = fmt.Sprintf("%.2fx", median(r.PeerMs)/median(r.CuzkMs))
		}
		checked := "yes"
		if !r.CuzkOK || !r.PeerOK {
			checked = "NO"
		}
		fmt.Fprintf(tw, "%s\t2^%d\t%s\t%s\t%s\t%s\t\n", r.Kernel, r.Log, c, s, ratio, checked)
	}
	tw.Flush()
	fmt.Fprintf(w, "Medians of %d runs after a warm-up. MSM: points and scalars on the device, wall time until the sum is on the host. "+
		"NTT: forward, natural order in and out, data on the device, CUDA events. "+
		"checked: both results equal gnark-crypto's.\n", runs)
	for _, r := range rows {
		for _, pr := range r.Problems {
			fmt.Fprintf(w, "problem: %s 2^%d: %s\n", r.Kernel, r.Log, pr)
		}
	}
}
