// Package facts replays docs/cuda-facts.md — the H200 probe measurements — as
// scripts against any gpu.Device: the simulator on its virtual clock, the
// emulated device and the real one on the wall clock. The scripts and their
// expected outputs live in gpu/testdata/cuda_facts.txt; the expected outputs
// are the measured behaviour, printed as the simulator reproduces it.
//
// A script is a list of host calls at given times:
//
//	probe [vram=<GiB>] [reuse=on|off]
//	at <dur> s<stream> <op> [args]
//	----
//	s<stream> <op>: called <dur>, returned <dur> (after <dur>)[, waited for another stream][, error: ...][, free <GiB> GiB]
//
// ops: compute <dur>, launch <dur> (a kernel launched asynchronously: the
// call returns at enqueue), malloc <GiB> <name>, free <name>, malloc_async <GiB>
// <name>, free_async <name>, trim <GiB>, device_sync, stream_sync, mem_info,
// host_alloc <MiB> <name>, host_free <name>, copy <GiB>, record <name>,
// event_sync <name>. A copy goes into the device buffer the script allocated
// last, or into a scratch buffer the runner makes before the script starts.
//
// The simulator must print the expected output byte for byte. A wall-clock
// device is held to the semantics (Compare): the same calls fail or succeed,
// the same ones report waiting for another stream, cudaMemGetInfo sees the same
// free memory, and each call returns after about as long (the emulated device,
// which charges the measured costs) or on the same side of a threshold that
// tells a call that waited for a 200 ms kernel from one that did not (the real
// device, whose costs are the hardware's).
package facts

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/cuzk/cuzk/gpu"
)

const gib = 1 << 30

// Step is one host call of a script.
type Step struct {
	At     time.Duration
	Stream gpu.Stream
	Op     string
	Args   []string
	Line   string
}

// Probe is one parsed case.
type Probe struct {
	VRAM  float64 // GiB; default 139.28, the H200's free memory at start
	Reuse bool    // ReuseAcrossStreams; default on
	Steps []Step
}

// Policy is the pool policy the probe asks for.
func (p Probe) Policy() gpu.PoolPolicy {
	pol := gpu.DefaultPoolPolicy()
	pol.ReuseAcrossStreams = p.Reuse
	return pol
}

// Bytes is the probe's VRAM in bytes.
func (p Probe) Bytes() int64 { return int64(p.VRAM * gib) }

// Parse reads a "probe" case.
func Parse(td *datadriven.TestData) (Probe, error) {
	if td.Cmd != "probe" {
		return Probe{}, fmt.Errorf("%s: unknown command %q", td.Pos, td.Cmd)
	}
	p := Probe{VRAM: 139.28, Reuse: true}
	for _, a := range td.CmdArgs {
		if len(a.Vals) != 1 {
			return Probe{}, fmt.Errorf("%s: argument %s wants one value", td.Pos, a.Key)
		}
		switch a.Key {
		case "vram":
			v, err := strconv.ParseFloat(a.Vals[0], 64)
			if err != nil || v <= 0 {
				return Probe{}, fmt.Errorf("%s: vram %q: want a positive number of GiB", td.Pos, a.Vals[0])
			}
			p.VRAM = v
		case "reuse":
			if a.Vals[0] != "on" && a.Vals[0] != "off" {
				return Probe{}, fmt.Errorf("%s: reuse %q: want on or off", td.Pos, a.Vals[0])
			}
			p.Reuse = a.Vals[0] == "on"
		default:
			return Probe{}, fmt.Errorf("%s: unknown argument %q", td.Pos, a.Key)
		}
	}
	var last time.Duration
	for _, ln := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		f := strings.Fields(ln)
		if len(f) < 4 || f[0] != "at" || !strings.HasPrefix(f[2], "s") {
			return Probe{}, fmt.Errorf("%s: bad line %q: want \"at <dur> s<stream> <op> [args]\"", td.Pos, ln)
		}
		at, err := time.ParseDuration(f[1])
		if err != nil || at < last {
			return Probe{}, fmt.Errorf("%s: bad time in %q: want a duration no earlier than the line before", td.Pos, ln)
		}
		last = at
		sn, err := strconv.Atoi(strings.TrimPrefix(f[2], "s"))
		if err != nil || sn <= 0 {
			return Probe{}, fmt.Errorf("%s: bad stream in %q", td.Pos, ln)
		}
		st := Step{At: at, Stream: gpu.Stream(sn), Op: f[3], Args: f[4:], Line: ln}
		if want, ok := arity[st.Op]; !ok || len(st.Args) != want {
			return Probe{}, fmt.Errorf("%s: bad op in %q", td.Pos, ln)
		}
		p.Steps = append(p.Steps, st)
	}
	return p, nil
}

