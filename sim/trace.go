package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// chromeEvent is one complete ("X") or instant ("i") event of the Chrome
// trace format (chrome://tracing, Perfetto).
type chromeEvent struct {
	Name string            `json:"name"`
	Cat  string            `json:"cat"`
	Ph   string            `json:"ph"`
	Ts   float64           `json:"ts"` // µs
	Dur  float64           `json:"dur,omitempty"`
	Pid  int               `json:"pid"`
	Tid  int               `json:"tid"`
	S    string            `json:"s,omitempty"`
	Args map[string]string `json:"args,omitempty"`
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// WriteTrace writes the recorded run in the Chrome trace format: one process
// per device; threads are its workers (stages), its locks and its engines.
func (r *Result) WriteTrace(w io.Writer) error {
	c := r.rec
	if c == nil || !c.record {
		return fmt.Errorf("trace: the run was not recorded (set Options.Record)")
	}
	var evs []chromeEvent
	meta := func(pid, tid int, name string) {
		evs = append(evs, chromeEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: tid, Args: map[string]string{"name": name}})
	}
	workers := r.res.cfg.WorkersPerDevice
	const lockTid, engineTid = 100, 200
	locks := map[string]int{}
	for d := 0; d < r.res.devices; d++ {
		evs = append(evs, chromeEvent{Name: "process_name", Ph: "M", Pid: d, Args: map[string]string{"name": fmt.Sprintf("gpu%d", d)}})
		for wk := 0; wk < workers; wk++ {
			meta(d, wk, fmt.Sprintf("worker %d", wk))
		}
		meta(d, engineTid, "compute engine")
		meta(d, engineTid+1, "copy engine")
	}
	for _, s := range c.stages {
		evs = append(evs, chromeEvent{Name: s.stage.String(), Cat: "stage", Ph: "X", Ts: us(s.start), Dur: us(s.end - s.start),
			Pid: s.device, Tid: s.worker, Args: map[string]string{"partition": s.partition.String(), "failed": fmt.Sprint(s.err)}})
	}
	for _, l := range c.leases {
		tid, ok := locks[l.lock]
		if !ok {
			tid = lockTid + len(locks)
			locks[l.lock] = tid
			for d := 0; d < r.res.devices; d++ {
				meta(d, tid, "lock "+l.lock)
			}
		}
		evs = append(evs, chromeEvent{Name: fmt.Sprintf("%s: w%d", l.lock, l.worker), Cat: "lease", Ph: "X", Ts: us(l.start), Dur: us(l.end - l.start),
			Pid: l.device, Tid: tid, Args: map[string]string{"partition": l.partition.String()}})
	}
	for _, a := range c.engines {
		tid := engineTid
		if a.Engine == "copy" {
			tid++
		}
		evs = append(evs, chromeEvent{Name: a.Label, Cat: a.Engine, Ph: "X", Ts: us(a.Start), Dur: us(a.End - a.Start), Pid: a.Device, Tid: tid,
			Args: map[string]string{"stream": fmt.Sprint(a.Stream)}})
	}
	for _, m := range c.marks {
		pid, tid, scope := m.device, m.worker, "t"
		if m.device < 0 {
			pid, tid, scope = 0, 0, "g"
		}
		evs = append(evs, chromeEvent{Name: m.text, Cat: "mark", Ph: "i", Ts: us(m.at), Pid: pid, Tid: tid, S: scope})
	}
	enc := json.NewEncoder(w)
	return enc.Encode(map[string]any{"traceEvents": evs, "displayTimeUnit": "ms",
		"otherData": map[string]string{"scenario": r.Report.Scenario, "design": r.Report.Design, "seed": fmt.Sprint(r.Report.Seed), "clock": "virtual"}})
}
