package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/sim"
)

// contentionCalibrateCommand is `cuzk bench contention calibrate`: the
// one-worker runs a contention profile is fitted from, and the fit.
func contentionCalibrateCommand(partition []cli.Flag) *cli.Command {
	return &cli.Command{
		Name:  "calibrate",
		Usage: "run the one-worker calibration of the simulator on a device and fit its profile",
		Description: "Runs, with one worker and the partition of the flags, the runs a profile is fitted from:\n" +
			"  designs/        every design (--designs) with the CPU stages, on the whole card (--card);\n" +
			"  probe/          single without CPU stages on the whole card (each copy right after the\n" +
			"                  previous item's cudaFree: the work a free leaves on the copy engine);\n" +
			"  ballast/        split under --vram-limit (pool growth and trims beside the limit's ballast);\n" +
			"  probe-ballast/  single without CPU stages under --vram-limit (a cudaMalloc right after a\n" +
			"                  cudaFree: how long it waits for the freed bytes);\n" +
			"each --runs times, their tables and traces under --dir, and the card of the whole-card runs (its\n" +
			"name and memory: card.json). Then it fits the profile as `cuzk sim\n" +
			"calibrate` does: the stage costs and the partition's memory from single's first run, the device's\n" +
			"figures from every run, the pool's costs under the ballast from the limited runs; the rest (the CPU\n" +
			"model, the actors' handoff, the device's rules) from --base. `cuzk bench contention --backend sim\n" +
			"--profile` with the same partition flags then predicts any number of workers, any design and limit.\n" +
			"--race N adds an input that needs several workers: split-devsync at 3 and 4 workers, whose\n" +
			"launch/device-sync ties give the share the syncing worker wins on this host (race/).\n" +
			"--beside N adds the other: split and split-first at 2-4 workers, whose trims and growths run\n" +
			"beside another worker's kernel, and kernels beside them, slower than alone on this card (beside/).\n" +
			"--fit-only fits again from the traces already in --dir (with another --base, say) without running.",
		Flags: append(partition,
			&cli.StringFlag{Name: "dir", Required: true, Usage: "where the runs' tables and traces go (`DIR`; with --fit-only, where they are)"},
			&cli.StringFlag{Name: "out", Usage: "write the profile to `FILE` (default: DIR/profile.json)"},
			&cli.StringFlag{Name: "base", Value: "h200-contention-base", Usage: "the profile the fit starts from: embedded name or `FILE`"},
			&cli.StringFlag{Name: "name", Value: "contention", Usage: "the new profile's name"},
			&cli.StringFlag{Name: "designs", Value: strings.Join(actors.Designs, ","), Usage: "the designs of the one-worker runs with CPU stages (single is always run: it gives the stage costs)"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "runs of each: a one-worker run is one draw of the device's copy and pool costs, which move by several per cent between runs", Action: intAtLeast("runs", 1)},
			&cli.StringFlag{Name: "card", Value: "140GiB", Usage: "the memory of the whole-card runs: on the GPU any size at or above its free memory runs them without a ballast; the emulated device's capacity"},
			&cli.IntFlag{Name: "race", Usage: "also run split-devsync with 3 and 4 workers on the whole card `N` times each (race/) and fit host.handoff.later_first from their launch/device-sync ties (the base's is the H200 host's, 16 cores: on a host with other cores or another scheduler the share of ties the syncing worker wins differs); 0: the base's", Action: intAtLeast("race", 0)},
			&cli.IntFlag{Name: "beside", Usage: "also run split and split-first with 2, 3 and 4 workers on the whole card `N` times each (beside/) and fit device.pool_slowdown_kernel and device.kernel_slowdown_pool from their trims, growths and kernels beside each other's (the base's are the H200's; an H100's kernels slowed about four times as much); 0: the base's", Action: intAtLeast("beside", 0)},
			&cli.BoolFlag{Name: "fit-only", Usage: "fit from the traces already in --dir, without running"},
		),
		Action: runContentionCalibrate,
	}
}

// contentionCalibrationRun is one of the calibration's runs: its directory
// under --dir, what it is for, and how it changes the partition's spec.
type contentionCalibrationRun struct {
	dir, about string
	designs    []string
	workers    []int // one worker unless set
	whole      bool  // on the whole card (--card), else under --vram-limit
	noStages   bool  // without the CPU stages before and after the kernel
	race       bool  // its traces fit the handoff's ties (sim calibrate --race-trace)
	beside     bool  // its traces fit the pool's work beside kernels (sim calibrate --beside-trace)
	runs       int   // how many times each; --runs unless set
}

