package cli

import (
	"fmt"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/circuits"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
)

// resumeFlags are prove's flags that say how to run, not what to prove.
func resumeFlags() []cli.Flag {
	keep := map[string]bool{"backend": true, "gpu-lib": true, "json": true, "design": true, "workers": true,
		"devices": true, "vram-limit": true, "max-attempts": true, "metrics-addr": true, "trace": true}
	var out []cli.Flag
	for _, f := range proveFlags() {
		if keep[f.Names()[0]] {
			out = append(out, f)
		}
	}
	return append(out, &cli.StringFlag{Name: "store", Required: true, Usage: "the store directory the jobs were recorded in"})
}

func resumeCommand() *cli.Command {
	return &cli.Command{
		Name:  "resume",
		Usage: "finish the unfinished jobs of a store: only partitions not yet proved are proved",
		Flags: resumeFlags(),
		Action: func(c *cli.Context) error {
			cfg := actors.Config{Design: c.String("design"), WorkersPerDevice: c.Int("workers"), MaxAttempts: c.Int("max-attempts")}.WithDefaults()
			if err := cfg.Validate(); err != nil {
				return err
			}
			indices, err := parseIndexList(c.String("devices"))
			if err != nil {
				return fmt.Errorf("--devices: %w", err)
			}
			vram, err := parseBytes(c.String("vram-limit"))
			if err != nil {
				return fmt.Errorf("--vram-limit: %w", err)
			}
			st, err := store.Open(c.String("store"), nil)
			if err != nil {
				return err
			}
			defer st.Close()
			jobs, err := st.UnfinishedJobs()
			if err != nil {
				return err
			}
			if len(jobs) == 0 {
				fmt.Fprintf(c.App.ErrWriter, "resume: no unfinished jobs in %s\n", c.String("store"))
				return nil
			}
			backend, devices, closeDevices, err := openBackend(c, indices, vram, cfg.Pool)
			if err != nil {
				return err
			}
			defer closeDevices()
			journal := runner.NewStoreJournal(st)
			for _, sum := range jobs {
				req, target, out, err := resumeRequest(st, sum.ID)
				if err != nil {
					return fmt.Errorf("resume job %s: %w", sum.ID, err)
				}
				fmt.Fprintf(c.App.ErrWriter, "resume: job %s: %d of %d partitions left\n", req.ID, len(req.Pending), req.Partitions)
				journal.Expect(req, target, out)
				if err := runJob(c, cfg, backend, devices, indices, journal, req, out); err != nil {
					return fmt.Errorf("resume job %s: %w", sum.ID, err)
				}
			}
			return nil
		},
	}
}

// resumeRequest rebuilds the request of a recorded job: its keys (refused if
// they changed since the job started) and the partitions still to prove.
func resumeRequest(st *store.Store, id string) (req runner.JobRequest, target int, out string, err error) {
	job, err := st.Job(id)
	if err != nil {
		return req, 0, "", err
	}
	target, err = strconv.Atoi(job.Params[runner.ParamTarget])
	if err != nil {
		return req, 0, "", fmt.Errorf("record has no constraint target")
	}
	circ, err := circuits.Lookup(job.Circuit)
	if err != nil {
		return req, 0, "", err
	}
	layout, err := circ.Layout(target)
	if err != nil {
		return req, 0, "", err
	}
	k, err := prover.Load(job.Params[runner.ParamKeys], job.Circuit, layout)
	if err != nil {
		return req, 0, "", err
	}
	if k.Hash != job.KeyHash {
		return req, 0, "", fmt.Errorf("the proving keys in %s changed since the job started (key hash %.16s, job recorded %.16s): refusing to mix proofs of different keys",
			k.Dir, k.Hash, job.KeyHash)
	}
	parts, err := st.Partitions(id)
	if err != nil {
		return req, 0, "", err
	}
	pending := []int{}
	for _, p := range parts {
		if !p.State.Final() {
			pending = append(pending, p.Index)
		}
	}
	return runner.JobRequest{ID: id, Keys: k, Seed: job.Seed, Partitions: job.NumPartitions,
		Pending: pending, Priority: actors.Priority(job.Priority)}, target, job.Params[runner.ParamOut], nil
}
