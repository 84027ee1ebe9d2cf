package sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// DeviceFit is one device or partition figure the traces gave.
type DeviceFit struct {
	Field string  // the profile's JSON field, e.g. "device.h2d_gbps"
	Count int     // the trace events it came from
	Value float64 // in the field's unit
}

// NoteDeviceFits credits the traces in p's device source with the device
// figures they gave (the fits of a device.* field): a fitted profile's
// source would otherwise name only where the base's figures came from.
func NoteDeviceFits(p *Profile, fits []DeviceFit) {
	var got []string
	for _, f := range fits {
		if field, ok := strings.CutPrefix(f.Field, "device."); ok {
			got = append(got, fmt.Sprintf("%s (%d ops)", field, f.Count))
		}
	}
	if len(got) == 0 {
		return
	}
	p.Device.Source = "fitted from the profile's calibration traces: " + strings.Join(got, ", ") + "; the rest: " + p.Device.Source
}

// Trace is a production trace (trace.Writer's Chrome JSON) and its name.
type Trace struct {
	Name string
	JSON []byte
}

// freeWindow is how long before a copy a cudaFree is looked for: a free
// further back than this leaves nothing a copy could wait behind (the
// H200's 2.45 ms a GiB would need 40 GiB freed).
const freeWindowUs = 100e3

