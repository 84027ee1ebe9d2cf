package sim

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// threadNames is each (pid, tid)'s name, from a trace's metadata events.
func threadNames(events []traceEvent) map[[2]int]string {
	threads := map[[2]int]string{}
	for _, e := range events {
		if e.Ph == "M" && e.Name == "thread_name" {
			name, _ := e.Args["name"].(string)
			threads[[2]int{e.Pid, e.Tid}] = name
		}
	}
	return threads
}

// handoffWindowUs is how close a lock's release and the request for the next
// lock must be for the two to have come from one handler: in production they
// are tens of microseconds apart, a worker's next request after a CPU stage
// tens of milliseconds.
const handoffWindowUs = 1000

// handoffFit is what the traces said of the order of two actors one handler
// wakes: pairs seen, and in how many the one woken last ran first.
type handoffFit struct {
	pairs, newestFirst int
}

// fitHandoff reads, from each trace's lease spans, every place where a
// worker released one lock and asked for another within handoffWindowUs, as
// split's workers release mem_mtx and then ask for compute_mtx in one
// handler. The release is sent first; the lock actors stamp the spans when
// they take the messages, so the request's lock ran first when its wait
// began before the released lock's span ended.
func fitHandoff(traces []Trace) (handoffFit, error) {
	var h handoffFit
	for _, t := range traces {
		events, err := readTraceEvents(t.JSON, t.Name)
		if err != nil {
			return h, err
		}
		threads := threadNames(events)
		type lease struct {
			device    int
			partition string
			lock      string
		}
		released := map[lease][]float64{} // when each lock took a release, by partition
		asked := map[lease][]float64{}    // when each lock took a request
		for _, e := range events {
			if e.Ph != "X" {
				continue
			}
			p, _ := e.Args["partition"].(string)
			th := threads[[2]int{e.Pid, e.Tid}]
			switch {
			case strings.HasPrefix(th, "lock "):
				k := lease{e.Pid, p, strings.TrimPrefix(th, "lock ")}
				released[k] = append(released[k], e.Ts+e.Dur)
			case strings.HasPrefix(th, "worker ") && strings.HasPrefix(e.Name, "wait "):
				k := lease{e.Pid, p, strings.TrimPrefix(e.Name, "wait ")}
				asked[k] = append(asked[k], e.Ts)
			}
		}
		for rk, rs := range released {
			for ak, as := range asked {
				if ak.device != rk.device || ak.partition != rk.partition || ak.lock == rk.lock {
					continue
				}
				for _, r := range rs {
					for _, a := range as {
						if math.Abs(a-r) <= handoffWindowUs {
							h.pairs++
							if a < r {
								h.newestFirst++
							}
						}
					}
				}
			}
		}
	}
	return h, nil
}

// raceWindowUs is how close a launch and another worker's device-wide sync
// must start to be a tie: two workers granted at one instant (split-devsync,
// when a worker releases mem_mtx and takes the free compute_mtx in one
// handler, the next worker granted mem_mtx syncs the device).
const raceWindowUs = 1000

// ErrNoRaceTies is the error of a race fit from traces without a tie.
var ErrNoRaceTies = errors.New("race traces: no launch and another worker's device sync within 1 ms of each other and of their grants (run split-devsync with 3 or 4 workers)")

// RaceFit is what traces of several workers said of the race between a
// kernel's launch and another worker's device sync made at one instant.
type RaceFit struct {
	Ties     int // a sync starting within raceWindowUs of another worker's launch, both just granted
	Inverted int // of them, those where the worker granted later called the device first (grants at one instant, as the simulator's handoffs, count in neither way)
	Lost     int // of them, those whose device sync did not wait for the launch's kernel
}

// LostShare is the share of the ties whose device sync did not wait.
func (f RaceFit) LostShare() float64 {
	if f.Ties == 0 {
		return 0
	}
	return float64(f.Lost) / float64(f.Ties)
}

