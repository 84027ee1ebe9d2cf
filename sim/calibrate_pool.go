package sim

import "errors"

// PoolBesideFit is what traces of several workers said of the pool's
// mapping work beside a kernel.
type PoolBesideFit struct {
	Beside int // trims and growths back that another worker's kernel overlapped all through
	Alone  int // those no kernel overlapped
	// Slowdown is device.pool_slowdown_kernel.
	Slowdown float64
}

// CalibratePoolBeside fits p's device.pool_slowdown_kernel from traces of
// several workers under a design that trims the pool and grows it back for
// every partition (split, split-first, split-devsync). Per kind of call (a
// trim that released memory; a cudaMallocAsync that grew the pool back
// right after its worker's trim, as fitHostCalls takes them), of 1 GiB or
// more: each call's host time per GiB over the median of the calls of its
// kind that no compute stage overlapped (where the traces have none of a
// kind, p's own figure for it: trim_ms_per_gib, or pool_regrowth_ms and
// pool_regrowth_ms_per_gib, which one-worker runs give). The figure is the
// median of those ratios over the calls that a compute stage on the same
// device overlapped all through, less 1 (never below 0); calls overlapped
// in part are left out.
//
// A one-worker run of a design has no such calls (a worker does not trim
// while its own kernel runs): the traces are of several workers on the
// card, as for host.handoff.later_first, or of `cuzk bench pool-beside`,
// whose one worker trims beside its own kernel on purpose. It fails without
// a call beside a kernel.
func CalibratePoolBeside(p *Profile, traces ...Trace) (*Profile, PoolBesideFit, error) {
	var f PoolBesideFit
	type sample struct {
		trim          bool // else a growth back
		msPerGiB, gib float64
		beside        bool
	}
	var samples []sample
	for _, t := range traces {
		events, err := readTraceEvents(t.JSON, t.Name)
		if err != nil {
			return nil, f, err
		}
		kernels := map[int][][2]float64{} // device → its compute stages' spans, µs
		for _, e := range events {
			if e.Ph == "X" && e.Name == "compute" {
				kernels[e.Pid] = append(kernels[e.Pid], [2]float64{e.Ts, e.Ts + e.Dur})
			}
		}
		poolCalls(traceOps(events), func(o traceOp, trim bool) {
			took := o.end - o.start
			if o.bytes < float64(gib) || took <= 0 {
				return
			}
			var overlap float64
			for _, k := range kernels[o.device] {
				overlap += max(0, min(o.end, k[1])-max(o.start, k[0]))
			}
			share := overlap / took
			if share > 0.1 && share < 0.9 {
				return
			}
			g := o.bytes / float64(gib)
			samples = append(samples, sample{trim, took / 1e3 / g, g, share >= 0.9})
		})
	}
	alone := map[bool][]float64{} // by trim
	for _, s := range samples {
		if !s.beside {
			alone[s.trim] = append(alone[s.trim], s.msPerGiB)
		}
	}
	base := map[bool]float64{}
	for k, v := range alone {
		base[k] = median(v)
		f.Alone += len(v)
	}
	var ratios []float64
	for _, s := range samples {
		if !s.beside {
			continue
		}
		b, ok := base[s.trim]
		if !ok {
			b = profileMsPerGiB(p, s.trim, s.gib)
		}
		if b > 0 {
			ratios = append(ratios, s.msPerGiB/b)
		}
	}
	f.Beside = len(ratios)
	if f.Beside == 0 {
		return nil, f, errors.New("calibrate: no trim or pool growth beside a kernel in the traces (give traces of 2-4 workers under split, split-first or split-devsync, or of `cuzk bench pool-beside`)")
	}
	f.Slowdown = round(max(median(ratios)-1, 0), 3)
	out := *p
	out.Device.PoolSlowdownKernel = f.Slowdown
	if err := out.recordTraces(traces); err != nil {
		return nil, f, err
	}
	return &out, f, nil
}

// profileMsPerGiB is what p says a trim (or, trim false, a growth back
// after one) of gib GiB costs a GiB with no kernel beside it.
func profileMsPerGiB(p *Profile, trim bool, gib float64) float64 {
	if trim {
		return p.Device.TrimMsPerGiB
	}
	return p.Device.PoolRegrowthMs/gib + p.Device.PoolRegrowthMsPerGiB
}
