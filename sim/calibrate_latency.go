package sim

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
)

// CalibrateCompletionLatency fits p's host.completion_latency from traces
// of the production runtime on a device whose device calls carry late_us
// (how long each completion waited before its worker handled it): per call,
// the median and the spread of the logarithm (the interquartile range over
// 1.349, a standard deviation that a few stragglers do not inflate); a
// device sync that waited for another worker's work takes the stream syncs'
// figures (the thread slept in the call, as in a stream sync after a
// launch), unless the traces have enough waited device syncs of their own.
// It also fits device.mem_info_ms, the median host time of cudaMemGetInfo,
// a call of microseconds the base profiles gave 0.1 ms. Failed calls are
// left out; a call needs latencyMinCalls completions to be fitted.
func CalibrateCompletionLatency(p *Profile, traces ...Trace) (*Profile, []DeviceFit, error) {
	ops, err := readTracesOps(traces)
	if err != nil {
		return nil, nil, err
	}
	late := map[string][]float64{}
	var waitedSyncs, memInfo []float64
	for _, t := range ops {
		for _, o := range t {
			if o.err {
				continue
			}
			if o.name == "mem_info" {
				memInfo = append(memInfo, (o.end-o.start)/1e3)
			}
			if o.late <= 0 {
				continue
			}
			if o.name == "device_sync" && o.waited {
				waitedSyncs = append(waitedSyncs, o.late)
				continue
			}
			late[o.name] = append(late[o.name], o.late)
		}
	}
	l := &CompletionLatencyProfile{Calls: map[string]LatencyDist{}}
	var fits []DeviceFit
	for _, name := range slices.Sorted(maps.Keys(late)) {
		if len(late[name]) < latencyMinCalls {
			continue
		}
		d := lognormalOf(late[name])
		l.Calls[name] = d
		fits = append(fits, DeviceFit{"host.completion_latency.calls." + name + ".p50_us", len(late[name]), d.P50Us})
	}
	if len(l.Calls) == 0 {
		return nil, nil, errors.New("calibrate: no device call in the traces has late_us (traces of the production runtime on a device, since 2026-12-04, carry it)")
	}
	l.Source = fmt.Sprintf("fitted by cuzk sim calibrate --latency-trace from the late_us of %d traces' device calls", len(traces))
	switch {
	case len(waitedSyncs) >= latencyMinCalls:
		l.Waited = lognormalOf(waitedSyncs)
		fits = append(fits, DeviceFit{"host.completion_latency.waited_device_sync.p50_us", len(waitedSyncs), l.Waited.P50Us})
	case l.Calls["stream_sync"].P50Us > 0:
		l.Waited = l.Calls["stream_sync"]
		l.Source += "; a waited device sync as the stream syncs (no waited device sync enough to fit)"
	}
	out := *p
	out.Host.CompletionLatency = l
	if len(memInfo) >= latencyMinCalls {
		out.Device.MemInfoMs = round(median(memInfo), 4)
		fits = append(fits, DeviceFit{"device.mem_info_ms", len(memInfo), out.Device.MemInfoMs})
	}
	if err := out.recordTraces(traces); err != nil {
		return nil, nil, err
	}
	return &out, fits, nil
}

// latencyMinCalls is how many completions of a call a latency is fitted
// from, at least.
const latencyMinCalls = 5

// lognormalOf is vs' median (µs, to 0.1) and the interquartile range of
// their logarithms over 1.349 (to 0.01). vs must be positive; it sorts them.
func lognormalOf(vs []float64) LatencyDist {
	logs := make([]float64, len(vs))
	for i, v := range vs {
		logs[i] = math.Log(v)
	}
	slices.Sort(logs)
	q := func(f float64) float64 { return logs[int(f*float64(len(logs)-1)+0.5)] }
	return LatencyDist{P50Us: round(median(vs), 1), Sigma: round((q(0.75)-q(0.25))/1.349, 2)}
}