// RaceTies counts the launch/device-sync ties of traces of several workers
// under split-devsync, the card's or the simulator's: a worker's device sync
// and the closest launch of another worker on its device, both calls within
// raceWindowUs of each other and of their grants (mem_mtx for the sync,
// compute_mtx for the launch).
func RaceTies(traces ...Trace) (RaceFit, error) {
	var f RaceFit
	for _, t := range traces {
		events, err := readTraceEvents(t.JSON, t.Name)
		if err != nil {
			return f, err
		}
		threads := threadNames(events)
		grants := map[string][]float64{} // "lock/device/partition" → when it was granted
		for _, e := range events {
			if th := threads[[2]int{e.Pid, e.Tid}]; e.Ph == "X" && strings.HasPrefix(th, "lock ") {
				part, _ := e.Args["partition"].(string)
				k := fmt.Sprintf("%s/%d/%s", strings.TrimPrefix(th, "lock "), e.Pid, part)
				grants[k] = append(grants[k], e.Ts)
			}
		}
		// The calls, placed as traceOps places every device op.
		var launches, syncs []traceOp
		for _, o := range traceOps(events) {
			switch o.name {
			case "compute":
				launches = append(launches, o)
			case "device_sync":
				syncs = append(syncs, o)
			}
		}
		// granted is the last grant of lock to c's partition before c, if
		// it was within raceWindowUs of it.
		granted := func(lock string, c traceOp) (float64, bool) {
			at, ok := 0.0, false
			for _, g := range grants[fmt.Sprintf("%s/%d/%s", lock, c.device, c.partition)] {
				if g <= c.start && (!ok || g > at) {
					at, ok = g, true
				}
			}
			return at, ok && c.start-at <= raceWindowUs
		}
		for _, s := range syncs {
			var l traceOp
			found := false
			for _, c := range launches {
				if c.device != s.device || c.tid == s.tid || math.Abs(c.start-s.start) > raceWindowUs {
					continue
				}
				if !found || math.Abs(c.start-s.start) < math.Abs(l.start-s.start) {
					l, found = c, true
				}
			}
			if !found {
				continue
			}
			gl, okl := granted("compute", l)
			gs, oks := granted("mem", s)
			if !okl || !oks {
				continue
			}
			f.Ties++
			if !s.waited {
				f.Lost++
			}
			if gl != gs && (gl < gs) != (l.start < s.start) {
				f.Inverted++
			}
		}
	}
	return f, nil
}

// CalibrateRace fits p's host.handoff.later_first from traces of several
// workers under split-devsync. In a tie the launching worker was granted
// compute_mtx and the syncing worker mem_mtx, each by its lock's handler
// (which of those ran first is the first hop, newest_first, fitted from
// one-worker traces); the lock spans say which grant came first, and the
// device calls' starts which worker reached the device first. later_first
// is the share of ties in which the worker granted later got there first.
// The simulator's ties come from more places than the card's handoffs, so
// that a later_first set to the card's share makes it lose more ties than
// the card did: `bench contention calibrate`, which knows the runs'
// partitions, fits the lost share through the simulator instead.
//
// One-worker runs have no such ties, and on the H200 the emulated device on
// the card's own host showed none of this race (runs/h200-2026-12-03b r2):
// it is measured on the card, from runs of several workers. It fails
// without ties.
func CalibrateRace(p *Profile, traces ...Trace) (*Profile, RaceFit, error) {
	f, err := RaceTies(traces...)
	if err != nil {
		return nil, f, err
	}
	if f.Ties == 0 {
		return nil, f, ErrNoRaceTies
	}
	out := *p
	h := HandoffProfile{}
	if p.Host.Handoff != nil {
		h = *p.Host.Handoff
	}
	h.LaterFirst = round(float64(f.Inverted)/float64(f.Ties), 3)
	if h.Source != "" {
		h.Source += "; "
	}
	h.Source += fmt.Sprintf("later_first: in %d of %d ties between a launch and another worker's device sync, the worker granted later called first", f.Inverted, f.Ties)
	out.Host.Handoff = &h
	return &out, f, nil
}
