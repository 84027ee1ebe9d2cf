package sim

import (
	"time"

	"github.com/cuzk/cuzk/actors"
)

// CPU models the host's cores and memory bandwidth, shared by the CPU stages of
// every worker (synthesize, prep, b_g2, finalize).
//
// Each stage, running alone, uses c cores and a fraction b of the host's memory
// bandwidth (the profile's cores and mem_bw_share), and takes its profiled
// cost. When stages overlap:
//
//   - Cores are processor-shared: if the stages ask for more cores than the
//     host has, each gets its request scaled by cores/Σc, and runs at speed
//     f = min(1, cores/Σc).
//   - Memory bandwidth is a second shared resource: at those speeds the stages
//     demand D = Σ b·f of the host's bandwidth. When D > 1 the memory-bound part
//     of every stage slows by D, so a stage's speed is f / ((1-b) + b·max(1, D)).
//
// A stage with b = 0 is pure compute and is slowed only by core contention; two
// bandwidth-heavy stages (prep and b_g2) slow each other even when cores are
// free, which is what the Phase 9 measurements showed.
type CPU struct {
	k     *Kernel
	host  HostProfile
	ps    *psServer
	stage map[actors.Stage]StageProfile
}

func newCPU(k *Kernel, h HostProfile) *CPU {
	c := &CPU{k: k, host: h}
	cores := float64(h.Cores)
	c.ps = newPSServer(k, func(jobs []*psJob) {
		var want float64
		for _, j := range jobs {
			want += j.cores
		}
		f := 1.0
		if want > cores {
			f = cores / want
		}
		var demand float64
		for _, j := range jobs {
			demand += j.bwShare * f
		}
		if demand < 1 {
			demand = 1
		}
		for _, j := range jobs {
			j.rate = f / ((1 - j.bwShare) + j.bwShare*demand)
		}
	})
	return c
}

// run charges a stage of solo cost d to the CPU and calls done when it has
// progressed through all of it.
func (c *CPU) run(st actors.Stage, d time.Duration, done func()) {
	sp := c.k.profile.Stages[st.String()]
	cores := sp.Cores
	if cores <= 0 || cores > float64(c.host.Cores) {
		cores = float64(c.host.Cores)
	}
	c.ps.add(&psJob{
		remaining: float64(d),
		cores:     cores,
		bwShare:   sp.MemBWShare,
		label:     st.String(),
		done:      func(time.Duration) { done() },
	})
}

// Busy is how long at least one CPU stage was running.
func (c *CPU) Busy() time.Duration { return c.ps.busyUntilNow() }
