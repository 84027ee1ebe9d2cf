// Package cluster proves one job's partitions over the GPUs of several
// hosts. Every host runs a cuzk daemon with its own runner.Service over its
// own devices and lock design; the daemons join one protoactor-go cluster
// (remote over gRPC, membership from a cluster provider), and the member that
// accepts a job owns it: it leases single partitions to members (itself
// included) as actor messages, keeps each lease alive by the member's
// heartbeats, leases a partition again when its lease expires, and records
// each proof that comes back in its own store before the partition counts as
// proved. See docs/cluster.md.
package cluster

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Providers of membership.
const (
	// ProviderStatic is protoactor's automanaged provider over a static
	// list of members: each member serves its health on Health and polls
	// every Peers address.
	ProviderStatic = "static"
	// ProviderEtcd is protoactor's etcd provider: members register under
	// the cluster's name in etcd.
	ProviderEtcd = "etcd"
)

// Options configures a Node. Name, Listen and Keys are required; the rest
// have the defaults withDefaults gives.
type Options struct {
	// Name is the cluster's name: members of other clusters are ignored.
	Name string
	// Listen is host:port of this member's actor system (protoactor
	// remote, gRPC); other members reach it there. Port 0 picks one.
	Listen string
	// Provider is how members find each other: ProviderStatic (default) or
	// ProviderEtcd.
	Provider string
	// Health is host:port where this member answers the static provider's
	// health checks; Peers are every member's Health address (this one's
	// may be among them).
	Health string
	Peers  []string
	// Etcd is the etcd endpoints (ProviderEtcd).
	Etcd []string
	// Keys is the root of the key sets: a leased partition's keys are
	// prover.KeyDir(Keys, circuit, target), and must have the job's hash.
	Keys string
	// Slots is how many leased partitions this member runs at once
	// (default: 2; the daemon gives devices × workers, plus one per device
	// so that a device never waits for the network between partitions).
	Slots int
	// LeaseTTL is how long a lease lives without a heartbeat from its
	// member (default 3 s); Heartbeat is how often members send them and
	// the owner checks its leases (default LeaseTTL/4).
	LeaseTTL  time.Duration
	Heartbeat time.Duration
	// MaxAttempts is how many leases of one partition may fail (the
	// member could not prove it) before it fails for good (default 3).
	// A lease that expires does not count: its member died, not the
	// partition.
	MaxAttempts int
	// ResultRetention is how long a member keeps sending a result its
	// owner has not acknowledged (default 2 min): an owner restarted in
	// that time records it.
	ResultRetention time.Duration
	// Registry, if not nil, gets the cluster's metrics (the daemon's
	// /metrics registry).
	Registry prometheus.Registerer
	// Trace, if not nil, gets the stages of every partition of this
	// member's jobs as they ran on their members: one process per member
	// and device, one thread per worker (trace.Writer.Span).
	Trace Tracer
}

// Tracer takes the spans of a trace that spans members; *trace.Writer is
// one.
type Tracer interface {
	Span(process, thread, name string, ts, dur time.Duration, args ...any)
}

func (o Options) withDefaults() Options {
	if o.Provider == "" {
		o.Provider = ProviderStatic
	}
	if o.Slots <= 0 {
		o.Slots = 2
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 3 * time.Second
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = o.LeaseTTL / 4
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.ResultRetention <= 0 {
		o.ResultRetention = 2 * time.Minute
	}
	return o
}

// check refuses options that cannot make a member.
func (o Options) check() error {
	if o.Name == "" {
		return errors.New("cluster: no name")
	}
	if o.Keys == "" {
		return errors.New("cluster: no key directory")
	}
	if _, _, err := splitHostPort(o.Listen); err != nil {
		return fmt.Errorf("cluster: listen address: %w", err)
	}
	if o.Heartbeat >= o.LeaseTTL {
		return fmt.Errorf("cluster: heartbeat %s not shorter than the lease TTL %s: every lease would expire", o.Heartbeat, o.LeaseTTL)
	}
	switch o.Provider {
	case ProviderStatic:
		if _, _, err := splitHostPort(o.Health); err != nil {
			return fmt.Errorf("cluster: health address (static provider): %w", err)
		}
		if len(o.Peers) == 0 {
			return errors.New("cluster: static provider without peers")
		}
		for _, p := range o.Peers {
			if _, port, err := splitHostPort(p); err != nil || port == 0 {
				return fmt.Errorf("cluster: peer %q: want host:port with a port", p)
			}
		}
	case ProviderEtcd:
		if len(o.Etcd) == 0 {
			return errors.New("cluster: etcd provider without endpoints")
		}
	default:
		return fmt.Errorf("cluster: provider %q: want %s or %s", o.Provider, ProviderStatic, ProviderEtcd)
	}
	return nil
}

// splitHostPort parses host:port with a port from 0 to 65535.
func splitHostPort(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q: %w", addr, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q: port %q: want 0 to 65535", addr, ps)
	}
	if host == "" {
		return "", 0, fmt.Errorf("%q: no host", addr)
	}
	return host, port, nil
}
