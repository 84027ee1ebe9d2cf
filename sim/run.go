package sim

import (
	"fmt"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
)

// Engine is what the simulator needs of a started engine.
type Engine interface {
	Submit(job actors.JobSpec) error
}

// StartFunc starts an engine on a runtime; actors.Start in production use.
type StartFunc func(rt actors.Runtime, devices []gpu.Info, cfg actors.Config) (Engine, error)

// Result is a finished simulation: its report and, when Options.Record was
// set, what a timeline is drawn from.
type Result struct {
	Report *Report
	rec    *collector
	res    *resolved
}

// Run simulates scenario s with the production actors.
func Run(s *Scenario, o Options) (*Result, error) {
	return RunWith(startActors, s, o)
}

// RunWith simulates scenario s with the engine start gives.
func RunWith(start StartFunc, s *Scenario, o Options) (*Result, error) {
	r, err := s.resolve(o)
	if err != nil {
		return nil, err
	}
	return simulate(start, r)
}

func simulate(start StartFunc, r *resolved) (*Result, error) {
	vram := make([]int64, r.devices)
	for i := range vram {
		vram[i] = r.vram
	}
	k := NewKernelWith(r.profile, vram, r.mem, r.cfg.Pool, r.seed)
	journal := newMemJournal()
	col := newCollector(k, journal, r.record)
	col.next = r.observer
	cfg := r.cfg
	cfg.Observer = col
	cfg.Journal = journal

	var acc deviceTotals
	var eng Engine
	var queued []actors.JobSpec // jobs that arrive while the process is down
	crashes := 0
	var runErr error
	submit := func(job actors.JobSpec) {
		if err := eng.Submit(job); err != nil && runErr == nil {
			runErr = fmt.Errorf("scenario %s: submit job %s at %v: %w", r.name, job.ID, k.now, err)
		}
	}
	boot := func() error {
		e, err := start(k, k.Infos(), cfg)
		if err != nil {
			return fmt.Errorf("scenario %s: start engine: %w", r.name, err)
		}
		eng = e
		return nil
	}
	if err := boot(); err != nil {
		return nil, err
	}
	pendingArrivals := len(r.jobs)
	for _, tj := range r.jobs {
		k.atAnyEpoch(tj.at, func() {
			pendingArrivals--
			col.submittedJob(tj.job.ID)
			if eng == nil {
				queued = append(queued, tj.job)
				return
			}
			submit(tj.job)
		})
	}
	down := 0
	for _, f := range r.faults {
		at := ms(f.AtMs)
		switch f.Kind {
		case "oom":
			k.atAnyEpoch(at, func() {
				if f.Device < len(k.devices) {
					k.devices[f.Device].InjectOOM()
				}
			})
		case "worker_crash":
			k.atAnyEpoch(at, func() { k.faults.arm(f.Device, f.Worker) })
		case "process_crash":
			down++
			k.atAnyEpoch(at, func() {
				if eng == nil {
					down-- // the process is down already: nothing to crash, no restart of its own
					return
				}
				crashes++
				acc.add(k.devices, k.now)
				col.crashed()
				k.Crash()
				eng = nil
				k.atAnyEpoch(k.now+ms(f.RestartAfterMs), func() {
					down--
					if err := boot(); err != nil {
						runErr = err
						return
					}
					// Resume: only what the journal has not seen proved or failed.
					resumed := map[string]bool{}
					for _, job := range journal.unfinished() {
						resumed[job.ID] = true
						submit(job)
					}
					for id := range col.outstanding {
						if !resumed[id] && !queuedHas(queued, id) {
							delete(col.outstanding, id) // everything of it was proved before the crash
						}
					}
					for _, job := range queued {
						submit(job)
					}
					queued = nil
				})
			})
		}
	}
	done := func() bool {
		return runErr != nil || (pendingArrivals == 0 && down == 0 && len(col.outstanding) == 0)
	}
	complete := k.RunUntil(r.maxTime, done)
	if runErr != nil {
		return nil, runErr
	}
	acc.add(k.devices, k.now)
	col.sortSpans()
	rep := buildReport(r, k, col, journal, acc, complete && len(col.outstanding) == 0, crashes)
	return &Result{Report: rep, rec: col, res: r}, nil
}

func queuedHas(q []actors.JobSpec, id string) bool {
	for _, j := range q {
		if j.ID == id {
			return true
		}
	}
	return false
}

// deviceTotals sums device counters over process incarnations.
type deviceTotals struct {
	peak         int64
	deviceWaits  int
	deviceWaited time.Duration
	poolWaits    int
	ooms         int
}

func (a *deviceTotals) add(devs []*Device, _ time.Duration) {
	for _, d := range devs {
		s := d.Stats()
		a.peak = max(a.peak, s.Peak)
		a.deviceWaits += s.DeviceWaits
		a.deviceWaited += s.DeviceWaited
		a.poolWaits += s.WaitedAllocs
		a.ooms += s.OOMs
	}
}
