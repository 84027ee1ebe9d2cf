package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/gen/cuzk/v1/cuzkv1connect"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
	"github.com/urfave/cli/v2"
)

func storeFlag() *cli.StringFlag {
	// Not Required: urfave/cli checks that before jobArg has parsed the
	// flags written after the job id.
	return &cli.StringFlag{Name: "store", Usage: "the store directory (as given to prove --store); required"}
}

// openStoreReadOnly opens a store for listing or export. Pebble locks the
// directory even for reading, so a store in use fails; say why.
func openStoreReadOnly(dir string) (*store.Store, error) {
	st, err := store.Open(dir, &store.Options{ReadOnly: true})
	if errors.Is(err, store.ErrLocked) {
		return nil, fmt.Errorf("%w; a prove or resume is using it (try again once it is done), or a daemon (ask it: --daemon ADDR in place of --store, ListJobs or GetJob, GET /v1/jobs or GET /v1/jobs/ID)", err)
	}
	return st, err
}

// jobJSON is one job in the output of cuzk jobs --json.
type jobJSON struct {
	ID          string    `json:"id"`
	Circuit     string    `json:"circuit"`
	Constraints int64     `json:"constraints"`
	KeyHash     string    `json:"key_hash"`
	Priority    string    `json:"priority"`
	Partitions  int       `json:"partitions"`
	Proved      int       `json:"proved"`
	Failed      int       `json:"failed"`
	Pending     int       `json:"pending"` // neither proved nor failed (synthesized included)
	Synthesized int       `json:"synthesized"`
	Attempts    int       `json:"attempts"`
	Created     time.Time `json:"created"`
	Status      string    `json:"status"`
}

func jobsCommand() *cli.Command {
	return &cli.Command{
		Name:  "jobs",
		Usage: "list the jobs of a store, or of a running daemon, with their progress",
		Flags: append([]cli.Flag{
			storeFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print a JSON array instead of a table"},
		}, askDaemonFlags()...),
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return fmt.Errorf("usage: cuzk jobs --store DIR|--daemon ADDR [--json]: unexpected arguments %q", c.Args().Slice())
			}
			cl, err := daemonClient(c)
			if err != nil {
				return err
			}
			var rows []jobJSON
			switch {
			case cl != nil:
				jobs, err := remoteJobs(c, cl)
				if err != nil {
					return err
				}
				rows = remoteJobRows(jobs)
			case c.String("store") == "":
				return fmt.Errorf("usage: cuzk jobs --store DIR|--daemon ADDR [--json]: --store or --daemon is required")
			default:
				st, err := openStoreReadOnly(c.String("store"))
				if err != nil {
					return err
				}
				defer st.Close()
				jobs, err := st.Jobs()
				if err != nil {
					return err
				}
				rows = storeJobRows(jobs)
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, rows)
			}
			return printJobs(c.App.Writer, rows)
		},
	}
}

func storeJobRows(jobs []store.JobSummary) []jobJSON {
	out := make([]jobJSON, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, jobJSON{
			ID: j.ID, Circuit: j.Circuit, Constraints: j.Constraints, KeyHash: j.KeyHash,
			Priority: j.Priority.String(), Partitions: j.NumPartitions, Proved: j.Proved, Failed: j.Failed,
			Pending: j.Pending + j.Synthesized, Synthesized: j.Synthesized, Attempts: j.Attempts,
			Created: j.Created, Status: runner.StoredState(j),
		})
	}
	return out
}

func printJobs(w io.Writer, jobs []jobJSON) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCIRCUIT\tPRIORITY\tPARTITIONS\tPROVED\tFAILED\tPENDING\tATTEMPTS\tCREATED\tSTATUS")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", j.ID, j.Circuit, j.Priority, j.Partitions,
			j.Proved, j.Failed, j.Pending, j.Attempts, j.Created.Local().Format(time.DateTime), j.Status)
	}
	return tw.Flush()
}

