package sim

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/cuzk/cuzk/gpu"
)

// factsProfile is the H200 of CUDA-FACTS.md: its memory as cudaMemGetInfo
// reported it, its measured call costs, and a compute kernel whose size is its
// duration (1 constraint = 1 ns alone), so that scripts can ask for "a 200 ms
// full-occupancy kernel".
func factsProfile(t *testing.T) *Profile {
	p, err := LoadProfile("seed-16g")
	if err != nil {
		t.Fatal(err)
	}
	q := *p
	q.Jitter = 0
	q.ReferenceConstraints = 1_000_000
	q.Stages = map[string]StageProfile{}
	for k, v := range p.Stages {
		q.Stages[k] = v
	}
	q.Stages["compute"] = StageProfile{PerConstraintNs: 1, Exponent: 1}
	return &q
}

// TestCUDAFacts replays, one case per row of CUDA-FACTS.md, the probe that was
// run on the H200: calls on streams at given times, printed as when each call
// returned, whether it had to wait for another stream, and what
// cudaMemGetInfo said. The expected outputs are the measured behaviour.
//
// Script lines: "at <dur> s<stream> <op> [args]"; ops: compute <dur>,
// malloc <GiB> <name>, free <name>, malloc_async <GiB> <name>, free_async <name>,
// trim <GiB>, device_sync, stream_sync, mem_info, host_alloc <MiB> <name>,
// host_free <name>, copy <GiB>, record <name>, event_sync <name>.
// "device vram=<GiB> reuse=<on|off>" starts a fresh device.
func TestCUDAFacts(t *testing.T) {
	datadriven.RunTest(t, "testdata/cuda_facts.txt", func(t *testing.T, td *datadriven.TestData) string {
		if td.Cmd != "probe" {
			t.Fatalf("unknown command %q", td.Cmd)
		}
		vram, reuse := 139.28, true
		for _, a := range td.CmdArgs {
			switch a.Key {
			case "vram":
				vram, _ = strconv.ParseFloat(a.Vals[0], 64)
			case "reuse":
				reuse = a.Vals[0] == "on"
			}
		}
		pol := gpu.DefaultPoolPolicy()
		pol.ReuseAcrossStreams = reuse
		k := NewKernel(factsProfile(t), []int64{int64(vram * float64(gib))}, pol, 1)
		d := k.Devices()[0]
		var out strings.Builder
		names := map[string]int64{}
		type line struct {
			at   time.Duration
			text string
		}
		var results []line
		for _, ln := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			f := strings.Fields(ln)
			if len(f) < 3 || f[0] != "at" {
				t.Fatalf("bad line %q", ln)
			}
			at, err := time.ParseDuration(f[1])
			if err != nil {
				t.Fatalf("bad time in %q: %v", ln, err)
			}
			sn, _ := strconv.Atoi(strings.TrimPrefix(f[2], "s"))
			op, args := f[3], f[4:]
			k.At(at, func() {
				o := gpu.Op{Stream: gpu.Stream(sn)}
				name := ""
				gibArg := func(i int) int64 {
					v, _ := strconv.ParseFloat(args[i], 64)
					return int64(v * float64(gib))
				}
				switch op {
				case "compute":
					dur, _ := time.ParseDuration(args[0])
					o.Kind, o.Kernel = gpu.OpCompute, &gpu.Kernel{Partition: "k", Size: int(dur)}
				case "malloc", "malloc_async":
					o.Kind, o.Bytes, name = map[string]gpu.OpKind{"malloc": gpu.OpMalloc, "malloc_async": gpu.OpMallocAsync}[op], gibArg(0), args[1]
				case "host_alloc":
					v, _ := strconv.ParseFloat(args[0], 64)
					o.Kind, o.Bytes, name = gpu.OpHostAlloc, int64(v*(1<<20)), args[1]
				case "free", "free_async", "host_free":
					o.Kind = map[string]gpu.OpKind{"free": gpu.OpFree, "free_async": gpu.OpFreeAsync, "host_free": gpu.OpHostFree}[op]
					o.Buffer = gpu.Buffer(names[args[0]])
				case "trim":
					o.Kind, o.Bytes = gpu.OpTrimPool, gibArg(0)
				case "device_sync":
					o.Kind = gpu.OpDeviceSync
				case "stream_sync":
					o.Kind = gpu.OpStreamSync
				case "mem_info":
					o.Kind = gpu.OpMemInfo
				case "copy":
					o.Kind, o.Bytes = gpu.OpCopyIn, gibArg(0)
				case "record":
					o.Kind, name = gpu.OpRecordEvent, args[0]
				case "event_sync":
					o.Kind, o.Event = gpu.OpEventSync, gpu.Event(names[args[0]])
				default:
					t.Fatalf("unknown op %q", op)
				}
				start := k.Now()
				d.Submit(o, func(r gpu.Result) {
					s := fmt.Sprintf("s%d %s: called %v, returned %v (after %v)", sn, op, start, k.Now().Round(100*time.Microsecond), (k.Now() - start).Round(100*time.Microsecond))
					if r.Waited {
						s += ", waited for another stream"
					}
					if r.Err != nil {
						s += ", error: " + r.Err.Error()
					}
					if o.Kind == gpu.OpMemInfo {
						s += fmt.Sprintf(", free %.2f GiB", float64(r.Free)/float64(gib))
					}
					if name != "" {
						if o.Kind == gpu.OpRecordEvent {
							names[name] = int64(r.Event)
						} else {
							names[name] = int64(r.Buffer)
						}
					}
					results = append(results, line{k.Now(), s})
				})
			})
		}
		k.RunUntil(time.Hour, func() bool { return false })
		for _, r := range results {
			out.WriteString(r.text + "\n")
		}
		return out.String()
	})
}
