package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/actors"
)

// opsObserver records every device op of a run.
type opsObserver struct{ ops []actors.Event }

func (o *opsObserver) Observe(e actors.Event) {
	if e.Kind == actors.EvDeviceOp {
		o.ops = append(o.ops, e)
	}
}

// With host.completion_latency each device call's completion reaches its
// worker that long after the call ended (the event's Late, the trace's
// late_us), a waited device sync with the waited figure; the call's own
// time is unchanged, and calls the profile does not name have none.
func TestCompletionLatencyDelaysTheWorker(t *testing.T) {
	const kernel = 100 * time.Millisecond
	run := func(l *CompletionLatencyProfile) []actors.Event {
		o := &opsObserver{}
		runTiedPair(t, kernel, func(p *Profile) {
			p.Host.Handoff = &HandoffProfile{NewestFirst: 1}
			p.Host.CompletionLatency = l
		}, false, o)
		return o.ops
	}
	l := &CompletionLatencyProfile{
		Calls:  map[string]LatencyDist{"stream_sync": {P50Us: 40}, "device_sync": {P50Us: 9}},
		Waited: LatencyDist{P50Us: 35},
	}
	var syncs, waited int
	for _, e := range run(l) {
		want := time.Duration(0)
		switch {
		case e.Op == "stream_sync":
			want = 40 * time.Microsecond
			syncs++
		case e.Op == "device_sync" && e.Waited:
			want = 35 * time.Microsecond
			waited++
		case e.Op == "device_sync":
			want = 9 * time.Microsecond
		}
		if e.Late != want {
			t.Errorf("%s (waited %v): late %v, want %v", e.Op, e.Waited, e.Late, want)
		}
		if e.Op == "stream_sync" && e.Took > kernel+time.Millisecond {
			t.Errorf("a stream sync took %v: the latency counted in the call's own time", e.Took)
		}
	}
	if syncs == 0 || waited != 1 {
		t.Fatalf("%d stream syncs, %d waited device syncs: want some, and one", syncs, waited)
	}
	for _, e := range run(nil) {
		if e.Late != 0 {
			t.Errorf("without completion_latency: %s late %v", e.Op, e.Late)
		}
	}
}

// opLate is op with late_us and waited.
func (b *traceBuilder) opLate(name string, endMs, tookMs, lateUs float64, waited bool) {
	b.ev = append(b.ev, fmt.Sprintf(`{"name":%q,"ph":"i","pid":0,"tid":0,"ts":%g,"args":{"partition":"bench/0","took_us":%g,"waited":%v,"late_us":%g}}`,
		name, endMs*1000+lateUs, tookMs*1000, waited, lateUs))
}

// The fit takes each call's median late_us and the spread of its
// logarithm, a waited device sync the stream syncs' where the traces have
// too few of its own, and cudaMemGetInfo's median time; calls too rare to
// fit, and traces without late_us, fit nothing.
func TestCalibrateCompletionLatency(t *testing.T) {
	base := contentionBase(t)
	var b traceBuilder
	for i := range 9 {
		at := float64(i) * 200
		b.opLate("stream_sync", at+100, 100, []float64{30, 35, 38, 40, 40, 42, 45, 50, 120}[i], false)
		b.opLate("device_sync", at+101, 0.01, 9, false)
		b.opLate("mem_info", at+102, 0.012, 1, false)
	}
	b.opLate("trim_pool", 5000, 10, 30, false) // one: too few to fit
	got, fits, err := CalibrateCompletionLatency(base, Trace{"one worker", b.json()})
	if err != nil {
		t.Fatal(err)
	}
	l := got.Host.CompletionLatency
	if s := l.Calls["stream_sync"]; s.P50Us != 40 || s.Sigma != round(math.Log(45.0/38)/1.349, 2) {
		t.Errorf("stream_sync %+v: want median 40 µs and sigma %.2f (the quartiles' logarithms over 1.349)", s, math.Log(45.0/38)/1.349)
	}
	if d := l.Calls["device_sync"]; d.P50Us != 9 || d.Sigma != 0 {
		t.Errorf("device_sync %+v: want 9 µs, sigma 0", d)
	}
	if _, ok := l.Calls["trim_pool"]; ok {
		t.Errorf("trim_pool fitted from one call")
	}
	if l.Waited != l.Calls["stream_sync"] || !strings.Contains(l.Source, "as the stream syncs") {
		t.Errorf("a waited device sync %+v (%s): want the stream syncs' %+v, said so", l.Waited, l.Source, l.Calls["stream_sync"])
	}
	if got.Device.MemInfoMs != 0.012 || len(fits) != 4 {
		t.Errorf("mem_info_ms %g from %+v: want 0.012, and four fits (three calls, mem_info_ms)", got.Device.MemInfoMs, fits)
	}
	if err := got.validate(); err != nil {
		t.Fatal(err)
	}
	got.Host.CompletionLatency.Calls["stream_sync"] = LatencyDist{P50Us: 40, Sigma: -1}
	if err := got.validate(); err == nil || !strings.Contains(err.Error(), "completion_latency.calls.stream_sync") {
		t.Errorf("a negative sigma: %v, want the field named", err)
	}
	var none traceBuilder
	none.op("stream_sync", 100, 100, 0)
	if _, _, err := CalibrateCompletionLatency(base, Trace{"no late_us", none.json()}); err == nil {
		t.Errorf("a trace without late_us fitted a latency")
	}
}
