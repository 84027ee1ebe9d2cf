// Package cli holds the cuzk command-line interface (urfave/cli/v2).
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	rtrace "runtime/trace"
	"strings"

	"github.com/consensys/gnark/logger"
	"github.com/urfave/cli/v2"
)

// Version is set at build time with -ldflags "-X github.com/cuzk/cuzk/cli.Version=...".
var Version = "dev"

// App returns the cuzk application. Each command lives in a file of its own.
func App() *cli.App {
	prof := &profile{}
	app := &cli.App{
		Name:                 "cuzk",
		Usage:                "prove partitioned Groth16 jobs (BLS12-381) on GPUs, and simulate how workers share them",
		EnableBashCompletion: true,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "verbose", Usage: "log debug messages, gnark's included"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the whole command to this file (go tool pprof)"},
			&cli.StringFlag{Name: "go-trace", Usage: "write Go's execution trace of the whole command to this file (go tool trace); the workers' stage starts and device calls are logged in it"},
		},
		Before: func(c *cli.Context) error {
			level := slog.LevelInfo
			if c.Bool("verbose") {
				level = slog.LevelDebug
			} else {
				logger.Disable()
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level})))
			return prof.start(c.String("cpuprofile"), c.String("go-trace"))
		},
		After: func(*cli.Context) error { return prof.stop() },
		Commands: []*cli.Command{
			proveCommand(),
			resumeCommand(),
			daemonCommand(),
			submitCommand(),
			statusCommand(),
			setupCommand(),
			keysCommand(),
			verifyCommand(),
			exportCommand(),
			jobsCommand(),
			jobCommand(),
			benchCommand(),
			simCommand(),
			versionCommand(),
		},
	}
	refuseStrayArgs(app.Commands, "")
	return app
}

// refuseStrayArgs makes every command that takes no arguments (no
// ArgsUsage) fail on one instead of ignoring it: flags given after a word
// that is not a flag are not parsed, so `cuzk prove --witness a b` would
// otherwise prove a alone, and a mistyped subcommand would run its parent.
func refuseStrayArgs(cmds []*cli.Command, parent string) {
	for _, cmd := range cmds {
		name := strings.TrimSpace(parent + " " + cmd.Name)
		refuseStrayArgs(cmd.Subcommands, name)
		if cmd.Action == nil || cmd.ArgsUsage != "" {
			continue
		}
		action := cmd.Action
		cmd.Action = func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("%s: unexpected arguments %q: it takes flags only, a repeatable one once per value (see --help)", name, c.Args().Slice())
			}
			return action(c)
		}
	}
}

// flagsBeforeFiles, for a command that takes files, refuses arguments that
// look like flags: they came after a word that is not one, where they are no
// longer parsed as flags. Then it checks the flags named in required: such a
// command checks them here rather than through urfave's Required, which
// would report a required flag given after a file as missing before this
// check could name it as misplaced.
func flagsBeforeFiles(c *cli.Context, required ...string) error {
	for _, a := range c.Args().Slice() {
		if len(a) > 1 && a[0] == '-' {
			return fmt.Errorf("%s: flag %q after %q: give the flags before the files", c.Command.FullName(), a, c.Args().First())
		}
	}
	var missing []string
	for _, name := range required {
		if !c.IsSet(name) {
			missing = append(missing, "--"+name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: required flags not set: %s", c.Command.FullName(), strings.Join(missing, ", "))
	}
	return nil
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version of cuzk and of its proving libraries",
		Action: func(c *cli.Context) error {
			fmt.Fprintf(c.App.Writer, "cuzk %s\n", Version)
			// Go sizes GOMAXPROCS from the container's CPU quota, which may be
			// less than the machine's CPUs: the CPU stages share that many.
			fmt.Fprintf(c.App.Writer, "cpus %d, GOMAXPROCS %d\n", runtime.NumCPU(), runtime.GOMAXPROCS(0))
			if bi, ok := debug.ReadBuildInfo(); ok {
				fmt.Fprintf(c.App.Writer, "go %s\n", bi.GoVersion)
				for _, d := range bi.Deps {
					switch d.Path {
					case "github.com/consensys/gnark", "github.com/consensys/gnark-crypto",
						"github.com/asynkron/protoactor-go", "github.com/cockroachdb/pebble/v2":
						fmt.Fprintf(c.App.Writer, "%s %s\n", d.Path, d.Version)
					}
				}
			}
			return nil
		},
	}
}

// profile is the --cpuprofile and the --go-trace of one run of the app.
type profile struct{ cpu, trace *os.File }

func (p *profile) start(cpu, trace string) error {
	if cpu != "" {
		f, err := os.Create(cpu)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		p.cpu = f
	}
	if trace != "" {
		f, err := os.Create(trace)
		if err != nil {
			return errors.Join(fmt.Errorf("--go-trace: %w", err), p.stop())
		}
		if err := rtrace.Start(f); err != nil {
			f.Close()
			return errors.Join(fmt.Errorf("--go-trace: %w", err), p.stop())
		}
		p.trace = f
	}
	return nil
}

func (p *profile) stop() error {
	var err error
	if p.cpu != nil {
		pprof.StopCPUProfile()
		err = p.cpu.Close()
		p.cpu = nil
	}
	if p.trace != nil {
		rtrace.Stop()
		err = errors.Join(err, p.trace.Close())
		p.trace = nil
	}
	return err
}

// printJSON prints v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
