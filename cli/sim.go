package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

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
			&cli.StringFlag{Name: "scenario", Usage: "embedded scenario name or path to a scenario file (JSON)", Required: true},
			&cli.StringFlag{Name: "design", Usage: "override the scenario's lock design (single, split-devsync, split, budget)"},
			&cli.IntFlag{Name: "workers", Usage: "override the workers per device"},
			&cli.Uint64Flag{Name: "seed", Usage: "override the scenario's seed"},
			&cli.Float64Flag{Name: "vram-gib", Usage: "override the device memory, GiB"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
			&cli.BoolFlag{Name: "compare", Usage: "run every design with 1 to 4 workers per device and print one table"},
			&cli.StringFlag{Name: "trace", Usage: "write the virtual timeline as a Chrome trace (the production trace format) to `FILE`"},
			&cli.StringFlag{Name: "timeline", Usage: "draw the virtual timeline as SVG to `FILE`"},
			&cli.Float64Flag{Name: "timeline-until", Usage: "draw only the first `SECONDS` of the timeline (default: all of it)"},
		},
		Action: runSim,
	}
}

func runSim(c *cli.Context) error {
	scn, err := sim.LoadScenario(c.String("scenario"))
	if err != nil {
		return err
	}
	o := sim.Options{Design: c.String("design"), Workers: c.Int("workers"), VRAMGiB: c.Float64("vram-gib")}
	if c.IsSet("seed") {
		seed := c.Uint64("seed")
		o.Seed = &seed
	}
	w := c.App.Writer
	if c.Bool("compare") {
		if c.IsSet("trace") || c.IsSet("timeline") || c.IsSet("design") || c.IsSet("workers") {
			return fmt.Errorf("sim: --compare runs every design and worker count; it takes no --design, --workers, --trace or --timeline")
		}
		reps, err := sim.Compare(scn, o, 4)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return sim.WriteCompareJSON(w, reps)
		}
		return sim.WriteCompareTable(w, reps)
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
