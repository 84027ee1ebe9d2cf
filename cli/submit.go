package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"connectrpc.com/connect"
	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/actors"
	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/gen/cuzk/v1/cuzkv1connect"
)

func submitCommand() *cli.Command {
	return &cli.Command{
		Name:  "submit",
		Usage: "submit a job to a running daemon (SubmitProof); with --wait, follow it to its end",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "circuit", Usage: "an example circuit of the daemon's key sets: mimc, porep, sha, porep-sha or sha2"},
			&cli.StringFlag{Name: "constraints", Usage: "with --circuit: the key set's target constraints per partition (e.g. 16K, 1M, 2^20)"},
			&cli.StringFlag{Name: "key-set", Usage: "a user's circuit: the key set's directory name under the daemon's --keys (cuzk setup --r1cs makes one); its partitions are the --witness files"},
			&cli.StringSliceFlag{Name: "witness", Usage: "with --key-set: one witness `FILE` per partition (gnark's witness.MarshalBinary of the full witness)"},
			&cli.IntFlag{Name: "partitions", Value: 1, Usage: "with --circuit: partitions in the job, 1 to 100000", Action: partitionsFlag("partitions")},
			&cli.StringFlag{Name: "priority", Value: "NORMAL", Usage: "LOW, NORMAL, HIGH or CRITICAL"},
			&cli.StringFlag{Name: "seed", Usage: "with --circuit: the job's seed (hex), which makes its witnesses (default: random)"},
			&cli.StringFlag{Name: "idempotency-key", Usage: "a key that names the job: a submission repeated with it finds the first one's job rather than adding another"},
			&cli.BoolFlag{Name: "wait", Usage: "follow the job until it ends (WatchJob), printing each partition's end; fails unless the job is done"},
			&cli.StringFlag{Name: "out", Usage: "with --wait: write the done job's proofs to this directory"},
		}, askDaemonFlags()...),
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return fmt.Errorf("cuzk submit: unexpected arguments %q", c.Args().Slice())
			}
			req, err := submitProofRequest(c)
			if err != nil {
				return err
			}
			if c.String("out") != "" && !c.Bool("wait") {
				return errors.New("--out goes with --wait")
			}
			if c.String("daemon") == "" {
				return errors.New("--daemon ADDR is required: cuzk submit hands a job to a running daemon (cuzk prove proves one in this process)")
			}
			cl, err := daemonClient(c)
			if err != nil {
				return err
			}
			ctx, cancel := callCtx(c)
			res, err := cl.SubmitProof(ctx, connect.NewRequest(req))
			cancel()
			if err != nil {
				return daemonErr(c, err)
			}
			id := res.Msg.JobId
			fmt.Fprintln(c.App.Writer, id)
			if res.Msg.Existing {
				fmt.Fprintf(c.App.ErrWriter, "job %s: the idempotency key's job, submitted before\n", id)
			} else {
				fmt.Fprintf(c.App.ErrWriter, "job %s submitted, %d jobs ahead of it\n", id, res.Msg.QueuePosition)
			}
			if !c.Bool("wait") {
				return nil
			}
			done, err := followJob(c, cl, id)
			if err != nil {
				return err
			}
			if out := c.String("out"); out != "" {
				n, err := writeAwaitedProofs(id, out, done)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.ErrWriter, "job %s: %d proofs written to %s\n", id, n, out)
			}
			return nil
		},
	}
}