const jobUsage = "--store DIR|--daemon ADDR"

func jobCommand() *cli.Command {
	withDaemon := func(fs ...cli.Flag) []cli.Flag { return append(fs, askDaemonFlags()...) }
	return &cli.Command{
		Name:  "job",
		Usage: "look at one job of a store or of a running daemon, export its proofs, forget it; watch, retry or cancel it on a daemon",
		Subcommands: []*cli.Command{
			{
				Name:      "show",
				Usage:     "print a job's partitions: state, attempts, last error, stage timings",
				ArgsUsage: "ID",
				Flags:     withDaemon(storeFlag()),
				Action: func(c *cli.Context) error {
					id, cl, err := jobTarget(c, "show", jobUsage)
					switch {
					case err != nil:
						return err
					case cl != nil:
						return showRemoteJob(c, cl, id)
					}
					st, err := openStoreReadOnly(c.String("store"))
					if err != nil {
						return err
					}
					defer st.Close()
					return showJob(c.App.Writer, st, id)
				},
			},
			{
				Name:      "proofs",
				Usage:     "export a finished job's proofs: partition-NN.proof and partition-NN.public per partition",
				ArgsUsage: "ID",
				Flags: withDaemon(
					storeFlag(),
					&cli.StringFlag{Name: "out", Usage: "the directory to write the proofs to (created if missing); required"},
				),
				Action: func(c *cli.Context) error {
					id, cl, err := jobTarget(c, "proofs", jobUsage+" --out DIR")
					if err != nil {
						return err
					}
					var n int
					if cl != nil {
						n, err = remoteProofs(c, cl, id, c.String("out"))
					} else {
						var st *store.Store
						if st, err = openStoreReadOnly(c.String("store")); err != nil {
							return err
						}
						defer st.Close()
						n, err = exportProofs(st, id, c.String("out"))
					}
					if err != nil {
						return err
					}
					fmt.Fprintf(c.App.ErrWriter, "job %s: %d proofs written to %s\n", id, n, c.String("out"))
					return nil
				},
			},
			{
				Name:      "forget",
				Usage:     "remove an ended job (done, failed or cancelled) from a store or a daemon: its record, partitions and proofs; proof files written elsewhere stay",
				ArgsUsage: "ID",
				Flags:     withDaemon(storeFlag()),
				Action: func(c *cli.Context) error {
					id, cl, err := jobTarget(c, "forget", jobUsage)
					if err != nil {
						return err
					}
					if cl != nil {
						ctx, cancel := callCtx(c)
						defer cancel()
						res, err := cl.ForgetJob(ctx, connect.NewRequest(&cuzkv1.ForgetJobRequest{JobId: id}))
						if err != nil {
							return daemonErr(c, err)
						}
						fmt.Fprintf(c.App.ErrWriter, "job %s (%s) forgotten\n", id, stateName(res.Msg.Job.State))
						return nil
					}
					return forgetStored(c, id)
				},
			},
			{
				Name:      "watch",
				Usage:     "follow a job on the daemon that runs it, printing each partition's end; fails unless the job ends done",
				ArgsUsage: "ID",
				Flags:     withDaemon(),
				Action: func(c *cli.Context) error {
					id, cl, err := daemonJob(c, "watch", "cuzk job show --store DIR shows a stored job")
					if err != nil {
						return err
					}
					_, err = followJob(c, cl, id)
					return err
				},
			},
			{
				Name:      "retry",
				Usage:     "prove an ended job's failed partitions again, on the daemon that holds its store",
				ArgsUsage: "ID",
				Flags:     withDaemon(),
				Action: func(c *cli.Context) error {
					id, cl, err := daemonJob(c, "retry", "on a store no daemon holds, cuzk resume --store DIR --retry-failed proves the failed partitions again")
					if err != nil {
						return err
					}
					ctx, cancel := callCtx(c)
					defer cancel()
					res, err := cl.RetryJob(ctx, connect.NewRequest(&cuzkv1.RetryJobRequest{JobId: id}))
					if err != nil {
						return daemonErr(c, err)
					}
					printRemoteJob(c.App.ErrWriter, fmt.Sprintf("retried (%d failed partitions queued again)", res.Msg.Reopened), res.Msg.Job)
					return nil
				},
			},
			{
				Name:      "cancel",
				Usage:     "drop a running job's queued partitions and stop its running ones at their next stage boundary, on the daemon that runs it",
				ArgsUsage: "ID",
				Flags:     withDaemon(),
				Action: func(c *cli.Context) error {
					id, cl, err := daemonJob(c, "cancel", "a prove or resume stops on Ctrl-C, leaving what is not proved in its store")
					if err != nil {
						return err
					}
					ctx, cancel := callCtx(c)
					defer cancel()
					res, err := cl.CancelProof(ctx, connect.NewRequest(&cuzkv1.CancelProofRequest{JobId: id}))
					if err != nil {
						return daemonErr(c, err)
					}
					printRemoteJob(c.App.ErrWriter, "cancelling (its running partitions stop at their next stage)", res.Msg.Job)
					return nil
				},
			},
		},
	}
}