// CalibrateDevice returns a copy of p with what production traces of
// partitions of the given size say of the device and the partition. From
// every trace: the host→device bandwidth (bytes over time of the copies
// that no recent cudaFree or trim delayed), the work a cudaFree leaves on
// the copy engine (how much longer than that a copy made soon after a free
// took, plus how long after the free it started, per GiB freed) and the
// work a trim leaves there (the same of copies soon after a trim that
// released memory, per GiB released), the host time of
// cudaMalloc, of cudaFree and of a trim by the bytes they gave back, and of
// a cudaMallocAsync that grows the pool back right after a trim released
// its bytes, per GiB; and the order of two lock actors one handler wakes
// (fitHandoff). From the first trace: the device memory a partition holds (its
// allocation) and how much of it staging copies. Figures the traces have no
// ops for keep p's values; fits lists the ones set. The times are solo ones
// only with one worker on one device (copies share the bus, a free another
// worker's device-wide wait).
func CalibrateDevice(p *Profile, constraints int, traces ...Trace) (*Profile, []DeviceFit, error) {
	if constraints <= 0 {
		return nil, nil, fmt.Errorf("calibrate: partition size %d: must be positive", constraints)
	}
	if len(traces) == 0 {
		return nil, nil, fmt.Errorf("calibrate: no trace")
	}
	ops, err := readTracesOps(traces)
	if err != nil {
		return nil, nil, err
	}
	out := *p
	var fits []DeviceFit
	fit := func(field string, n int, v float64, to *float64) {
		*to = v
		fits = append(fits, DeviceFit{field, n, v})
	}

	c := fitCopies(ops)
	if c.copies > 0 {
		fit("device.h2d_gbps", c.copies, round(c.gbps, 2), &out.Device.H2DGBps)
	}
	c.free.apply("device.free_copy_work_ms_per_gib", &out.Device.FreeCopyWorkMsPerGiB, fit)
	c.trim.apply("device.trim_copy_work_ms_per_gib", &out.Device.TrimCopyWorkMsPerGiB, fit)
	h := fitHostCalls(ops)
	if h.mallocs > 0 {
		fit("device.malloc_ms", h.mallocs, round(h.mallocMs, 3), &out.Device.MallocMs)
	}
	if h.frees > 0 {
		fit("device.free_ms_per_gib", h.frees, round(h.freeMsPerGiB, 3), &out.Device.FreeMsPerGiB)
	}
	if h.trims > 0 {
		fit("device.trim_ms_per_gib", h.trims, round(h.trimMsPerGiB, 3), &out.Device.TrimMsPerGiB)
	}
	if h.regrowths > 0 {
		out.Device.PoolRegrowthMs = 0
		fit("device.pool_regrowth_ms_per_gib", h.regrowths, round(h.regrowthMsPerGiB, 3), &out.Device.PoolRegrowthMsPerGiB)
	}

	hf, err := fitHandoff(traces)
	if err != nil {
		return nil, nil, err
	}
	if hf.pairs > 0 {
		share := round(float64(hf.newestFirst)/float64(hf.pairs), 3)
		h := &HandoffProfile{NewestFirst: share,
			Source: fmt.Sprintf("%d of %d lock handoffs in one handler ran the lock asked for last first", hf.newestFirst, hf.pairs)}
		if b := p.Host.Handoff; b != nil && b.LaterFirst > 0 {
			// One worker's traces have no ties between workers: the race
			// between them stays the base's.
			h.LaterFirst = b.LaterFirst
			h.Source += fmt.Sprintf("; later_first %g from the base profile", b.LaterFirst)
		}
		out.Host.Handoff = h
		fits = append(fits, DeviceFit{"host.handoff.newest_first", hf.pairs, share})
	}

	// The partition's figures are given at the reference size, which
	// Calibrate sets to the trace's size.
	scale := p.partitionScale(constraints, p.ReferenceConstraints)
	var allocs, copies int
	var allocBytes, copiedBytes, partialBytes float64
	partial := false
	for _, o := range ops[0] {
		if o.err {
			continue
		}
		switch o.name {
		case "copy_in":
			// A partition staged in part (the prover's a alone, the rest
			// copied during compute) says what moved in the trace's copied.
			// A whole stage may move a few bytes less than its buffer
			// (alignment); a partial one moves a fraction (a is about a
			// fifth of a partition).
			copiedBytes = math.Max(copiedBytes, cmp.Or(o.copied, o.bytes))
			if o.copied > 0 && o.copied < o.bytes*3/4 {
				partial, partialBytes = true, math.Max(partialBytes, o.copied)
			}
			copies++
		case "malloc", "malloc_async":
			allocBytes = math.Max(allocBytes, o.bytes)
			allocs++
		}
	}
	if partial {
		// Stages beside a kernel moved everything: what staging alone
		// moves is what the partial ones did.
		copiedBytes = partialBytes
	}
	if allocs > 0 {
		out.Partition.VRAMGiB = round(allocBytes/float64(gib)*scale, 4)
		fits = append(fits, DeviceFit{"partition.vram_gib", allocs, out.Partition.VRAMGiB})
		out.Partition.StagesAlone = false
		if copies > 0 && copiedBytes < allocBytes {
			out.Partition.CopyGiB = round(copiedBytes/float64(gib)*scale, 4)
			fits = append(fits, DeviceFit{"partition.copy_gib", copies, out.Partition.CopyGiB})
			// The prover's stage moved less than it staged: it does so
			// only while no kernel runs (stages_alone); a copy op of
			// fewer bytes (the contention bench's) always moves them.
			out.Partition.StagesAlone = partial
		} else {
			out.Partition.CopyGiB = 0
		}
	}
	if err := out.recordTraces(traces); err != nil {
		return nil, nil, err
	}
	return &out, fits, nil
}

// recordTraces adds the traces' names to p's calibration record, and checks
// the fitted profile.
func (p *Profile) recordTraces(traces []Trace) error {
	cal, err := withTraces(p.Calibration, traces)
	if err != nil {
		return err
	}
	p.Calibration = cal
	if err := p.validate(); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	return nil
}