var arity = map[string]int{
	"compute": 1, "launch": 1, "malloc": 2, "free": 1, "malloc_async": 2, "free_async": 1, "trim": 1,
	"device_sync": 0, "stream_sync": 0, "mem_info": 0, "host_alloc": 2, "host_free": 1,
	"copy": 1, "record": 1, "event_sync": 1,
}

// ScratchBytes is the size of the scratch buffer a runner must make before
// the script starts: the largest copy made before any allocation; 0 for none.
func (p Probe) ScratchBytes() int64 {
	var n int64
	for _, st := range p.Steps {
		switch st.Op {
		case "malloc", "malloc_async":
			return n
		case "copy":
			n = max(n, gibArg(st.Args[0]))
		}
	}
	return n
}

func gibArg(s string) int64 {
	v, _ := strconv.ParseFloat(s, 64)
	return int64(v * gib)
}

// Kernels makes the device work a runner's ops carry.
type Kernels struct {
	// Compute is a kernel that keeps the device busy for d alone.
	Compute func(d time.Duration) *gpu.Kernel
	// Copy is what an OpCopyIn of bytes carries; nil carries none.
	Copy func(bytes int64) *gpu.Kernel
}

// Script turns steps into ops and remembers the buffers and events they name.
type Script struct {
	kernels Kernels
	names   map[string]uint64
	lastBuf gpu.Buffer
}

// NewScript starts a script run; scratch (0 for none) is where copies go
// before the script has allocated a buffer.
func NewScript(k Kernels, scratch gpu.Buffer) *Script {
	return &Script{kernels: k, names: map[string]uint64{}, lastBuf: scratch}
}

// Op is the op a step makes, and the name its result is to be recorded as.
func (s *Script) Op(st Step) (gpu.Op, string, error) {
	o := gpu.Op{Stream: st.Stream}
	a := st.Args
	lookup := func(n string) (uint64, error) {
		v, ok := s.names[n]
		if !ok {
			return 0, fmt.Errorf("%q: %s names nothing made before", st.Line, n)
		}
		return v, nil
	}
	var err error
	var v uint64
	switch st.Op {
	case "compute", "launch":
		d, perr := time.ParseDuration(a[0])
		if perr != nil || d <= 0 {
			return o, "", fmt.Errorf("%q: bad kernel duration", st.Line)
		}
		o.Kind, o.Kernel, o.Async = gpu.OpCompute, s.kernels.Compute(d), st.Op == "launch"
	case "malloc":
		o.Kind, o.Bytes = gpu.OpMalloc, gibArg(a[0])
		return o, a[1], nil
	case "malloc_async":
		o.Kind, o.Bytes = gpu.OpMallocAsync, gibArg(a[0])
		return o, a[1], nil
	case "host_alloc":
		mib, _ := strconv.ParseFloat(a[0], 64)
		o.Kind, o.Bytes = gpu.OpHostAlloc, int64(mib*(1<<20))
		return o, a[1], nil
	case "free", "free_async", "host_free":
		o.Kind = map[string]gpu.OpKind{"free": gpu.OpFree, "free_async": gpu.OpFreeAsync, "host_free": gpu.OpHostFree}[st.Op]
		v, err = lookup(a[0])
		o.Buffer = gpu.Buffer(v)
	case "trim":
		o.Kind, o.Bytes = gpu.OpTrimPool, gibArg(a[0])
	case "device_sync":
		o.Kind = gpu.OpDeviceSync
	case "stream_sync":
		o.Kind = gpu.OpStreamSync
	case "mem_info":
		o.Kind = gpu.OpMemInfo
	case "copy":
		o.Kind, o.Bytes, o.Buffer = gpu.OpCopyIn, gibArg(a[0]), s.lastBuf
		if s.kernels.Copy != nil {
			o.Kernel = s.kernels.Copy(o.Bytes)
		}
	case "record":
		o.Kind = gpu.OpRecordEvent
		return o, a[0], nil
	case "event_sync":
		o.Kind = gpu.OpEventSync
		v, err = lookup(a[0])
		o.Event = gpu.Event(v)
	}
	return o, "", err
}

