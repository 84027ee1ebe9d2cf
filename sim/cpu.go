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
//
// With host.cpu_hold k, the pool holds as production's par.Hold does: while
// partitions are on the CPU and none is prepared and waiting for its
// compute, only the syntheses of the k earliest lanes with pooled work run;
// the others wait (production holds them at their next yield, every 4,096
// ops, about a third of a millisecond: not modelled). Prep is never held.
type CPU struct {
	k     *Kernel
	host  HostProfile
	ps    *psServer
	stage map[actors.Stage]StageProfile
	// ranks is each partition's place in the pool's order: the order its
	// first CPU stage (its synthesis) began.
	ranks map[actors.PartitionID]uint64
	next  uint64
	// waiting are the partitions prepared whose compute has not started
	// (by Kernel.Partition, the partition's String), for the hold.
	waiting map[string]bool
}

func newCPU(k *Kernel, h HostProfile) *CPU {
	c := &CPU{k: k, host: h, ranks: map[actors.PartitionID]uint64{}, waiting: map[string]bool{}}
	cores := float64(h.Cores)
	c.ps = newPSServer(k, func(jobs []*psJob) {
		var inPool []*psJob
		for _, j := range jobs {
			if j.pooled {
				inPool = append(inPool, j)
			}
		}
		slices.SortStableFunc(inPool, func(a, b *psJob) int { return cmp.Compare(a.rank, b.rank) })
		admitted := c.admitted(inPool)
		held := func(j *psJob) bool { return j.label == actors.StageSynthesize.String() && j.rank > admitted }
		var want, pooled float64
		for _, j := range jobs {
			switch {
			case !j.pooled:
				want += j.cores
			case !held(j):
				pooled += j.cores
			}
		}
		want += min(pooled, cores)
		f := 1.0
		if want > cores {
			f = cores / want
		}
		for _, j := range jobs {
			j.speed = f
		}
		// The pool's cores, to its stages in rank order; a held synthesis
		// gets none.
		left := min(pooled, cores) * f
		for _, j := range inPool {
			if held(j) {
				j.speed = 0
				continue
			}
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
	switch st {
	case actors.StagePrep:
		j.done = func(time.Duration) {
			c.setWaiting(p.String(), true)
			done()
		}
	case actors.StageBG2, actors.StageFinalize:
		delete(c.waiting, p.String()) // its device work is over
	}
	if st == actors.StageFinalize {
		delete(c.ranks, p) // its last CPU stage
	}
	c.ps.add(j)
}

// admitted is the highest rank the hold lets synthesize, the cpu_hold-th
// lowest among the pool's stages (sorted by rank), or the highest there is
// when no hold stands.
func (c *CPU) admitted(inPool []*psJob) uint64 {
	if c.host.CPUHold <= 0 || len(c.waiting) > 0 || len(c.ranks) == 0 || len(inPool) == 0 {
		return ^uint64(0)
	}
	n, last := 0, uint64(0)
	for _, j := range inPool {
		if n == 0 || j.rank != last {
			n, last = n+1, j.rank
			if n == c.host.CPUHold {
				return last
			}
		}
	}
	return ^uint64(0)
}

// setWaiting records whether partition p (Kernel.Partition) is prepared
// and waits for its compute, and shares the cores again if the hold
// changed.
func (c *CPU) setWaiting(p string, on bool) {
	if c.waiting[p] == on {
		return
	}
	if on {
		c.waiting[p] = true
	} else {
		delete(c.waiting, p)
	}
	if c.host.CPUHold > 0 {
		c.ps.advance()
		c.ps.reschedule()
	}
}

// Computing is told that p's compute started on a device.
func (c *CPU) Computing(p string) { c.setWaiting(p, false) }

// Busy is how long at least one CPU stage was running.
func (c *CPU) Busy() time.Duration { return c.ps.busyUntilNow() }