// CalibrateBallast fits p's device.pool_growth_ballast_ms_per_gib from
// one-worker traces made under a VRAM limit (the rest of the card held by
// the limit's ballast allocation): the mean host time per GiB of their
// cudaMallocAsyncs that grow the pool back right after a trim (as
// CalibrateDevice takes them) less p's pool_regrowth_ms_per_gib, which
// whole-card traces gave; never below 0. With limit > 0 it also fits
// device.limit_shortfall_mib: limit less the most any of the traces'
// cudaMemGetInfo calls reported free (a one-worker run that trims before
// it asks, as split does, asks with nothing held). Where a cudaMalloc right
// after a cudaFree needed the freed bytes (the single design with no CPU
// stages, its buffer too large to fit beside the one just freed), it fits
// device.malloc_free_wait_ms_per_gib (fitMallocFreeWait), or, where most
// of at least minNoWaitMallocs mallocs that could not fit beside the freed
// buffer returned at once, sets device.malloc_waits_free_work false (the
// emulated device's cudaMalloc does not wait). Traces without
// such growths, calls or mallocs leave those figures as they are; p's
// others are not touched.
func CalibrateBallast(p *Profile, limit int64, traces ...Trace) (*Profile, []DeviceFit, error) {
	if len(traces) == 0 {
		return p, nil, nil
	}
	ops, err := readTracesOps(traces)
	if err != nil {
		return nil, nil, err
	}
	out := *p
	var fits []DeviceFit
	if h := fitHostCalls(ops); h.regrowths > 0 {
		extra := round(max(h.regrowthMsPerGiB-p.Device.PoolRegrowthMsPerGiB, 0), 3)
		out.Device.PoolGrowthBallastMsPerGiB = extra
		fits = append(fits, DeviceFit{"device.pool_growth_ballast_ms_per_gib", h.regrowths, extra})
	}
	switch w := fitMallocFreeWait(ops, p.Device.MallocMs, limit); {
	case w.needed >= minNoWaitMallocs && 2*w.quick > w.needed:
		out.Device.MallocWaitsFreeWork = false
		fits = append(fits, DeviceFit{"device.malloc_waits_free_work", w.needed, 0})
	case w.n > 0:
		out.Device.MallocFreeWaitMsPerGiB = w.msPerGiB
		fits = append(fits, DeviceFit{"device.malloc_free_wait_ms_per_gib", w.n, w.msPerGiB})
	}
	if limit > 0 {
		var asked int
		var most float64
		for _, t := range ops {
			for _, o := range t {
				if o.name == "mem_info" && o.bytesRecorded && !o.err {
					asked++
					most = max(most, o.bytes)
				}
			}
		}
		if asked > 0 {
			short := round(max(float64(limit)-most, 0)/(1<<20), 3)
			out.Device.LimitShortfallMiB = short
			fits = append(fits, DeviceFit{"device.limit_shortfall_mib", asked, short})
		}
	}
	if len(fits) == 0 {
		return &out, nil, nil
	}
	if err := out.recordTraces(traces); err != nil {
		return nil, nil, err
	}
	return &out, fits, nil
}

// fitMallocFreeWait is malloc_free_wait_ms_per_gib from traces made under a
// VRAM limit: the median, over the cudaMallocs that started within
// freeWaitGapUs of a cudaFree's return on the same device and took more
// than freeWaitMinMs beyond mallocMs (they needed the bytes that free gave
// back), of the time from the free's return to the malloc's, less
// mallocMs, per GiB freed. A malloc that fitted beside the freed bytes
// returns in about mallocMs and says nothing. n = 0: no such malloc.
//
// It also counts, with limit > 0, the mallocs right after a free that
// could not have fitted beside the freed buffer (the two together larger
// than the limit), and of them those that returned within freeWaitMinMs
// of mallocMs: a device whose mallocs do that did not wait for the free's
// work (malloc_waits_free_work false).
func fitMallocFreeWait(ops [][]traceOp, mallocMs float64, limit int64) mallocFreeWait {
	var w mallocFreeWait
	var perGiB []float64
	for _, t := range ops {
		for i, o := range t {
			if o.name != "malloc" || o.err {
				continue
			}
			f, ok := releaseBefore(t, i, false)
			if !ok || f.bytes <= 0 || o.start-f.end > freeWaitGapUs {
				continue
			}
			quick := (o.end-o.start)/1e3 < mallocMs+freeWaitMinMs
			if limit > 0 && o.bytes+f.bytes > float64(limit) {
				w.needed++
				if quick {
					w.quick++
				}
			}
			if !quick {
				perGiB = append(perGiB, max((o.end-f.end)/1e3-mallocMs, 0)/(f.bytes/float64(gib)))
			}
		}
	}
	if len(perGiB) > 0 {
		w.n, w.msPerGiB = len(perGiB), round(median(perGiB), 3)
	}
	return w
}