// contentionCalibrationRuns are the runs contention_calibrate.sh makes for a
// family, under the names calibrate reads them by, with race > 0 the
// racing runs, race times each, and with beside > 0 the runs whose pool
// work and kernels overlap, beside times each.
func contentionCalibrationRuns(designs []string, race, beside int) []contentionCalibrationRun {
	runs := []contentionCalibrationRun{
		{dir: "designs", about: "every design with the CPU stages, whole card", designs: designs, whole: true},
		{dir: "probe", about: "single without CPU stages, whole card", designs: []string{"single"}, whole: true, noStages: true},
		{dir: "ballast", about: "split under the limit", designs: []string{"split"}},
		{dir: "probe-ballast", about: "single without CPU stages under the limit", designs: []string{"single"}, noStages: true},
	}
	if race > 0 {
		runs = append(runs, contentionCalibrationRun{dir: "race", about: "split-devsync at 3 and 4 workers, whole card",
			designs: []string{"split-devsync"}, workers: []int{3, 4}, whole: true, race: true, runs: race})
	}
	if beside > 0 {
		runs = append(runs, contentionCalibrationRun{dir: "beside", about: "split and split-first at 2-4 workers, whole card",
			designs: []string{"split", "split-first"}, workers: []int{2, 3, 4}, whole: true, beside: true, runs: beside})
	}
	return runs
}

// workerCounts are the worker counts r runs: one unless it names others.
func (r contentionCalibrationRun) workerCounts() []int {
	if len(r.workers) == 0 {
		return []int{1}
	}
	return r.workers
}

func runContentionCalibrate(c *cli.Context) error {
	spec, err := contentionSpecFrom(c)
	if err != nil {
		return err
	}
	card, err := parseBytes(c.String("card"))
	if err != nil || card <= 0 {
		return fmt.Errorf("--card %q: want a size such as 140GiB", c.String("card"))
	}
	if spec.limit >= card {
		return fmt.Errorf("--vram-limit %s: the limited runs need a limit below the whole card's --card %s", gpu.FormatBytes(spec.limit), gpu.FormatBytes(card))
	}
	if spec.headroom >= card {
		return fmt.Errorf("--headroom %s leaves nothing of the %s card to the designs", gpu.FormatBytes(spec.headroom), gpu.FormatBytes(card))
	}
	designs := []string{"single"}
	for _, d := range strings.Split(c.String("designs"), ",") {
		if _, err := actors.LookupDesign(d); err != nil {
			return fmt.Errorf("--designs: %w", err)
		}
		if !slices.Contains(designs, d) {
			designs = append(designs, d)
		}
	}
	base, err := sim.LoadProfile(c.String("base"))
	if err != nil {
		return fmt.Errorf("--base: %w", err)
	}
	dir := c.String("dir")
	race, beside := c.Int("race"), c.Int("beside")
	if c.Bool("fit-only") {
		race, beside = 1, 1 // the racing and beside runs' traces, where the calibration has them
	}
	runs := contentionCalibrationRuns(designs, race, beside)
	if !c.Bool("fit-only") {
		if c.String("backend") != "emu" && c.String("backend") != "gpu" {
			return fmt.Errorf("bench contention calibrate --backend %s: want emu or gpu", c.String("backend"))
		}
		if err := runContentionCalibration(c, spec, card, dir, runs); err != nil {
			return err
		}
	}
	in, err := contentionCalibrationTraces(dir, runs, spec, base, c.String("name"))
	if err != nil {
		return err
	}
	// The race runs' share is fitted through the simulator below, where
	// their partitions are known, not set from the traces alone.
	raceTraces := in.race
	in.race = nil
	f, err := in.fit()
	if err != nil {
		return err
	}
	// No trace carries the kernel's scratch; the runs had the flag's.
	f.profile.Partition.ScratchGiB = float64(spec.scratch) / (1 << 30)
	// Nor the card: the whole-card runs recorded it.
	ran, err := readCalibrationCard(dir)
	if err != nil {
		return err
	}
	if ran != nil {
		ran.apply(f.profile)
	}
	var rf raceFit
	if len(raceTraces) > 0 {
		if f.profile, rf, err = fitLaterFirst(f.profile, spec, card, raceTraces); err != nil {
			return fmt.Errorf("race/: %w", err)
		}
	}
	f.print(c.App.ErrWriter, base)
	fmt.Fprintf(c.App.ErrWriter, "partition.scratch_gib  from --scratch → %g\n", f.profile.Partition.ScratchGiB)
	if ran != nil {
		fmt.Fprintf(c.App.ErrWriter, "device.name, device.vram_gib  the whole-card runs' device → %s, %g\n", f.profile.Device.Name, f.profile.Device.VRAMGiB)
	} else {
		fmt.Fprintf(c.App.ErrWriter, "device.name, device.vram_gib  no %s in --dir: --base's → %s, %g\n", calibrationCardFile, f.profile.Device.Name, f.profile.Device.VRAMGiB)
	}
	if len(raceTraces) > 0 {
		model := fmt.Sprintf("through the simulator, at %g it loses %d of %d (%.1f %%) → %g",
			rf.laterFirst, rf.model.Lost, rf.model.Ties, 100*rf.model.LostShare(), rf.laterFirst)
		if rf.noSay {
			model = fmt.Sprintf("the simulator loses %d of %d (%.1f %%) at any later_first: kept at %g",
				rf.model.Lost, rf.model.Ties, 100*rf.model.LostShare(), rf.laterFirst)
		}
		fmt.Fprintf(c.App.ErrWriter, "host.handoff.later_first  the race runs lost %d of %d launch/device-sync ties (%.1f %%); %s\n",
			rf.card.Lost, rf.card.Ties, 100*rf.card.LostShare(), model)
	}
	out := c.String("out")
	if out == "" {
		out = filepath.Join(dir, "profile.json")
	}
	if err := writeProfile(c.App.Writer, out, f.profile); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "profile %s written to %s; predict with\n  cuzk bench contention --backend sim --profile %s --seeds 64 %s\n",
		f.profile.Name, out, out, contentionSpecFlags(spec))
	return nil
}