// Record remembers what a call made under its name.
func (s *Script) Record(o gpu.Op, name string, r gpu.Result) {
	if name == "" || r.Err != nil {
		return
	}
	if o.Kind == gpu.OpRecordEvent {
		s.names[name] = uint64(r.Event)
		return
	}
	s.names[name] = uint64(r.Buffer)
	if o.Kind != gpu.OpHostAlloc {
		s.lastBuf = r.Buffer
	}
}

// Line is one call's outcome as the expected output prints it.
type Line struct {
	Stream           gpu.Stream
	Op               string
	Called, Returned time.Duration
	Waited           bool
	Err              string
	Free             float64 // GiB; mem_info only
	HasFree          bool
}

// NewLine is the outcome of a call; free is in bytes.
func NewLine(st Step, o gpu.Op, called, returned time.Duration, r gpu.Result, free int64) Line {
	l := Line{Stream: st.Stream, Op: st.Op, Called: called, Returned: returned, Waited: r.Waited}
	if r.Err != nil {
		l.Err = r.Err.Error()
	}
	if o.Kind == gpu.OpMemInfo && r.Err == nil {
		l.Free, l.HasFree = float64(free)/gib, true
	}
	return l
}

// String prints the line as the expected outputs do.
func (l Line) String() string {
	const q = 100 * time.Microsecond
	s := fmt.Sprintf("s%d %s: called %v, returned %v (after %v)", l.Stream, l.Op, l.Called.Round(q), l.Returned.Round(q), (l.Returned - l.Called).Round(q))
	if l.Waited {
		s += ", waited for another stream"
	}
	if l.Err != "" {
		s += ", error: " + l.Err
	}
	if l.HasFree {
		s += fmt.Sprintf(", free %.2f GiB", l.Free)
	}
	return s
}

// Format prints lines one per row.
func Format(lines []Line) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.String() + "\n")
	}
	return b.String()
}

// ParseLines reads an expected output.
func ParseLines(text string) ([]Line, error) {
	var out []Line
	for _, ln := range strings.Split(strings.TrimSpace(text), "\n") {
		head, rest, ok := strings.Cut(ln, ": called ")
		if !ok {
			return nil, fmt.Errorf("expected line %q: no \": called \"", ln)
		}
		sn, op, _ := strings.Cut(head, " ")
		n, err := strconv.Atoi(strings.TrimPrefix(sn, "s"))
		if err != nil {
			return nil, fmt.Errorf("expected line %q: bad stream", ln)
		}
		l := Line{Stream: gpu.Stream(n), Op: op}
		called, rest, _ := strings.Cut(rest, ", returned ")
		returned, rest, _ := strings.Cut(rest, " (after ")
		_, rest, _ = strings.Cut(rest, ")")
		if l.Called, err = time.ParseDuration(called); err != nil {
			return nil, fmt.Errorf("expected line %q: %w", ln, err)
		}
		if l.Returned, err = time.ParseDuration(returned); err != nil {
			return nil, fmt.Errorf("expected line %q: %w", ln, err)
		}
		l.Waited = strings.Contains(rest, ", waited for another stream")
		if _, e, ok := strings.Cut(rest, ", error: "); ok {
			l.Err, _, _ = strings.Cut(e, ", free ")
		}
		if _, f, ok := strings.Cut(rest, ", free "); ok {
			v, err := strconv.ParseFloat(strings.TrimSuffix(f, " GiB"), 64)
			if err != nil {
				return nil, fmt.Errorf("expected line %q: bad free memory", ln)
			}
			l.Free, l.HasFree = v, true
		}
		out = append(out, l)
	}
	return out, nil
}

