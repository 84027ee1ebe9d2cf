package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"github.com/urfave/cli/v2"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/gen/cuzk/v1/cuzkv1connect"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/service"
	"github.com/cuzk/cuzk/store"
)

// askDaemonFlags let cuzk jobs and cuzk job ask a running daemon instead of
// reading a store.
func askDaemonFlags() []cli.Flag {
	return daemonAddrFlags("ask the daemon at this address (its --listen: host:port, unix:PATH, http:// or https://) instead of reading --store")
}

// daemonAddrFlags are --daemon, with its usage, and the token and CA that go
// with it.
func daemonAddrFlags(usage string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "daemon", Usage: usage},
		&cli.StringFlag{Name: "auth-token-file", Usage: "with --daemon: the file holding the daemon's bearer token (its --auth-token-file)"},
		&cli.StringFlag{Name: "tls-ca", Usage: "with --daemon https://…: PEM certificates that sign the daemon's --tls-cert (default: the system's)"},
	}
}

// daemonCallTimeout bounds one call to a daemon.
const daemonCallTimeout = time.Minute

// daemonClient is the client of --daemon; nil when --daemon is not given.
// --store and --daemon exclude each other.
func daemonClient(c *cli.Context) (cuzkv1connect.ProvingEngineClient, error) {
	addr := c.String("daemon")
	if addr == "" {
		for _, f := range []string{"auth-token-file", "tls-ca"} {
			if c.String(f) != "" {
				return nil, fmt.Errorf("--%s goes with --daemon", f)
			}
		}
		return nil, nil
	}
	if c.String("store") != "" {
		return nil, errors.New("--store and --daemon: give one (a daemon holds its store; ask the daemon)")
	}
	var token []byte
	if path := c.String("auth-token-file"); path != "" {
		var err error
		if token, err = service.ReadToken(path); err != nil {
			return nil, fmt.Errorf("--auth-token-file: %w", err)
		}
	}
	cl, err := service.NewClient(service.ClientOptions{Addr: addr, Token: token, CAFile: c.String("tls-ca")})
	if err != nil {
		return nil, fmt.Errorf("--daemon: %w", err)
	}
	return cl, nil
}

// daemonErr names the daemon an error came from, and says plainly what a
// refused connection or token means.
func daemonErr(c *cli.Context, err error) error {
	switch connect.CodeOf(err) {
	case connect.CodeUnavailable:
		return fmt.Errorf("daemon %s: %w (is it running there?)", c.String("daemon"), err)
	case connect.CodeUnauthenticated:
		return fmt.Errorf("daemon %s: %w (give its token with --auth-token-file)", c.String("daemon"), err)
	}
	return fmt.Errorf("daemon %s: %w", c.String("daemon"), err)
}

func callCtx(c *cli.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Context, daemonCallTimeout)
}

// stateName is a job state as the store's commands print it: "done".
func stateName(s cuzkv1.JobState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "JOB_STATE_"))
}

func priorityName(p cuzkv1.Priority) string {
	if p == cuzkv1.Priority_PRIORITY_UNSPECIFIED {
		return "NORMAL"
	}
	return strings.TrimPrefix(p.String(), "PRIORITY_")
}

// remoteJobs is every job of the daemon's store, a page at a time.
func remoteJobs(c *cli.Context, cl cuzkv1connect.ProvingEngineClient) ([]*cuzkv1.JobStatus, error) {
	var out []*cuzkv1.JobStatus
	token := ""
	for {
		ctx, cancel := callCtx(c)
		res, err := cl.ListJobs(ctx, connect.NewRequest(&cuzkv1.ListJobsRequest{PageToken: token}))
		cancel()
		if err != nil {
			return nil, daemonErr(c, err)
		}
		out = append(out, res.Msg.Jobs...)
		next := res.Msg.NextPageToken
		if next == "" {
			return out, nil
		}
		if next == token || len(res.Msg.Jobs) == 0 {
			return nil, fmt.Errorf("daemon %s: ListJobs gave a next page without moving on", c.String("daemon"))
		}
		token = next
	}
}

func remoteJobRows(jobs []*cuzkv1.JobStatus) []jobJSON {
	out := make([]jobJSON, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, jobJSON{
			ID: j.JobId, Circuit: j.Circuit, Constraints: int64(j.Constraints), KeyHash: j.KeyHash,
			Priority: priorityName(j.Priority), Partitions: int(j.NumPartitions), Proved: int(j.Proved), Failed: int(j.Failed),
			Pending: int(j.Pending), Attempts: int(j.Attempts), Created: j.Created.AsTime(), Status: stateName(j.State),
		})
	}
	return out
}