// forgetStored forgets an ended job of a store no process holds.
func forgetStored(c *cli.Context, id string) error {
	// Read-only first: it refuses a directory that holds no store, which a
	// writable open would make one.
	dir := c.String("store")
	ro, err := store.Open(dir, &store.Options{ReadOnly: true})
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("%w; a daemon using it forgets a job through its API (cuzk job forget ID --daemon ADDR, ForgetJob, or DELETE /v1/jobs/%s)", err, id)
	}
	if err != nil {
		return err
	}
	sum, err := ro.Summary(id)
	ro.Close()
	if err != nil {
		return err
	}
	if !sum.Finished() {
		return fmt.Errorf("job %s is unfinished (%d of %d partitions proved): resume it, or let it end, before forgetting it", id, sum.Proved, sum.NumPartitions)
	}
	st, err := store.Open(dir, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.DeleteJob(id); err != nil {
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "job %s (%s) forgotten\n", id, runner.StoredState(sum))
	return nil
}

// daemonJob is jobTarget for a command only a daemon answers; without
// --daemon its error says so, then what does instead.
func daemonJob(c *cli.Context, name, instead string) (string, cuzkv1connect.ProvingEngineClient, error) {
	id, cl, err := jobTarget(c, name, "--daemon ADDR")
	if err == nil && cl == nil {
		err = fmt.Errorf("cuzk job %s asks a daemon (--daemon ADDR); %s", name, instead)
	}
	return id, cl, err
}

// jobTarget returns the job id of "cuzk job NAME ID" and the client of
// --daemon, nil where the job is read from --store.
func jobTarget(c *cli.Context, name, usage string) (string, cuzkv1connect.ProvingEngineClient, error) {
	id, err := jobArg(c, name, usage)
	if err != nil {
		return "", nil, err
	}
	cl, err := daemonClient(c)
	if err != nil {
		return "", nil, fmt.Errorf("usage: cuzk job %s ID %s: %w", name, usage, err)
	}
	return id, cl, nil
}

