package sim

import (
	"math"
	"strings"
)

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
		threads := map[[2]int]string{}
		for _, e := range events {
			if e.Ph == "M" && e.Name == "thread_name" {
				name, _ := e.Args["name"].(string)
				threads[[2]int{e.Pid, e.Tid}] = name
			}
		}
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
