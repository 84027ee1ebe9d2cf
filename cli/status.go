package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"github.com/urfave/cli/v2"
	"google.golang.org/protobuf/encoding/protojson"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "describe a running daemon (GetStatus): its devices, key sets, queues and job totals",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print GetStatus's answer as JSON (protobuf's JSON mapping)"},
		}, askDaemonFlags()...),
		Action: func(c *cli.Context) error {
			cl, err := daemonOnly(c, "status")
			if err != nil {
				return err
			}
			ctx, cancel := callCtx(c)
			defer cancel()
			res, err := cl.GetStatus(ctx, connect.NewRequest(&cuzkv1.GetStatusRequest{}))
			if err != nil {
				return daemonErr(c, err)
			}
			if c.Bool("json") {
				b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(res.Msg)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(c.App.Writer, string(b))
				return err
			}
			return printStatus(c.App.Writer, res.Msg)
		},
	}
}

// printStatus writes GetStatus's answer as a few short tables.
func printStatus(w io.Writer, s *cuzkv1.GetStatusResponse) error {
	fmt.Fprintf(w, "cuzk %s, up %s: backend %s, design %s\n", s.Version, s.Uptime.AsDuration().Round(time.Second), s.Backend, s.Design)
	var rows [][]string
	for _, g := range s.Gpus {
		jobs := "-"
		if len(g.CurrentJobs) > 0 {
			jobs = strings.Join(g.CurrentJobs, " ")
		}
		rows = append(rows, []string{fmt.Sprint(g.Index), g.Name, sizeText(g.VramFree), sizeText(g.VramTotal), sizeText(g.KeysResident), jobs})
	}
	table(w, []string{"GPU", "NAME", "VRAM FREE", "VRAM TOTAL", "KEYS RESIDENT", "JOBS IN FLIGHT"}, rows)
	rows = nil
	for _, k := range s.KeySets {
		rows = append(rows, []string{k.Dir, k.Circuit, fmt.Sprint(k.Constraints), k.Tier, sizeText(k.Size)})
	}
	table(w, []string{"KEY SET", "CIRCUIT", "CONSTRAINTS", "TIER", "SIZE"}, rows)
	rows = nil
	for _, q := range s.Queues {
		rows = append(rows, []string{priorityName(q.Priority), fmt.Sprint(q.Jobs), fmt.Sprint(q.PartitionsPending), fmt.Sprint(q.PartitionsInFlight)})
	}
	table(w, []string{"PRIORITY", "JOBS", "PARTITIONS PENDING", "IN FLIGHT"}, rows)
	if t := s.Totals; t != nil {
		fmt.Fprintf(w, "\nthe store's jobs: %d (%d running, %d done, %d failed, %d cancelled, %d unfinished); partitions %d proved, %d failed\n",
			t.Jobs, t.JobsRunning, t.JobsDone, t.JobsFailed, t.JobsCancelled, t.JobsUnfinished, t.PartitionsProved, t.PartitionsFailed)
	}
	if cl := s.Cluster; cl != nil {
		fmt.Fprintf(w, "cluster %s, member %s, %d leases running here\n", cl.Name, cl.Member, cl.LeasesRunning)
		for _, m := range cl.Members {
			fmt.Fprintf(w, "  member %s: %d leases of this member's jobs %s\n", m.Member, m.Leases, strings.Join(m.Jobs, " "))
		}
	}
	return nil
}

// table writes a blank line and a table of rows under header; nothing where
// there are no rows.
func table(w io.Writer, header []string, rows [][]string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range append([][]string{header}, rows...) {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// sizeText writes a byte count in the largest binary unit it reaches, to
// two decimals.
func sizeText(n uint64) string {
	for _, u := range []struct {
		suffix string
		size   uint64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size {
			return fmt.Sprintf("%.2f %s", float64(n)/float64(u.size), u.suffix)
		}
	}
	return fmt.Sprintf("%d B", n)
}