// showRemoteJob prints what GetJob says of a job, as showJob prints it from
// a store, with where each partition in flight runs.
func showRemoteJob(c *cli.Context, cl cuzkv1connect.ProvingEngineClient, id string) error {
	ctx, cancel := callCtx(c)
	defer cancel()
	res, err := cl.GetJob(ctx, connect.NewRequest(&cuzkv1.GetJobRequest{JobId: id}))
	if err != nil {
		return daemonErr(c, err)
	}
	j, w := res.Msg, c.App.Writer
	fmt.Fprintf(w, "job %s: circuit %s, %d constraints per partition, priority %s, created %s, %s\n",
		j.JobId, j.Circuit, j.Constraints, priorityName(j.Priority), j.Created.AsTime().Local().Format(time.DateTime), stateName(j.State))
	if j.KeyHash != "" {
		fmt.Fprintf(w, "key hash %s\n", j.KeyHash)
	}
	if j.Error != "" {
		fmt.Fprintf(w, "error: %s\n", j.Error)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tSTATE\tATTEMPTS\tTIMINGS\tLAST ERROR\tWHERE")
	for _, p := range j.Partitions {
		st := make(map[string]time.Duration, len(p.StagesMs))
		for k, ms := range p.StagesMs {
			st[k] = time.Duration(ms * float64(time.Millisecond))
		}
		where := "-"
		switch {
		case p.Running:
			where = fmt.Sprintf("%s on device %d worker %d", p.Stage, p.Device, p.Worker)
		case p.Member != "":
			where = fmt.Sprintf("ran on device %d worker %d", p.Device, p.Worker)
		}
		if p.Member != "" {
			where += " of " + p.Member
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\n", p.Index, p.State, p.Attempts, timings(st), p.LastError, where)
	}
	return tw.Flush()
}

// remoteProofs writes a done job's proofs, as the daemon answers them, to
// out.
func remoteProofs(c *cli.Context, cl cuzkv1connect.ProvingEngineClient, id, out string) (int, error) {
	ctx, cancel := callCtx(c)
	defer cancel()
	js, err := cl.GetJob(ctx, connect.NewRequest(&cuzkv1.GetJobRequest{JobId: id}))
	if err != nil {
		return 0, daemonErr(c, err)
	}
	if j := js.Msg; j.State != cuzkv1.JobState_JOB_STATE_DONE {
		return 0, fmt.Errorf("job %s is not done (%s): %d of %d partitions proved, %d failed, %d pending; nothing exported",
			id, stateName(j.State), j.Proved, j.NumPartitions, j.Failed, j.Pending)
	}
	// Done: AwaitProof answers at once, with the proofs.
	res, err := cl.AwaitProof(ctx, connect.NewRequest(&cuzkv1.AwaitProofRequest{JobId: id}))
	if err != nil {
		return 0, daemonErr(c, err)
	}
	return writeAwaitedProofs(id, out, res.Msg)
}

// writeAwaitedProofs writes the proofs of AwaitProof's answer for a done job
// to out.
func writeAwaitedProofs(id, out string, res *cuzkv1.AwaitProofResponse) (int, error) {
	proofs := make([]store.Proof, 0, len(res.Proofs))
	for _, p := range res.Proofs {
		proofs = append(proofs, store.Proof{Index: int(p.Index), Proof: p.Proof, Public: p.PublicInputs})
	}
	if len(proofs) != int(res.Job.NumPartitions) {
		return 0, fmt.Errorf("job %s: %d proofs for %d partitions; nothing exported", id, len(proofs), res.Job.NumPartitions)
	}
	return writeProofFiles(id, out, proofs)
}

// writeProofFiles writes proofs to out, named as the prover names them. A
// file already there with other content is not replaced: it would mix
// proofs of two jobs in one directory.
func writeProofFiles(id, out string, proofs []store.Proof) (int, error) {
	slices.SortFunc(proofs, func(a, b store.Proof) int { return a.Index - b.Index })
	for _, p := range proofs {
		for name, b := range map[string][]byte{runner.ProofFile(p.Index): p.Proof, runner.PublicFile(p.Index): p.Public} {
			path := filepath.Join(out, name)
			old, err := os.ReadFile(path)
			if err == nil && string(old) != string(b) {
				return 0, fmt.Errorf("export job %s: %s exists with other content; export to another directory", id, path)
			}
		}
	}
	for _, p := range proofs {
		if err := runner.WriteProof(out, p.Index, p.Proof, p.Public); err != nil {
			return 0, fmt.Errorf("export job %s to %s: %w", id, out, err)
		}
	}
	return len(proofs), nil
}

// printRemoteJob prints a job's line after a call that changed it.
func printRemoteJob(w io.Writer, verb string, j *cuzkv1.JobStatus) {
	fmt.Fprintf(w, "job %s %s: %s, %d of %d partitions proved, %d failed, %d pending\n",
		j.JobId, verb, stateName(j.State), j.Proved, j.NumPartitions, j.Failed, j.Pending)
}