// runContentionCalibration makes each of runs in its directory under dir:
// every design it names with its workers (one unless it names others), its
// runs or --runs times, its table in <dir>.txt, progress on stderr.
func runContentionCalibration(c *cli.Context, spec contentionSpec, card int64, dir string, runs []contentionCalibrationRun) error {
	// These runs' card is recorded afresh, not one an earlier calibration
	// in dir left.
	if err := os.Remove(filepath.Join(dir, calibrationCardFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("--dir: %w", err)
	}
	for i, r := range runs {
		s := spec
		if r.whole {
			s.limit = card
		}
		if r.noStages {
			s.before, s.after = 0, 0
		}
		sub := filepath.Join(dir, r.dir)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return fmt.Errorf("--dir: %w", err)
		}
		open := contentionOpener(c, s)
		if r.whole {
			open = recordingCard(open, dir, s.headroom)
		}
		t0 := time.Now()
		var rows []contentionRow
		n := r.runs
		if n == 0 {
			n = c.Int("runs")
		}
		for _, d := range r.designs {
			for _, w := range r.workerCounts() {
				row, err := runContentionDraws(c.Context, open, s, d, w, n, filepath.Join(sub, contentionTraceName(d, w)))
				if err != nil {
					return fmt.Errorf("calibration %s, %s × %d: %w", r.dir, d, w, err)
				}
				printContentionErrors(c.App.ErrWriter, row)
				rows = append(rows, row)
			}
		}
		if err := writeContentionTable(filepath.Join(dir, r.dir+".txt"), s, rows); err != nil {
			return err
		}
		fmt.Fprintf(c.App.ErrWriter, "calibration %d/%d %-14s %s (%s limit): %d runs in %.1f s\n", i+1, len(runs), r.dir, r.about,
			gpu.FormatBytes(s.limit), len(rows)*n, time.Since(t0).Seconds())
	}
	return nil
}

// writeContentionTable writes a calibration run's table, headed by its spec,
// to path.
func writeContentionTable(path string, s contentionSpec, rows []contentionRow) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "%s\n", contentionSpecFlags(s))
	printContention(f, rows)
	return f.Close()
}

