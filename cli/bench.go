package cli

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/consensys/gnark/backend/groth16"
	"github.com/urfave/cli/v2"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/prover"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure the prover and its kernels, printing tables",
		Subcommands: []*cli.Command{
			benchProveCommand(),
			benchMSMCommand(),
			benchNTTCommand(),
			benchPeerCommand(),
			benchContentionCommand(),
			benchInterferenceCommand(),
			benchPoolBesideCommand(),
		},
	}
}

func benchProveCommand() *cli.Command {
	return &cli.Command{
		Name:  "prove",
		Usage: "staged prover against gnark's groth16.Prove on the same circuit, same run",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "circuit", Value: "mimc", Usage: "example circuit: mimc, porep, sha, porep-sha or sha2"},
			&cli.StringFlag{Name: "sizes", Value: "4K,64K,1M", Usage: "target constraint counts, comma separated"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "timed runs per prover and size (after one warm-up)", Action: intAtLeast("runs", 1)},
			&cli.StringFlag{Name: "keys", Value: "build/keys", Usage: "key cache directory (keys are made when missing); " + keysInMemory + ": made in this process for the run and never written (for disks that cannot hold them); with the GPU backend their points move into pinned memory where a plan streams them from there, and, with --gnark-runs 0, the constraint system's instructions are released once cuzk's solver has its program (the host holds each once)"},
			&cli.StringFlag{Name: "backend", Value: "cpu", Usage: "cpu: the staged prover against gnark's; gpu: jobs through the actors on the GPU per design and worker count"},
			keygenFlag(),
			solverFlag(),
		}, benchGPUFlags()...),
		Action: func(c *cli.Context) error {
			gpuMode := c.String("backend") == "gpu"
			if c.String("backend") != "cpu" && !gpuMode {
				return fmt.Errorf("bench prove --backend %s: want cpu or gpu", c.String("backend"))
			}
			if c.Int("runs") < 1 {
				return fmt.Errorf("--runs must be at least 1")
			}
			circ, err := circuits.Lookup(c.String("circuit"))
			if err != nil {
				return err
			}
			var sizes []int
			for _, s := range strings.Split(c.String("sizes"), ",") {
				n, err := parseCount(s)
				if err != nil {
					return fmt.Errorf("--sizes: %w", err)
				}
				sizes = append(sizes, n)
			}
			type row struct {
				target, constraints   int
				gnark, staged, verify time.Duration
				stages                prover.Timings
			}
			var rows []row
			for _, target := range sizes {
				l, err := circ.Layout(target)
				if err != nil {
					return err
				}
				ks, err := keySpecFor(c, circ, target, l)
				if err != nil {
					return err
				}
				var k *prover.Keys
				if c.String("keys") == keysInMemory {
					// Keys made for a GPU run that proves with cuzk's
					// solver alone give up, while they are made, what it
					// does not need: the system's instructions once laid
					// out, and the domain's FFT tables (the device makes
					// its own): 29 GiB at porep-sha's 2^27.
					var opt prover.InMemoryOptions
					if gpuMode && c.Int("gnark-runs") == 0 {
						opt.Dump.NoDomainTables = true
						opt.ReleaseSystem = ks.solver != prover.SolverGnark
					}
					k, err = setupInMemory(ks, opt, c.App.ErrWriter)
				} else {
					k, err = loadKeys(ks, true, c.App.ErrWriter)
				}
				if err != nil {
					return err
				}
				if gpuMode {
					if err := benchProveGPU(c, k); err != nil {
						return err
					}
					continue
				}
				r := row{target: target, constraints: k.Constraints()}
				r.gnark, r.staged, r.verify, r.stages, err = benchOne(c.Context, k, c.Int("runs"))
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.ErrWriter, "bench: %s %d constraints: gnark %s, staged %s\n", circ.Name(), r.constraints, ms(r.gnark), ms(r.staged))
				rows = append(rows, r)
			}
			if gpuMode {
				return nil
			}
			fmt.Fprintf(c.App.Writer, "circuit %s, %d cores, median of %d runs, times in ms\n", circ.Name(), runtime.NumCPU(), c.Int("runs"))
			tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "constraints\tgnark Prove\tstaged\tof which verify\tstaged − verify\toverhead\tsynth\tprep\tcompute\tb_g2\tfinalize\t")
			for _, r := range rows {
				net := r.staged - r.verify
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%+.1f%%\t%s\t%s\t%s\t%s\t%s\t\n", r.constraints, ms(r.gnark), ms(r.staged), ms(r.verify), ms(net),
					100*(float64(net)/float64(r.gnark)-1),
					ms(r.stages["synthesize"]), ms(r.stages["prep"]), ms(r.stages["compute"]), ms(r.stages["b_g2"]), ms(r.stages["finalize"]))
			}
			return tw.Flush()
		},
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e6) }

// benchOne times gnark's prover and the staged pipeline alternately on the
// same witness, and the verification that the staged pipeline's finalize
// includes, returning medians.
func benchOne(ctx context.Context, k *prover.Keys, runs int) (gnark, staged, verify time.Duration, stages prover.Timings, err error) {
	w, err := prover.Witness(k, []byte("bench"), 0)
	if err != nil {
		return
	}
	pub, err := w.Public()
	if err != nil {
		return
	}
	var g, s, v []time.Duration
	perStage := map[string][]time.Duration{}
	for i := 0; i <= runs; i++ {
		start := time.Now()
		if _, err = groth16.Prove(k.CS, k.PK, w); err != nil {
			return
		}
		gt := time.Since(start)
		start = time.Now()
		var proof *groth16bls.Proof
		var t prover.Timings
		proof, t, err = prover.Prove(ctx, k, prover.CPU{}, w, nil)
		if err != nil {
			return
		}
		st := time.Since(start)
		start = time.Now()
		if err = groth16.Verify(proof, k.VK, pub); err != nil {
			return
		}
		vt := time.Since(start)
		if i == 0 {
			continue // warm-up
		}
		g, s, v = append(g, gt), append(s, st), append(v, vt)
		for name, d := range t {
			perStage[name] = append(perStage[name], d)
		}
	}
	stages = prover.Timings{}
	for name, ds := range perStage {
		stages[name] = median(ds)
	}
	return median(g), median(s), median(v), stages, nil
}

// median is the middle of ds: the mean of the two middle values for an even
// count, 0 for none.
func median[T ~int64 | ~float64](ds []T) T {
	s := slices.Clone(ds)
	slices.Sort(s)
	switch {
	case len(s) == 0:
		return 0
	case len(s)%2 == 1:
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