// mallocFreeWait is what fitMallocFreeWait read: n mallocs that waited for
// a free's bytes, msPerGiB their median wait a GiB freed; needed mallocs
// that could not fit beside the bytes just freed, quick of them that
// returned as a malloc with nothing to wait for does.
type mallocFreeWait struct {
	n             int
	msPerGiB      float64
	needed, quick int
}

// minNoWaitMallocs is the fewest mallocs that needed a free's bytes from
// which CalibrateBallast reads that the device's cudaMalloc does not wait
// for a free's work.
const minNoWaitMallocs = 3

// A cudaMalloc that starts within freeWaitGapUs of a cudaFree's return and
// takes freeWaitMinMs beyond its usual cost waited for that free's bytes.
const (
	freeWaitGapUs = 1000
	freeWaitMinMs = 5
)

// withTraces is the profile's calibration record with traces' names added
// to its list of traces.
func withTraces(cal json.RawMessage, traces []Trace) (json.RawMessage, error) {
	m := map[string]any{}
	if len(cal) > 0 {
		if err := json.Unmarshal(cal, &m); err != nil {
			return nil, fmt.Errorf("calibrate: the profile's calibration record: %w", err)
		}
	}
	var names []string
	if old, ok := m["traces"].([]any); ok {
		for _, n := range old {
			if s, ok := n.(string); ok {
				names = append(names, s)
			}
		}
	}
	for _, t := range traces {
		if !slices.Contains(names, t.Name) {
			names = append(names, t.Name)
		}
	}
	m["fitted"], m["traces"] = true, names
	return json.Marshal(m)
}

// traceOp is one device op of a trace: when it started and ended (µs),
// on which device and worker, for which partition, and its bytes.
type traceOp struct {
	name          string
	device, tid   int
	partition     string
	start, end    float64
	bytes         float64
	copied        float64 // a copy_in's bytes really moved, where the trace says (0: bytes)
	waited, err   bool
	bytesRecorded bool    // the trace gave the op's bytes (not inferred)
	late          float64 // µs from the op's end to its worker's handling of it (late_us; 0: not traced)
}

// readTracesOps is readTraceOps of each trace.
func readTracesOps(traces []Trace) ([][]traceOp, error) {
	var ops [][]traceOp
	for _, t := range traces {
		o, err := readTraceOps(t)
		if err != nil {
			return nil, err
		}
		ops = append(ops, o)
	}
	return ops, nil
}

// readTraceOps reads a trace's device ops in the order they started
// (traceOps).
func readTraceOps(t Trace) ([]traceOp, error) {
	events, err := readTraceEvents(t.JSON, t.Name)
	if err != nil {
		return nil, err
	}
	return traceOps(events), nil
}

// traceOps is the device ops among a trace's events, in the order they
// started. A cudaFree of a trace written before frees carried their bytes
// gets the bytes of its partition's cudaMalloc on the same worker.
func traceOps(events []traceEvent) []traceOp {
	var ops []traceOp
	for _, e := range events {
		if e.Ph != "i" {
			continue
		}
		took, ok := e.Args["took_us"].(float64)
		if !ok {
			continue // not a device op
		}
		bytes, recorded := e.Args["bytes"].(float64)
		copied, _ := e.Args["copied"].(float64)
		errText, _ := e.Args["error"].(string)
		waited, _ := e.Args["waited"].(bool)
		part, _ := e.Args["partition"].(string)
		// A mark is where the worker handled the op's completion: less
		// the completion's wait for it (late_us, where the trace has it),
		// the op's end; less its own time too, its call.
		late, _ := e.Args["late_us"].(float64)
		end := e.Ts - late
		ops = append(ops, traceOp{name: e.Name, device: e.Pid, tid: e.Tid, partition: part, start: end - took, end: end,
			bytes: bytes, copied: copied, waited: waited, err: errText != "", bytesRecorded: recorded, late: late})
	}
	slices.SortStableFunc(ops, func(a, b traceOp) int { return cmp.Compare(a.start, b.start) })
	type owner struct {
		device, tid int
		partition   string
	}
	malloced := map[owner]float64{}
	for i, o := range ops {
		k := owner{o.device, o.tid, o.partition}
		switch {
		case o.name == "malloc" && !o.err:
			malloced[k] = o.bytes
		case o.name == "free" && !o.bytesRecorded:
			ops[i].bytes = malloced[k]
		}
	}
	return ops
}