// contentionCalibrationTraces gathers the fit's traces from dir, as
// contention_fit.sh does: single's first run with the CPU stages gives the
// stage costs, every whole-card run the device's figures, the limited runs
// the pool's costs under the ballast; the racing runs, where there are any,
// the handoff's ties; the beside runs, the pool's work beside kernels.
func contentionCalibrationTraces(dir string, runs []contentionCalibrationRun, spec contentionSpec, base *sim.Profile, name string) (calibration, error) {
	in := calibration{base: base, constraints: spec.size, ballastLimit: spec.limit, name: name}
	// trace is run i's trace of design d in sub, gzipped or not; "" when
	// there is none.
	trace := func(sub, d string, w, i int) string {
		p := drawTracePath(filepath.Join(dir, sub, contentionTraceName(d, w)), "r", i)
		for _, q := range []string{p, p + ".gz"} {
			if _, err := os.Stat(q); err == nil {
				return q
			}
		}
		return ""
	}
	first := trace(runs[0].dir, "single", 1, 1)
	if first == "" {
		return in, fmt.Errorf("--dir %s: no calibration there (no %s/trace-single-w1.json); run without --fit-only first", dir, runs[0].dir)
	}
	paths := []string{first}
	var ballast, race, beside []string
	for _, r := range runs {
		for _, d := range r.designs {
			for _, w := range r.workerCounts() {
				// A run's first trace, then run i's (-r<i>) in order.
				for i := 1; ; i++ {
					p := trace(r.dir, d, w, i)
					if p == "" {
						break
					}
					switch {
					case r.race:
						race = append(race, p)
					case r.beside:
						beside = append(beside, p)
					case !r.whole:
						ballast = append(ballast, p)
					case p != first:
						paths = append(paths, p)
					}
				}
			}
		}
	}
	var err error
	if in.traces, err = readSimTraces("trace", paths); err != nil {
		return in, err
	}
	if in.ballast, err = readSimTraces("ballast-trace", ballast); err != nil {
		return in, err
	}
	if in.race, err = readSimTraces("race-trace", race); err != nil {
		return in, err
	}
	if in.beside, err = readSimTraces("beside-trace", beside); err != nil {
		return in, err
	}
	if len(in.ballast) == 0 {
		return in, errors.New("--dir: no run under the limit (ballast/, probe-ballast/) to fit the pool's costs under it from")
	}
	return in, nil
}

// contentionSpecFlags are the bench contention flags that give spec's
// partition, costs and limit.
func contentionSpecFlags(s contentionSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--kernel %v --before %v --after %v --staged %s --copy %s", s.kernel, s.before, s.after, flagBytes(s.staged), flagBytes(s.copy))
	for _, f := range []struct {
		name string
		v    int64
	}{{"scratch", s.scratch}, {"headroom", s.headroom}} {
		if f.v > 0 {
			fmt.Fprintf(&b, " --%s %s", f.name, flagBytes(f.v))
		}
	}
	fmt.Fprintf(&b, " --vram-limit %s --items %d --constraints %d", flagBytes(s.limit), s.items, s.size)
	if s.lockHops {
		b.WriteString(" --lock-hops")
	}
	return b.String()
}

// calibrationCardFile is where a calibration's directory keeps the card its
// whole-card runs had, for the fit (and a later --fit-only).
const calibrationCardFile = "card.json"

// calibrationCard is the card a calibration ran on: its name and the device
// memory the designs had on the whole card (the free memory at the run's
// start). The base profile's are another card's (the H200's 139.8 GiB), and
// the simulator gives a run at most the profile's memory, so a profile of a
// smaller card that kept them would predict its whole card as an H200's.
type calibrationCard struct {
	Name  string `json:"name"`
	Bytes int64  `json:"memory_bytes"`
}

// apply sets p's device name and memory to the card's, and says so in the
// device's source.
func (cc *calibrationCard) apply(p *sim.Profile) {
	p.Device.Name = cc.Name
	p.Device.VRAMGiB = math.Round(float64(cc.Bytes)/(1<<30)*10) / 10
	p.Device.Source = "name and vram_gib: the calibration's whole-card runs' device; " + p.Device.Source
}

// recordingCard wraps open so that the first device it opens, where dir has
// no card yet, is recorded there as the calibration's card (its memory with
// the spec's headroom, which the device leaves out of what it reports, added
// back).
func recordingCard(open func() (contentionDevice, error), dir string, headroom int64) func() (contentionDevice, error) {
	return func() (contentionDevice, error) {
		d, err := open()
		if err != nil {
			return d, err
		}
		path := filepath.Join(dir, calibrationCardFile)
		if _, err := os.Stat(path); err == nil {
			return d, nil
		}
		info := d.Device().Info()
		b, err := json.MarshalIndent(calibrationCard{Name: info.Name, Bytes: info.Total + headroom}, "", "  ")
		if err == nil {
			err = os.WriteFile(path, append(b, '\n'), 0o644)
		}
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("--dir: %w", err)
		}
		return d, nil
	}
}

// readCalibrationCard reads the card dir's calibration recorded; nil where
// it recorded none (a calibration made before cards were recorded).
func readCalibrationCard(dir string) (*calibrationCard, error) {
	b, err := os.ReadFile(filepath.Join(dir, calibrationCardFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--dir: %w", err)
	}
	var cc calibrationCard
	if err := json.Unmarshal(b, &cc); err != nil {
		return nil, fmt.Errorf("--dir: %s: %w", calibrationCardFile, err)
	}
	if cc.Name == "" || cc.Bytes <= 0 {
		return nil, fmt.Errorf("--dir: %s: want a name and a positive memory_bytes, got %q and %d", calibrationCardFile, cc.Name, cc.Bytes)
	}
	return &cc, nil
}