// jobArg returns the job id of "cuzk job NAME ID". urfave/cli stops parsing
// flags at the first argument, so flags written after the id ("proofs ID
// --out DIR", as users type it) are parsed here into c's flags.
func jobArg(c *cli.Context, name, usage string) (string, error) {
	args := c.Args().Slice()
	if len(args) == 0 {
		return "", fmt.Errorf("usage: cuzk job %s ID %s: missing the job id", name, usage)
	}
	id, rest := args[0], args[1:]
	if len(rest) > 0 {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		for _, f := range c.Command.Flags {
			for _, n := range f.Names() {
				fs.Func(n, "", func(v string) error { return c.Set(f.Names()[0], v) })
			}
		}
		if err := fs.Parse(rest); err != nil {
			return "", fmt.Errorf("usage: cuzk job %s ID %s: %w", name, usage, err)
		}
		if fs.NArg() > 0 {
			return "", fmt.Errorf("usage: cuzk job %s ID %s: unexpected arguments %q", name, usage, fs.Args())
		}
	}
	for _, f := range []string{"store", "out"} {
		if f == "store" && c.String("daemon") != "" {
			continue // the daemon's store
		}
		if slices.ContainsFunc(c.Command.Flags, func(fl cli.Flag) bool { return fl.Names()[0] == f }) && c.String(f) == "" {
			if f == "store" {
				return "", fmt.Errorf("usage: cuzk job %s ID %s: --store or --daemon is required", name, usage)
			}
			return "", fmt.Errorf("usage: cuzk job %s ID %s: --%s is required", name, usage, f)
		}
	}
	return id, nil
}

func showJob(w io.Writer, st *store.Store, id string) error {
	sum, err := st.Summary(id)
	if err != nil {
		return err
	}
	parts, err := st.Partitions(id)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "job %s: circuit %s, %d constraints per partition, priority %s, created %s, %s\n",
		sum.ID, sum.Circuit, sum.Constraints, sum.Priority, sum.Created.Local().Format(time.DateTime), runner.StoredState(sum))
	if sum.KeyHash != "" {
		fmt.Fprintf(w, "key hash %s\n", sum.KeyHash)
	}
	pls, err := st.Placements(id)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "PARTITION\tSTATE\tATTEMPTS\tPROOF\tTIMINGS\tLAST ERROR"
	if len(pls) > 0 {
		header += "\tRAN ON"
	}
	fmt.Fprintln(tw, header)
	for _, p := range parts {
		proof := "-"
		if p.State == store.Proved {
			proof = fmt.Sprintf("%d B", len(p.Proof))
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s", p.Index, p.State, p.Attempts, proof, timings(p.Timings), p.LastError)
		if len(pls) > 0 {
			fmt.Fprintf(tw, "\t%s", placementText(pls, p.Index))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// placementText says where a partition of a job proved over a cluster ran:
// the member and its device, or the member it was last leased to.
func placementText(pls map[int]store.Placement, idx int) string {
	pl, ok := pls[idx]
	switch {
	case !ok:
		return "-"
	case pl.Proved:
		return fmt.Sprintf("%s device %d worker %d", pl.Member, pl.Device, pl.Worker)
	}
	return fmt.Sprintf("leased to %s (%s)", pl.Member, pl.Lease)
}

// timings prints stage timings in the order of the stages.
func timings(t map[string]time.Duration) string {
	if len(t) == 0 {
		return "-"
	}
	order := []string{"synthesize", "prep", "stage", "compute", "b_g2", "finalize"}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		ia, ib := slices.Index(order, a), slices.Index(order, b)
		if ia < 0 {
			ia = len(order)
		}
		if ib < 0 {
			ib = len(order)
		}
		if ia != ib {
			return ia - ib
		}
		if a < b {
			return -1
		}
		return 1
	})
	var b bytes.Buffer
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%s", k, t[k].Round(time.Millisecond))
	}
	return b.String()
}

// exportProofs writes the proofs of a done job to out (writeProofFiles).
func exportProofs(st *store.Store, id, out string) (int, error) {
	sum, err := st.Summary(id)
	if err != nil {
		return 0, err
	}
	if !sum.Done() {
		return 0, fmt.Errorf("job %s is not done: %d of %d partitions proved, %d failed, %d pending; nothing exported",
			id, sum.Proved, sum.NumPartitions, sum.Failed, sum.Pending+sum.Synthesized)
	}
	proofs, err := st.Proofs(id)
	if err != nil {
		return 0, err
	}
	if len(proofs) != sum.NumPartitions {
		return 0, fmt.Errorf("job %s: %d proofs for %d partitions; nothing exported", id, len(proofs), sum.NumPartitions)
	}
	return writeProofFiles(id, out, proofs)
}