// copyFit is what the copies of the traces said.
type copyFit struct {
	copies int     // copies the bandwidth came from
	gbps   float64 // their bytes over their time
	// What a cudaFree and a trim that released memory leave on the copy
	// engine.
	free, trim releaseFit
}

// releaseFit is what the copies made soon after one kind of release (a
// cudaFree, a trim) said of the work it leaves on the copy engine.
type releaseFit struct {
	delayed int     // copies the work delayed
	work    float64 // ms of copy-engine work per GiB released
	// lowerBound: when most copies were outlasted by the work (none fitted),
	// the median of what each says the work was at least, ms per GiB.
	lowerBound float64
	outlasted  int
	// upperBound: when no copy after a release was delayed at all, the
	// least of what each says the work was at most (the time from the
	// release to its start, per GiB released): a device whose frees leave
	// the copy engine no work says so by its copies made right after one.
	upperBound float64
	undelayed  int
}

// fitted is the work per GiB the copies gave, if they gave one.
func (r releaseFit) fitted() (float64, bool) { return r.work, r.delayed > 0 }

// apply sets *to from r where the copies say more than the profile's figure
// there: the fitted work; else, when most copies were outlasted, the bound
// from below if the figure lies under it; else, when none was delayed, the
// bound from above if the figure lies over it.
func (r releaseFit) apply(field string, to *float64, fit func(string, int, float64, *float64)) {
	switch {
	case r.delayed > 0:
		fit(field, r.delayed, round(r.work, 3), to)
	case r.outlasted > 0 && r.lowerBound > *to:
		// The profile's figure is less than the traces say the work was
		// at least: the bound is the better guess.
		fit(field, r.outlasted, round(r.lowerBound, 3), to)
	case r.undelayed > 0 && r.upperBound < *to:
		// No copy after a release waited, some began too soon after one
		// for the profile's work to have drained: the bound is the better
		// guess (the emulated device without --free-copy-work: none).
		fit(field, r.undelayed, round(r.upperBound, 3), to)
	}
}

// saturatedShare is how much longer than alone a copy beside a free's work
// must take for the work to have outlasted it (equal sharing doubles it).
const saturatedShare = 0.9

// releaseBefore is the release on ops[i]'s device that started last of
// those that ended by ops[i]'s start (ops in the order they started): a
// cudaFree, or with trims also a trim that recorded releasing bytes.
func releaseBefore(ops []traceOp, i int, trims bool) (traceOp, bool) {
	o := ops[i]
	for j := i - 1; j >= 0; j-- {
		f := ops[j]
		if f.device != o.device || f.err || f.end > o.start {
			continue
		}
		if f.name == "free" || (trims && f.name == "trim_pool" && f.bytes > 0) {
			return f, true
		}
	}
	return traceOp{}, false
}

