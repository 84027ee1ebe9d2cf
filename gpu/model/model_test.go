package model

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/cuzk/cuzk/gpu"
)

const gib = 1 << 30

// TestModel drives the state machine the way a driver does, with no clock:
// each input line is a host call made now or a piece of work ending now, and
// prints the call's immediate result and every decision it caused.
//
//	model total=<GiB> [reuse=on|off] [threshold=<GiB>]
//	submit <name> <op> [s=<stream>] [gib=<n>] [ref=<name>] [async] [scratch=<GiB>]
//	finish <name> [fail]   the work item <name> became has ended on the device (failed)
//	return <name>     the host returns from the wait <name> became
//	stats
func TestModel(t *testing.T) {
	datadriven.RunTest(t, "testdata/model.txt", func(t *testing.T, td *datadriven.TestData) string {
		if td.Cmd != "model" {
			t.Fatalf("unknown command %q", td.Cmd)
		}
		opt := Options{Pool: gpu.DefaultPoolPolicy()}
		for _, a := range td.CmdArgs {
			v := a.Vals[0]
			switch a.Key {
			case "total":
				f, _ := strconv.ParseFloat(v, 64)
				opt.Total = int64(f * gib)
			case "reuse":
				opt.Pool.ReuseAcrossStreams = v == "on"
			case "threshold":
				f, _ := strconv.ParseFloat(v, 64)
				opt.Pool.ReleaseThreshold = int64(f * gib)
			}
		}
		d, err := New(opt)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]uint64{}
		items := map[string]*Item{}
		waits := map[string]*Wait{}
		var out strings.Builder
		for _, ln := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			f := strings.Fields(ln)
			var res string
			switch f[0] {
			case "submit":
				name, kind := f[1], opKinds[f[2]]
				o := gpu.Op{Kind: kind}
				var scratch int64
				for _, kv := range f[3:] {
					k, v, _ := strings.Cut(kv, "=")
					switch k {
					case "s":
						n, _ := strconv.Atoi(v)
						o.Stream = gpu.Stream(n)
					case "gib":
						g, _ := strconv.ParseFloat(v, 64)
						o.Bytes = int64(g * gib)
					case "ref":
						o.Buffer, o.Event = gpu.Buffer(ids[v]), gpu.Event(ids[v])
					case "async":
						o.Async = true
					case "scratch":
						g, _ := strconv.ParseFloat(v, 64)
						scratch = int64(g * gib)
					}
				}
				if kind == gpu.OpCompute {
					o.Kernel = &gpu.Kernel{Partition: name, Scratch: scratch}
				}
				c := d.Submit(o, name)
				res = describe(c.Result)
				switch {
				case c.Item != nil:
					items[name] = c.Item
					res = fmt.Sprintf("item s%d#%d %s", c.Item.Stream, c.Item.Seq, stateName[c.Item.State])
				case c.Wait != nil:
					waits[name] = c.Wait
					res = "waits"
				}
				if c.Grew > 0 {
					res += fmt.Sprintf(", grew %s", gpu.FormatBytes(c.Grew))
					if !c.FirstGrowth {
						res += " (again)"
					}
				}
				if c.Result.Buffer != 0 {
					ids[name] = uint64(c.Result.Buffer)
				}
				if c.Result.Event != 0 {
					ids[name] = uint64(c.Result.Event)
				}
			case "finish":
				var werr error
				if len(f) > 2 && f[2] == "fail" {
					werr = errors.New("kernel failed")
				}
				if err := d.FinishErr(items[f[1]], werr); err != nil {
					res = "error: " + err.Error()
				}
			case "return":
				r := d.Return(waits[f[1]])
				res = describe(r)
				if r.Buffer != 0 {
					ids[f[1]] = uint64(r.Buffer)
				}
			case "stats":
				s := d.Stats()
				res = fmt.Sprintf("used %s, pool reserved %s in use %s pending %s observed %s; %d OOM, %d cross waits, %d device waits",
					gpu.FormatBytes(s.Used), gpu.FormatBytes(s.PoolReserved), gpu.FormatBytes(s.PoolInUse),
					gpu.FormatBytes(s.PoolPending), gpu.FormatBytes(s.PoolObserved), s.OOMs, s.CrossWaits, s.DeviceWaits)
			default:
				t.Fatalf("unknown line %q", ln)
			}
			for _, o := range d.Outputs() {
				switch o.Kind {
				case OutStart:
					res += fmt.Sprintf("; start %s", o.Item.Tag)
					if g := o.Item.ScratchGrew; g > 0 {
						res += fmt.Sprintf(" (scratch grew the pool %s", gpu.FormatBytes(g))
						if !o.Item.ScratchFirstGrowth {
							res += " again"
						}
						res += ")"
					}
				case OutComplete:
					res += fmt.Sprintf("; complete %s", o.Item.Tag)
					if o.Item.Waited {
						res += " (waited)"
					}
					if o.Item.Err != nil {
						res += " (" + o.Item.Err.Error() + ")"
					}
				case OutMet:
					res += fmt.Sprintf("; met %s", o.Wait.Tag)
				}
			}
			fmt.Fprintf(&out, "%s: %s\n", strings.Join(f[:min(2, len(f))], " "), strings.TrimPrefix(res, "; "))
		}
		return out.String()
	})
}

var opKinds = map[string]gpu.OpKind{}

func init() {
	for k := gpu.OpKind(1); k.Valid(); k++ {
		opKinds[k.String()] = k
	}
	opKinds["bogus"] = 200
}

var stateName = map[ItemState]string{Enqueued: "enqueued", Started: "started", Complete: "complete"}

func describe(r gpu.Result) string {
	var parts []string
	if r.Err != nil {
		parts = append(parts, "error: "+r.Err.Error())
	}
	if r.Buffer != 0 {
		parts = append(parts, "buffer")
	}
	if r.Event != 0 {
		parts = append(parts, "event")
	}
	if r.Total != 0 {
		parts = append(parts, "free "+gpu.FormatBytes(r.Free))
	}
	if r.Waited {
		parts = append(parts, "waited for another stream")
	}
	if r.Released != 0 {
		parts = append(parts, "released "+gpu.FormatBytes(r.Released))
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, ", ")
}

// TestLedgerInvariant: a ledger that no longer adds up stops the program with
// the state printed, rather than letting a run go on with wrong memory.
func TestLedgerInvariant(t *testing.T) {
	d, err := New(Options{Total: 4 * gib})
	if err != nil {
		t.Fatal(err)
	}
	if r := d.Submit(gpu.Op{Kind: gpu.OpMallocAsync, Stream: 1, Bytes: gib}, nil).Result; r.Err != nil {
		t.Fatal(r.Err)
	}
	d.pool.inUse += gib // what a bookkeeping bug would do
	defer func() {
		p := recover()
		if p == nil || !strings.Contains(fmt.Sprint(p), "ledger broken") || !strings.Contains(fmt.Sprint(p), "PoolReserved") {
			t.Fatalf("panic %v, want the broken ledger printed", p)
		}
	}()
	d.Submit(gpu.Op{Kind: gpu.OpMalloc, Bytes: gib}, nil)
	t.Fatal("a broken ledger went unnoticed")
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range []Options{{}, {Total: -1}, {Total: gib, Context: 2 * gib}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}
