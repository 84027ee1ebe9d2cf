package sim

import (
	"cmp"
	"slices"
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
//
// With the host's cpu_order "lanes", synthesize and prep run on the cores'
// pool (par.Lane), whose workers take the chunks of the partition that began
// its synthesis first before any other's. The pool is one set of threads of
// Go's, as many as the cores: it asks for the cores its stages want, at most
// all of them, and shares the host with the other CPU stages as above. What
// it gets goes to its stages in that order, each up to its cores, so a later
// partition's stage runs on the cores the earlier ones leave, and one stage
// waits for none while the pool has cores left over.
type CPU struct {
	k     *Kernel
	host  HostProfile
	ps    *psServer
	stage map[actors.Stage]StageProfile
	// ranks is each partition's place in the pool's order: the order its
	// first CPU stage (its synthesis) began.
	ranks map[actors.PartitionID]uint64
	next  uint64
}

func newCPU(k *Kernel, h HostProfile) *CPU {
	c := &CPU{k: k, host: h, ranks: map[actors.PartitionID]uint64{}}
	cores := float64(h.Cores)
	c.ps = newPSServer(k, func(jobs []*psJob) {
		var want, pooled float64
		for _, j := range jobs {
			if j.pooled {
				pooled += j.cores
			} else {
				want += j.cores
			}
		}
		want += min(pooled, cores)
		f := 1.0
		if want > cores {
			f = cores / want
		}
		var inPool []*psJob
		for _, j := range jobs {
			j.speed = f
			if j.pooled {
				inPool = append(inPool, j)
			}
		}
		// The pool's cores, to its stages in rank order.
		slices.SortStableFunc(inPool, func(a, b *psJob) int { return cmp.Compare(a.rank, b.rank) })
		left := min(pooled, cores) * f
		for _, j := range inPool {
			got := min(j.cores, left)
			left -= got
			j.speed = got / j.cores
		}
		var demand float64
		for _, j := range jobs {
			demand += j.bwShare * j.speed
		}
		if demand < 1 {
			demand = 1
		}
		for _, j := range jobs {
			j.rate = j.speed / ((1 - j.bwShare) + j.bwShare*demand)
		}
	})
	return c
}

// pooled stages: those whose parallel work runs on the cores' pool.
func poolsWork(st actors.Stage) bool { return st == actors.StageSynthesize || st == actors.StagePrep }

// run charges partition p's stage of solo cost d to the CPU and calls done
// when it has progressed through all of it.
func (c *CPU) run(p actors.PartitionID, st actors.Stage, d time.Duration, done func()) {
	sp := c.k.profile.Stages[st.String()]
	cores := sp.Cores
	if cores <= 0 || cores > float64(c.host.Cores) {
		cores = float64(c.host.Cores)
	}
	j := &psJob{
		remaining: float64(d),
		cores:     cores,
		bwShare:   sp.MemBWShare,
		label:     st.String(),
		done:      func(time.Duration) { done() },
	}
	if c.host.CPUOrder == CPULanes && poolsWork(st) {
		r, ok := c.ranks[p]
		if !ok {
			c.next++
			r = c.next
			c.ranks[p] = r
		}
		j.pooled, j.rank = true, r
	}
	if st == actors.StageFinalize {
		delete(c.ranks, p) // its last CPU stage
	}
	c.ps.add(j)
}

// Busy is how long at least one CPU stage was running.
func (c *CPU) Busy() time.Duration { return c.ps.busyUntilNow() }