// Tolerance says how closely a wall-clock device must match.
type Tolerance struct {
	// Slack and Frac bound |after − expected after| by Slack + Frac·expected:
	// for a device that charges the measured costs (the emulated one).
	Slack time.Duration
	Frac  float64
	// Waits, when set, compares only whether a call returned at least this
	// long after it was called — whether it waited for device work — rather
	// than how long it took: for a device whose costs are the hardware's.
	Waits time.Duration
	// FreeGiB bounds the difference in free memory.
	FreeGiB float64
	// SkipKernelTimes leaves out how long kernels took (a device that runs
	// kernels one at a time rather than sharing the engine).
	SkipKernelTimes bool
	// WaitedKnown says for which ops the device can know that it waited for
	// another stream; nil: all.
	WaitedKnown func(op string) bool
	// Diverges names the ops whose return time the device is known not to
	// share with the measured behaviour, and why; their times are not
	// compared (their errors, waits and free memory still are).
	Diverges map[string]string
}

// Compare holds actual lines to the expected ones' semantics. Lines are
// matched by stream, op and occurrence, not by order (calls that return at
// nearly the same instant may swap). It returns what differs; none is a match.
func Compare(expected, actual []Line, tol Tolerance) []string {
	type key struct {
		s  gpu.Stream
		op string
		n  int
	}
	index := func(lines []Line) map[key]Line {
		m := map[key]Line{}
		seen := map[key]int{}
		for _, l := range lines {
			k := key{l.Stream, l.Op, 0}
			k.n = seen[k]
			seen[key{l.Stream, l.Op, 0}]++
			m[k] = l
		}
		return m
	}
	got := index(actual)
	var diffs []string
	n := 0
	seen := map[key]int{}
	for _, e := range expected {
		k := key{e.Stream, e.Op, 0}
		k.n = seen[k]
		seen[key{e.Stream, e.Op, 0}]++
		a, ok := got[k]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("s%d %s #%d: never returned", e.Stream, e.Op, k.n+1))
			continue
		}
		n++
		what := fmt.Sprintf("s%d %s #%d", e.Stream, e.Op, k.n+1)
		if (e.Err != "") != (a.Err != "") || (strings.Contains(e.Err, gpu.ErrOutOfMemory.Error()) != strings.Contains(a.Err, gpu.ErrOutOfMemory.Error())) {
			diffs = append(diffs, fmt.Sprintf("%s: error %q, want %q", what, a.Err, e.Err))
		}
		if e.Waited != a.Waited && (tol.WaitedKnown == nil || tol.WaitedKnown(e.Op)) {
			diffs = append(diffs, fmt.Sprintf("%s: waited for another stream %v, want %v", what, a.Waited, e.Waited))
		}
		if e.HasFree && (!a.HasFree || abs(a.Free-e.Free) > tol.FreeGiB) {
			diffs = append(diffs, fmt.Sprintf("%s: free %.2f GiB, want %.2f", what, a.Free, e.Free))
		}
		if _, ok := tol.Diverges[e.Op]; ok || (e.Op == "compute" && tol.SkipKernelTimes) {
			continue
		}
		ea, aa := e.Returned-e.Called, a.Returned-a.Called
		if tol.Waits > 0 {
			if (ea >= tol.Waits) != (aa >= tol.Waits) {
				diffs = append(diffs, fmt.Sprintf("%s: returned after %v, want %v: on the other side of %v", what, aa.Round(100*time.Microsecond), ea, tol.Waits))
			}
		} else if d := ea - aa; max(d, -d) > tol.Slack+time.Duration(tol.Frac*float64(ea)) {
			diffs = append(diffs, fmt.Sprintf("%s: returned after %v, want about %v", what, aa.Round(100*time.Microsecond), ea))
		}
	}
	if n != len(actual) {
		diffs = append(diffs, fmt.Sprintf("%d calls returned, want %d", len(actual), n))
	}
	return diffs
}

func abs(v float64) float64 { return max(v, -v) }
