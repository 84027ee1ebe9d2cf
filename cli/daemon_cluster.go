package cli

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"

	"github.com/cuzk/cuzk/cluster"
	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/trace"
)

// clusterFlags are the daemon's flags for joining a cluster (docs/cluster.md).
func clusterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "cluster", Usage: "join the cluster of this name: jobs submitted here are proved over every member's devices (docs/cluster.md)"},
		&cli.StringFlag{Name: "cluster-listen", Value: "127.0.0.1:9830", Usage: "host:port of this member's actor system (protoactor remote, gRPC), where other members reach it"},
		&cli.StringFlag{Name: "cluster-provider", Value: cluster.ProviderStatic, Usage: "how members find each other: static (the --peers list, protoactor's automanaged provider) or etcd (--etcd)"},
		&cli.StringFlag{Name: "cluster-health", Value: "127.0.0.1:9831", Usage: "static provider: host:port where this member answers the other members' health checks"},
		&cli.StringFlag{Name: "peers", Usage: "static provider: every member's --cluster-health address, comma-separated (this member's may be among them)"},
		&cli.StringFlag{Name: "etcd", Usage: "etcd provider: the etcd endpoints, comma-separated (http://127.0.0.1:2379)"},
		&cli.DurationFlag{Name: "lease-ttl", Usage: "how long a partition leased to a member lives without its heartbeat (default 3s)"},
	}
}

// clusterNode makes the node the daemon's flags ask for; nil without
// --cluster.
func clusterNode(c *cli.Context, devices int, reg prometheus.Registerer, tw *trace.Writer) (*cluster.Node, error) {
	if c.String("cluster") == "" {
		return nil, nil
	}
	workers := c.Int("workers")
	n, err := cluster.New(cluster.Options{
		Name: c.String("cluster"), Listen: c.String("cluster-listen"), Provider: c.String("cluster-provider"),
		Health: c.String("cluster-health"), Peers: splitList(c.String("peers")), Etcd: splitList(c.String("etcd")),
		Keys: c.String("keys"), LeaseTTL: c.Duration("lease-ttl"), Registry: reg,
		// One partition more per device than it has workers, so that a
		// device does not wait for the network between partitions.
		Slots: devices * (workers + 1),
	})
	if err != nil {
		return nil, fmt.Errorf("--cluster: %w", err)
	}
	if tw != nil {
		n.SetTrace(tw)
	}
	return n, nil
}

// daemonTrace opens --trace: the Chrome trace of the daemon's actors and,
// in a cluster, of its jobs' partitions on every member. It is complete
// once the daemon stops cleanly (SIGINT, SIGTERM).
func daemonTrace(c *cli.Context) (*trace.Writer, func(), error) {
	path := c.String("trace")
	if path == "" {
		return nil, func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--trace: %w", err)
	}
	tw := trace.NewDeferred(f, trace.Interval)
	return tw, func() {
		if err := tw.Close(); err != nil {
			slog.Error("trace", "file", path, "err", err)
		}
		f.Close()
	}, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// clusterStatus is GetStatus's view of the cluster; nil without one.
func clusterStatus(n *cluster.Node) func() (*cuzkv1.ClusterStatus, error) {
	if n == nil {
		return nil
	}
	return n.ClusterStatus
}