// submitProofRequest is the SubmitProofRequest the flags describe.
func submitProofRequest(c *cli.Context) (*cuzkv1.SubmitProofRequest, error) {
	prio, err := actors.ParsePriority(c.String("priority"))
	if err != nil {
		return nil, fmt.Errorf("--priority: %w", err)
	}
	req := &cuzkv1.SubmitProofRequest{IdempotencyKey: c.String("idempotency-key"),
		Priority: cuzkv1.Priority(cuzkv1.Priority_value["PRIORITY_"+strings.ToUpper(prio.String())])}
	switch circuit, set := c.String("circuit"), c.String("key-set"); {
	case circuit != "" && set != "":
		return nil, errors.New("--circuit and --key-set: give one (an example circuit, or a user's with its --witness files)")
	case circuit != "":
		if len(c.StringSlice("witness")) > 0 {
			return nil, errors.New("--witness goes with --key-set")
		}
		if c.String("constraints") == "" {
			return nil, errors.New("--circuit needs --constraints: the key set's target constraints per partition")
		}
		n, err := parseCount(c.String("constraints"))
		if err != nil {
			return nil, fmt.Errorf("--constraints: %w", err)
		}
		var seed []byte
		if s := c.String("seed"); s != "" {
			if seed, err = jobSeed(s); err != nil {
				return nil, err
			}
		}
		req.Circuit = &cuzkv1.SubmitProofRequest_Example{Example: &cuzkv1.ExampleCircuit{
			Keys: &cuzkv1.KeySetRef{Circuit: circuit, Constraints: uint64(n)}, Seed: seed}}
		req.Partitions = uint32(c.Int("partitions"))
	case set != "":
		files := c.StringSlice("witness")
		if len(files) == 0 {
			return nil, errors.New("--key-set needs its --witness files, one per partition")
		}
		for _, f := range []string{"constraints", "seed"} {
			if c.String(f) != "" {
				return nil, fmt.Errorf("--%s goes with --circuit", f)
			}
		}
		if c.IsSet("partitions") && c.Int("partitions") != len(files) {
			return nil, fmt.Errorf("--partitions %d with %d witness files: a job has one partition per witness", c.Int("partitions"), len(files))
		}
		out := &cuzkv1.OutsideCircuit{KeySet: set}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("--witness: %w", err)
			}
			out.Witnesses = append(out.Witnesses, b)
		}
		req.Circuit = &cuzkv1.SubmitProofRequest_Outside{Outside: out}
		req.Partitions = uint32(len(files))
	default:
		return nil, errors.New("--circuit (an example circuit, with --constraints) or --key-set (a user's, with --witness files) is required")
	}
	return req, nil
}

// followJob prints a job's partitions as they end (WatchJob) until the job
// ends, and fails unless it is done; it returns AwaitProof's answer, the
// proofs with it. Where the stream cannot keep up with the job it waits for
// the end (AwaitProof) instead.
func followJob(c *cli.Context, cl cuzkv1connect.ProvingEngineClient, id string) (*cuzkv1.AwaitProofResponse, error) {
	w := c.App.ErrWriter
	// Ctrl-C stops the following, not the job: say so.
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	stream, err := cl.WatchJob(ctx, connect.NewRequest(&cuzkv1.WatchJobRequest{JobId: id}))
	if err != nil {
		return nil, daemonErr(c, err)
	}
	ended := false
	for !ended && stream.Receive() {
		ended = printEvent(w, stream.Msg())
	}
	if err := stream.Err(); err != nil {
		stream.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("stopped following job %s, which runs on in the daemon (cuzk job watch %s --daemon %s follows it again)", id, id, c.String("daemon"))
		}
		if connect.CodeOf(err) != connect.CodeResourceExhausted {
			return nil, daemonErr(c, err)
		}
		fmt.Fprintf(w, "job %s: the event stream fell behind; waiting for the job's end\n", id)
	}
	stream.Close()
	res, err := cl.AwaitProof(ctx, connect.NewRequest(&cuzkv1.AwaitProofRequest{JobId: id}))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("stopped waiting for job %s, which runs on in the daemon (cuzk job watch %s --daemon %s follows it again)", id, id, c.String("daemon"))
		}
		return nil, daemonErr(c, err)
	}
	j := res.Msg.Job
	printRemoteJob(w, "ended", j)
	if j.State != cuzkv1.JobState_JOB_STATE_DONE {
		why := j.Error
		if why == "" {
			why = stateName(j.State)
		}
		return nil, fmt.Errorf("job %s did not end done: %s", id, why)
	}
	return res.Msg, nil
}

// printEvent writes a line for an event that ends a partition or the job;
// it reports whether the job has ended.
func printEvent(w io.Writer, ev *cuzkv1.JobEvent) bool {
	switch ev.Kind {
	case "partition_done":
		fmt.Fprintf(w, "partition %d proved (device %d worker %d)\n", ev.Partition, ev.Device, ev.Worker)
	case "partition_retry":
		fmt.Fprintf(w, "partition %d will be retried: %s\n", ev.Partition, ev.Error)
	case "partition_failed":
		fmt.Fprintf(w, "partition %d failed: %s\n", ev.Partition, ev.Error)
	case "partition_cancelled":
		fmt.Fprintf(w, "partition %d cancelled\n", ev.Partition)
	case "job_done":
		return true
	}
	return false
}
