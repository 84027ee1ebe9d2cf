package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/urfave/cli/v2"
	"google.golang.org/protobuf/types/known/durationpb"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/gen/cuzk/v1/cuzkv1connect"
)

// keysCommand manages a running daemon's key sets.
func keysCommand() *cli.Command {
	return &cli.Command{
		Name:  "keys",
		Usage: "load or free a running daemon's key sets (PreloadKeys, EvictKeys); cuzk setup --daemon makes one there",
		Subcommands: []*cli.Command{
			{
				Name:  "preload",
				Usage: "load key sets made before into the daemon's host memory (and its devices on the GPU backend); it never runs a setup",
				Flags: append([]cli.Flag{
					&cli.StringSliceFlag{Name: "key", Usage: "a key set as `CIRCUIT:CONSTRAINTS` (mimc:2K, porep:2^20); repeatable, at least one"},
				}, askDaemonFlags()...),
				Action: func(c *cli.Context) error {
					cl, err := daemonOnly(c, "keys preload")
					if err != nil {
						return err
					}
					refs, err := keyRefs(c.StringSlice("key"))
					if err != nil {
						return err
					}
					ctx, cancel := callCtx(c)
					defer cancel()
					res, err := cl.PreloadKeys(ctx, connect.NewRequest(&cuzkv1.PreloadKeysRequest{Keys: refs}))
					if err != nil {
						return daemonErr(c, err)
					}
					var rows [][]string
					for _, k := range res.Msg.KeySets {
						rows = append(rows, []string{k.Dir, k.Circuit, fmt.Sprint(k.Constraints), k.Tier, sizeText(k.Size)})
					}
					table(c.App.Writer, []string{"KEY SET", "CIRCUIT", "CONSTRAINTS", "TIER", "SIZE"}, rows)
					return nil
				},
			},
			{
				Name:  "evict",
				Usage: "free the daemon's key sets that no running job holds (with --idle, only those unused that long): device copies and host memory",
				Flags: append([]cli.Flag{
					&cli.DurationFlag{Name: "idle", Usage: "free only what no job has used this long (0: every key set no running job holds)", Action: nonNegativeDuration[time.Duration]("idle")},
				}, askDaemonFlags()...),
				Action: func(c *cli.Context) error {
					cl, err := daemonOnly(c, "keys evict")
					if err != nil {
						return err
					}
					ctx, cancel := callCtx(c)
					defer cancel()
					res, err := cl.EvictKeys(ctx, connect.NewRequest(&cuzkv1.EvictKeysRequest{Idle: durationpb.New(c.Duration("idle"))}))
					if err != nil {
						return daemonErr(c, err)
					}
					fmt.Fprintf(c.App.Writer, "%d key sets freed, %s of device memory\n", res.Msg.KeySets, sizeText(res.Msg.DeviceBytes))
					return nil
				},
			},
		},
	}
}

// daemonOnly is the client of a command that only a daemon answers.
func daemonOnly(c *cli.Context, name string) (cuzkv1connect.ProvingEngineClient, error) {
	if c.Args().Len() > 0 {
		return nil, fmt.Errorf("usage: cuzk %s --daemon ADDR: unexpected arguments %q", name, c.Args().Slice())
	}
	if c.String("daemon") == "" {
		return nil, fmt.Errorf("usage: cuzk %s --daemon ADDR: --daemon is required", name)
	}
	return daemonClient(c)
}

// keyRefs reads CIRCUIT:CONSTRAINTS pairs.
func keyRefs(specs []string) ([]*cuzkv1.KeySetRef, error) {
	if len(specs) == 0 {
		return nil, errors.New("--key CIRCUIT:CONSTRAINTS is required (e.g. --key porep:16K)")
	}
	var out []*cuzkv1.KeySetRef
	for _, s := range specs {
		circuit, size, ok := strings.Cut(s, ":")
		if !ok || circuit == "" {
			return nil, fmt.Errorf("--key %q: want CIRCUIT:CONSTRAINTS (e.g. porep:16K)", s)
		}
		n, err := parseCount(size)
		if err != nil {
			return nil, fmt.Errorf("--key %q: %w", s, err)
		}
		out = append(out, &cuzkv1.KeySetRef{Circuit: circuit, Constraints: uint64(n)})
	}
	return out, nil
}

// setupOnDaemon makes a key set on the daemon (StartSetup) and, with --wait,
// follows the task (GetSetup) until it ends.
func setupOnDaemon(c *cli.Context) error {
	for _, f := range []string{"keys", "r1cs", "points-file", "gpu-lib", "keygen"} {
		if c.IsSet(f) {
			return fmt.Errorf("--%s goes with a setup in this process: the daemon makes keys under its own --keys, as it was started", f)
		}
	}
	if c.Args().Len() > 0 {
		return fmt.Errorf("usage: cuzk setup --daemon ADDR --circuit C --constraints N [--wait]: unexpected arguments %q", c.Args().Slice())
	}
	cl, err := daemonClient(c)
	if err != nil {
		return err
	}
	n, err := parseCount(c.String("constraints"))
	if err != nil {
		return fmt.Errorf("--constraints: %w", err)
	}
	ctx, cancel := callCtx(c)
	task, err := cl.StartSetup(ctx, connect.NewRequest(&cuzkv1.StartSetupRequest{Keys: &cuzkv1.KeySetRef{Circuit: c.String("circuit"), Constraints: uint64(n)}}))
	cancel()
	if err != nil {
		return daemonErr(c, err)
	}
	t := task.Msg
	fmt.Fprintln(c.App.Writer, t.TaskId)
	fmt.Fprintf(c.App.ErrWriter, "setup %s of %s at %d constraints: %s, into %s (host memory expected %s)\n",
		t.TaskId, t.Keys.GetCircuit(), t.Keys.GetConstraints(), t.State, t.Dir, sizeText(t.MemoryEstimate))
	if !c.Bool("wait") {
		return nil
	}
	return waitSetup(c, cl, t, c.App.ErrWriter)
}

// setupPoll is how often --wait asks after a setup.
const setupPoll = 500 * time.Millisecond

func waitSetup(c *cli.Context, cl cuzkv1connect.ProvingEngineClient, t *cuzkv1.SetupTask, w io.Writer) error {
	for t.State == "running" {
		select {
		case <-c.Context.Done():
			return c.Context.Err()
		case <-time.After(setupPoll):
		}
		ctx, cancel := callCtx(c)
		res, err := cl.GetSetup(ctx, connect.NewRequest(&cuzkv1.GetSetupRequest{TaskId: t.TaskId}))
		cancel()
		if err != nil {
			return daemonErr(c, err)
		}
		t = res.Msg
	}
	took := t.Finished.AsTime().Sub(t.Started.AsTime()).Round(time.Millisecond)
	if t.State != "done" {
		return fmt.Errorf("setup %s %s after %s: %s", t.TaskId, t.State, took, t.Error)
	}
	fmt.Fprintf(w, "setup %s done in %s: %s\n", t.TaskId, took, t.Dir)
	return nil
}