// fitCopies takes the bandwidth from the copies no release (a cudaFree, a
// trim that released memory) preceded by less than freeWindow, then, for
// each kind of release apart, from each copy made sooner after one that
// took longer than that bandwidth says, the release's work per GiB as the
// extra time plus the time between the release's return (a trim's start:
// its work begins with it) and the copy's start (what the copy shares the
// engine with is what was left of that work); the median of those is the
// kind's figure. A copy the work outlasted (about twice its solo time)
// bounds the work from below only and is left out; when most copies were,
// the others are exceptions and nothing is fitted: the profile keeps its
// figure, or takes the copies' bound where its figure lies below it. When
// no copy after a release was delayed, each bounds the work from above by
// the time between the release and its start, per GiB released, and the
// least of those bounds replaces a profile's figure above it. The bandwidth
// is taken again from every copy the fitted work did not reach.
func fitCopies(traces [][]traceOp) copyFit {
	type sample struct {
		bytes, took float64 // bytes, µs
		gap, freed  float64 // µs since the latest release returned (a trim: began); its bytes (0: none)
		trim        bool    // that release was a trim
	}
	var ss []sample
	for _, ops := range traces {
		for i, o := range ops {
			if o.name != "copy_in" || o.err || o.bytes <= 0 || o.end <= o.start {
				continue
			}
			// A partition staged with a alone moved fewer bytes than its
			// op said (the trace's copied): the link's speed is theirs.
			s := sample{bytes: cmp.Or(o.copied, o.bytes), took: o.end - o.start, gap: math.Inf(1)}
			if f, ok := releaseBefore(ops, i, true); ok {
				s.freed, s.trim = f.bytes, f.name == "trim_pool"
				from := f.end
				if s.trim {
					from = f.start // a trim's work starts with the trim (trim_copy_work_ms_per_gib)
				}
				s.gap = o.start - from
			}
			ss = append(ss, s)
		}
	}
	bandwidth := func(keep func(sample) bool) (n int, bytesPerUs float64) {
		var b, us float64
		for _, s := range ss {
			if keep(s) {
				n++
				b += s.bytes
				us += s.took
			}
		}
		if us == 0 {
			return 0, 0
		}
		return n, b / us
	}
	var c copyFit
	n, bw := bandwidth(func(s sample) bool { return s.freed == 0 || s.gap > freeWindowUs })
	if n == 0 {
		// Every copy followed a release closely: the bandwidth is theirs.
		n, bw = bandwidth(func(sample) bool { return true })
		c.copies, c.gbps = n, bw/1e3
		return c
	}
	kind := func(trim bool) releaseFit {
		var r releaseFit
		var perGiB, atLeast, atMost []float64
		for _, s := range ss {
			if s.trim != trim || s.freed == 0 || s.gap > freeWindowUs {
				continue
			}
			solo := s.bytes / bw
			extra := s.took - solo
			if extra <= math.Max(500, 0.02*s.took) {
				// The work was done before the copy began: it was at most
				// what the copy's start (and any extra) leaves room for.
				atMost = append(atMost, (math.Max(extra, 0)+s.gap)/1e3/(s.freed/float64(gib)))
				continue
			}
			if extra >= saturatedShare*solo {
				// Sharing the engine, a copy is delayed by the work left or
				// by its own length, whichever is less: this one was as
				// long again as alone, so the work outlasted it and says
				// only that it was at least that much.
				atLeast = append(atLeast, (extra+s.gap)/1e3/(s.freed/float64(gib)))
				continue
			}
			perGiB = append(perGiB, (extra+s.gap)/1e3/(s.freed/float64(gib)))
		}
		if len(atLeast) > len(perGiB) {
			// Most copies were shorter than the work: the few it did not
			// outlast are the exceptions (F6's probe on the H200: 12 of 13
			// copies of 512 MiB doubled after frees of 11 GiB, and the
			// thirteenth said 0.91 ms a GiB where the card's figure is
			// about 2.4). The traces bound the work from below only; the
			// profile keeps its figure unless it lies under that bound.
			r.lowerBound, r.outlasted = median(atLeast), len(atLeast)
			perGiB = nil
		}
		if len(perGiB) == 0 && len(atLeast) == 0 && len(atMost) > 0 {
			r.upperBound, r.undelayed = slices.Min(atMost), len(atMost)
		}
		if len(perGiB) > 0 {
			r.work, r.delayed = median(perGiB), len(perGiB)
		}
		return r
	}
	c.free, c.trim = kind(false), kind(true)
	if c.free.delayed > 0 || c.trim.delayed > 0 {
		// Every copy the fitted work did not reach; after a kind with no
		// figure, those beyond the window as before.
		n, bw = bandwidth(func(s sample) bool {
			if s.freed == 0 {
				return true
			}
			r := c.free
			if s.trim {
				r = c.trim
			}
			if w, ok := r.fitted(); ok {
				return s.gap/1e3 >= w*s.freed/float64(gib)
			}
			return s.gap > freeWindowUs
		})
	}
	c.copies, c.gbps = n, bw/1e3
	return c
}

