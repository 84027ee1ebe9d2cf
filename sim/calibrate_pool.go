package sim

import (
	"cmp"
	"errors"
	"slices"
)

// PoolBesideFit is what traces of several workers said of the pool's
// mapping work beside a kernel.
type PoolBesideFit struct {
	Beside int // trims and growths back that another worker's kernel overlapped all through
	Alone  int // those no kernel overlapped
	// AloneRatio is the median of the Alone calls' host time over what
	// the profile charges them (0: none): how much slower the pool's work
	// was with other workers about than in the one-worker runs, with no
	// kernel beside it. Not fitted (the model charges such calls the
	// profile's figures); a check on the traces.
	AloneRatio float64
	// Slowdown is device.pool_slowdown_kernel.
	Slowdown float64
	// Kernels is how many compute stages another worker's pool work
	// overlapped by a millisecond or more, in traces that time the
	// kernels' scratch allocations: KernelSlowdown,
	// device.kernel_slowdown_pool, is fitted from them against the stages
	// it did not overlap (none: left as it was; kernelsBesidePool).
	Kernels        int
	KernelSlowdown float64
}

// CalibratePoolBeside fits p's device.pool_slowdown_kernel from traces of
// several workers under a design that trims the pool and grows it back for
// every partition (split, split-first, split-devsync). Per kind of call (a
// trim that released memory; a cudaMallocAsync that grew the pool back
// right after its worker's trim, as fitHostCalls takes them), of 1 GiB or
// more, that a compute stage on the same device overlapped all through:
// its host time over what p charges it with no kernel beside it
// (trim_ms_per_gib, or pool_regrowth_ms and pool_regrowth_ms_per_gib, the
// one-worker runs' figures). The figure is the median of those ratios less
// 1 (never below 0); calls overlapped in part are left out.
//
// The baseline is p's, not the traces' own calls with no kernel beside
// them, because the model stretches p's figures: on the H200 those calls
// ran 0.8-1.3 (trims) and 1.05-1.6 (growths) times p's in grids of 2-4
// workers, depending on which designs' traces were given (split-devsync's
// trims follow a device sync), and a fit against them gave 0 to 0.67 for one
// family's grid (runs/h100-2026-12-05 f28: 0.18 with split-devsync's traces,
// 0.40-0.67 without) where the fit against p gives 0.26 either way
// (docs/simulator.md, "Both sides of the pool's work"). AloneRatio reports
// them.
//
// A call the profile charges less than minChargedMs is left out: the
// host's own jitter would be most of its ratio (the emulated device's trims
// cost microseconds).
//
// A one-worker run of a design has no such calls (a worker does not trim
// while its own kernel runs): the traces are of several workers on the
// card, as for host.handoff.later_first, or of `cuzk bench pool-beside`,
// whose one worker trims beside its own kernel on purpose. It fails without
// a call beside a kernel.
func CalibratePoolBeside(p *Profile, traces ...Trace) (*Profile, PoolBesideFit, error) {
	var f PoolBesideFit
	var ratios, alone []float64
	var kb kernelsBesidePool
	for _, t := range traces {
		events, err := readTraceEvents(t.JSON, t.Name)
		if err != nil {
			return nil, f, err
		}
		ops := traceOps(events)
		kb.add(events, ops)
		kernels := map[int][][2]float64{} // device → its compute stages' spans, µs
		for _, e := range events {
			if e.Ph == "X" && e.Name == "compute" {
				kernels[e.Pid] = append(kernels[e.Pid], [2]float64{e.Ts, e.Ts + e.Dur})
			}
		}
		poolCalls(ops, func(o traceOp, trim bool) {
			took := o.end - o.start
			if o.bytes < float64(gib) || took <= 0 {
				return
			}
			var overlap float64
			for _, k := range kernels[o.device] {
				overlap += max(0, min(o.end, k[1])-max(o.start, k[0]))
			}
			share := overlap / took
			g := o.bytes / float64(gib)
			charged := profileMsPerGiB(p, trim, g)
			if share > 0.1 && share < 0.9 || charged*g < minChargedMs {
				return
			}
			r := took / 1e3 / g / charged
			if share >= 0.9 {
				ratios = append(ratios, r)
			} else {
				alone = append(alone, r)
			}
		})
	}
	f.Beside, f.Alone = len(ratios), len(alone)
	if len(alone) > 0 {
		f.AloneRatio = round(median(alone), 3)
	}
	if f.Beside == 0 {
		return nil, f, errors.New("calibrate: no trim or pool growth beside a kernel in the traces (give traces of 2-4 workers under split, split-first or split-devsync, or of `cuzk bench pool-beside`)")
	}
	f.Slowdown = round(max(median(ratios)-1, 0), 3)
	out := *p
	out.Device.PoolSlowdownKernel = f.Slowdown
	if f.KernelSlowdown, f.Kernels = kb.fit(); f.Kernels > 0 {
		out.Device.KernelSlowdownPool = f.KernelSlowdown
	}
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

// minChargedMs is the least host time, in ms, the profile must charge a
// trim or growth alone for CalibratePoolBeside to time it against that.
const minChargedMs = 0.5

// kernelsBesidePool gathers, trace by trace, what compute stages beside
// another worker's pool work said of it (kernel_slowdown_pool): a trace's
// stages, less the host time of their own scratch allocation (a kernel's
// host code grows the pool for its scratch before it launches the work; a
// trace without those times, written before they were, adds nothing),
// leaving out its first stage (the pool's first growth) and any shorter
// than half its median stage (a kernel whose scratch did not fit). A stage
// that no other worker's trim or cudaMallocAsync on its device overlapped
// is quiet; the others' excess over the trace's quiet median (the quiet
// stages of every trace given, where it has fewer than 3) is summed with
// the milliseconds of pool work that overlapped them (fit).
type kernelsBesidePool struct {
	traces []besideStages
}

type besideStages struct {
	quiet []float64 // ms
	busy  []besideStage
}

type besideStage struct{ ms, beside float64 }

func (kb *kernelsBesidePool) add(events []traceEvent, ops []traceOp) {
	type span struct {
		start, end  float64
		device, tid int
		part        string
	}
	var stages, pool []span
	scratch := map[string]float64{} // partition → its scratch allocation's host time, µs
	for _, e := range events {
		part, _ := e.Args["partition"].(string)
		switch {
		case e.Ph == "X" && e.Name == "compute":
			stages = append(stages, span{e.Ts, e.Ts + e.Dur, e.Pid, e.Tid, part})
		case e.Ph == "X" && e.Name == "scratch_malloc":
			scratch[part] += e.Dur
		}
	}
	if len(stages) < 2 || len(scratch) == 0 {
		return
	}
	for _, o := range ops {
		if !o.err && (o.name == "trim_pool" || o.name == "malloc_async") && o.end > o.start {
			pool = append(pool, span{o.start, o.end, o.device, o.tid, o.partition})
		}
	}
	slices.SortFunc(stages, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	var all []besideStage
	var lengths []float64
	for _, st := range stages[1:] {
		var beside float64
		for _, o := range pool {
			if o.device == st.device && o.tid != st.tid {
				beside += max(0, min(o.end, st.end)-max(o.start, st.start))
			}
		}
		ms := (st.end - st.start - scratch[st.part]) / 1e3
		all = append(all, besideStage{ms, beside / 1e3})
		lengths = append(lengths, ms)
	}
	mid := median(lengths)
	var t besideStages
	for _, a := range all {
		switch {
		case a.ms < mid/2: // its scratch did not fit
		case a.beside < 1:
			t.quiet = append(t.quiet, a.ms)
		default:
			t.busy = append(t.busy, a)
		}
	}
	kb.traces = append(kb.traces, t)
}

// fit is kernel_slowdown_pool from the traces added, and how many stages
// beside pool work gave it (0: none could, the figure 0).
func (kb *kernelsBesidePool) fit() (slowdown float64, n int) {
	var pooled []float64
	for _, t := range kb.traces {
		pooled = append(pooled, t.quiet...)
	}
	if len(pooled) < 3 {
		return 0, 0
	}
	all := median(pooled)
	var excess, overlap float64
	for _, t := range kb.traces {
		norm := all
		if len(t.quiet) >= 3 {
			norm = median(t.quiet)
		}
		for _, b := range t.busy {
			n++
			excess += b.ms - norm
			overlap += b.beside
		}
	}
	if n < 3 || overlap <= 0 {
		return 0, 0
	}
	// Beside o of pool work a kernel advancing at 1/(1+s) of its rate
	// runs o·s/(1+s) longer: s from the excess per ms beside.
	r := min(max(excess/overlap, 0), 0.9)
	return round(r/(1-r), 3), n
}
