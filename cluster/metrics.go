package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
)

// nodeMetrics are a member's cluster figures on its /metrics: as owner (the
// leases it issued and how they ended, the results it recorded or
// dropped) and as member (the leases it ran for owners).
type nodeMetrics struct {
	leases  *prometheus.CounterVec // owner: issued, expired, refused, failed, revoked
	results *prometheus.CounterVec // owner: recorded, dropped
	ran     *prometheus.CounterVec // member: proved, failed, revoked
	members prometheus.Gauge       // owner: members up
	live    prometheus.Gauge       // owner: leases live
}

func newNodeMetrics(reg prometheus.Registerer) (*nodeMetrics, error) {
	m := &nodeMetrics{
		leases: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cuzk", Subsystem: "cluster", Name: "leases_total",
			Help: "Partitions of this member's jobs leased to members (event=issued), and how leases ended early (expired, refused, failed, revoked)."}, []string{"event"}),
		results: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cuzk", Subsystem: "cluster", Name: "results_total",
			Help: "Proofs of this member's jobs that came back from members: recorded in the store, or dropped (proved already, unknown lease)."}, []string{"outcome"}),
		ran: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cuzk", Subsystem: "cluster", Name: "leases_run_total",
			Help: "Leased partitions this member ran for owners (itself included), by outcome."}, []string{"outcome"}),
		members: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "cuzk", Subsystem: "cluster", Name: "members",
			Help: "Members this member leases to (those up that answered)."}),
		live: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "cuzk", Subsystem: "cluster", Name: "leases_live",
			Help: "Leases of this member's jobs live now."}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.leases, m.results, m.ran, m.members, m.live} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