// hostFit is what the traces said of the host calls that free and allocate.
type hostFit struct {
	mallocs          int
	mallocMs         float64
	frees            int
	freeMsPerGiB     float64
	trims            int
	trimMsPerGiB     float64
	regrowths        int
	regrowthMsPerGiB float64
}

// fitHostCalls takes the mean time of a cudaMalloc; of a cudaFree and of a
// trim per GiB they gave back, over those that waited for no other stream
// (a trace without the bytes they released gives neither); and, per GiB, of
// a cudaMallocAsync that a trim releasing at least its bytes preceded on its
// worker with no allocation between: the pool grows back to a size it had.
func fitHostCalls(traces [][]traceOp) hostFit {
	var h hostFit
	var freeMs, freeGiB, trimMs, trimGiB, regrowMs, regrowGiB float64
	for _, ops := range traces {
		for _, o := range ops {
			if o.err {
				continue
			}
			took := (o.end - o.start) / 1e3
			switch o.name {
			case "malloc":
				h.mallocs++
				h.mallocMs += took
			case "free":
				if !o.waited && o.bytes > 0 {
					h.frees++
					freeMs += took
					freeGiB += o.bytes / float64(gib)
				}
			}
		}
		poolCalls(ops, func(o traceOp, trim bool) {
			took := (o.end - o.start) / 1e3
			if trim {
				h.trims++
				trimMs += took
				trimGiB += o.bytes / float64(gib)
				return
			}
			h.regrowths++
			regrowMs += took
			regrowGiB += o.bytes / float64(gib)
		})
	}
	if h.mallocs > 0 {
		h.mallocMs /= float64(h.mallocs)
	}
	if freeGiB > 0 {
		h.freeMsPerGiB = freeMs / freeGiB
	}
	if trimGiB > 0 {
		h.trimMsPerGiB = trimMs / trimGiB
	}
	if regrowGiB > 0 {
		h.regrowthMsPerGiB = regrowMs / regrowGiB
	}
	return h
}

// poolCalls calls each with ops' trims that released memory (trim true)
// and their growths back: a cudaMallocAsync right after its worker's trim
// that released at least what it allocates, so that the pool, left with
// nothing cached, grows back by the whole allocation. ops are one trace's,
// in the order they started; failed calls are skipped.
func poolCalls(ops []traceOp, each func(o traceOp, trim bool)) {
	type worker struct{ device, tid int }
	trimmed := map[worker]float64{} // bytes the worker's last trim released, until it allocates
	for _, o := range ops {
		if o.err {
			continue
		}
		w := worker{o.device, o.tid}
		switch o.name {
		case "malloc":
			delete(trimmed, w)
		case "trim_pool":
			if o.bytesRecorded && o.bytes > 0 {
				trimmed[w] = o.bytes
				each(o, true)
			}
		case "malloc_async":
			if released, ok := trimmed[w]; ok && released >= o.bytes {
				each(o, false)
			}
			delete(trimmed, w)
		}
	}
}

// median of vs, which it sorts.
func median(vs []float64) float64 {
	slices.Sort(vs)
	m := len(vs) / 2
	if len(vs)%2 == 0 {
		return (vs[m-1] + vs[m]) / 2
	}
	return vs[m]
}
