package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
)

// resumeFlags are prove's flags that say how to run, not what to prove.
func resumeFlags() []cli.Flag {
	keep := map[string]bool{"backend": true, "gpu-lib": true, "b-g2": true, "json": true, "design": true, "workers": true,
		"devices": true, "vram-limit": true, "key-tier": true, "msm-tables": true, "pinned-limit": true, "keys-host-limit": true, "max-attempts": true, "retry-backoff": true, "metrics-addr": true, "trace": true,
		"host-mem-limit": true, "synth-workers": true}
	var out []cli.Flag
	for _, f := range proveFlags() {
		if keep[f.Names()[0]] {
			out = append(out, f)
		}
	}
	return append(out, &cli.StringFlag{Name: "store", Required: true, Usage: "the store directory the jobs were recorded in"},
		&cli.BoolFlag{Name: "retry-failed", Usage: "first reopen the partitions that failed for good (after their attempts), so that they are tried again"})
}

func resumeCommand() *cli.Command {
	return &cli.Command{
		Name:  "resume",
		Usage: "finish the unfinished jobs of a store: only partitions not yet proved are proved",
		Flags: resumeFlags(),
		Action: func(c *cli.Context) error {
			cfg, indices, vram, err := runSettings(c)
			if err != nil {
				return err
			}
			// Resume reads a store that prove made; it never starts an empty one.
			if _, err := os.Stat(c.String("store")); err != nil {
				return fmt.Errorf("resume: no store at %s: %w", c.String("store"), err)
			}
			st, err := store.Open(c.String("store"), nil)
			if err != nil {
				return err
			}
			defer st.Close()
			if c.Bool("retry-failed") {
				if err := reopenFailed(st, c.App.ErrWriter); err != nil {
					return err
				}
			}
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
			for _, sum := range jobs {
				sub, err := runner.ResumeRequest(st, sum.ID, keyLoader(keyLoadOptions(c, backend)))
				if err != nil {
					return fmt.Errorf("resume: %w", err)
				}
				fmt.Fprintf(c.App.ErrWriter, "resume: job %s: %d of %d partitions left\n", sub.ID, len(sub.Pending), sub.Partitions)
				if err := runJobs(c, cfg, backend, devices, indices, st, []runner.Submission{sub}); err != nil {
					return fmt.Errorf("resume job %s: %w", sum.ID, err)
				}
			}
			return nil
		},
	}
}

// reopenFailed makes every failed partition of every job in st pending
// again, saying which and why they had failed.
func reopenFailed(st *store.Store, log io.Writer) error {
	jobs, err := st.Jobs()
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.Failed == 0 {
			continue
		}
		reopened, err := runner.ReopenFailed(st, j.ID)
		for _, p := range reopened {
			fmt.Fprintf(log, "resume: job %s: partition %d reopened (it had failed: %s)\n", j.ID, p.Index, p.LastError)
		}
		if err != nil {
			return fmt.Errorf("resume: %w", err)
		}
	}
	return nil
}
