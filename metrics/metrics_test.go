package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/actors"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestSummaryAndExposition(t *testing.T) {
	m := New()
	p := actors.PartitionID{Job: "j", Partition: 0}
	for _, e := range []actors.Event{
		{Kind: actors.EvQueueDepth, Device: -1, Worker: -1, Count: 3},
		{Kind: actors.EvLeaseGrant, At: ms(10), Device: 0, Worker: 1, Lock: "mem", Took: ms(4), Partition: p},
		{Kind: actors.EvStageStart, At: ms(10), Device: 0, Worker: 1, Stage: actors.StageStage},
		{Kind: actors.EvVRAM, At: ms(11), Device: 0, Worker: 1, Bytes: 12 << 30},
		{Kind: actors.EvOOM, At: ms(11), Device: 0, Worker: 2},
		{Kind: actors.EvFallback, At: ms(11), Device: 0, Worker: 2},
		{Kind: actors.EvStageEnd, At: ms(20), Device: 0, Worker: 1, Stage: actors.StageStage, Took: ms(10)},
		{Kind: actors.EvLeaseRelease, At: ms(20), Device: 0, Worker: 1, Lock: "mem", Took: ms(10)},
		{Kind: actors.EvStageStart, At: ms(20), Device: 0, Worker: 1, Stage: actors.StageCompute},
		{Kind: actors.EvStageEnd, At: ms(70), Device: 0, Worker: 1, Stage: actors.StageCompute, Took: ms(50)},
		{Kind: actors.EvDeviceOp, At: ms(70), Device: 0, Worker: 1, Op: "device_sync", Took: ms(30), Waited: true},
		{Kind: actors.EvVRAM, At: ms(71), Device: 0, Worker: 1, Bytes: 0},
		{Kind: actors.EvPartitionRetry, At: ms(80), Device: 0, Worker: 2},
		{Kind: actors.EvPartitionDone, At: ms(90), Device: 0, Worker: 1},
		{Kind: actors.EvPartitionFailed, At: ms(95), Device: 0, Worker: 2},
		{Kind: actors.EvJobDone, At: ms(100), Device: -1, Worker: -1},
	} {
		m.Observe(e)
	}
	m.SetHeld(0, Held{Keys: 3<<30 - 1<<20, Streamed: 5 << 30, Chunks: 256 << 20, Scratch: 2 << 30, Tables: 64 << 20, Commitments: 1 << 20})
	m.KeysEvicted(0, 1<<30)
	m.SetPinnedHost(768 << 20)
	s := m.Summary()
	if d := s.Devices[0]; d.Keys != 3<<30 || d.Evicted != 1<<30 || d.Streamed != 5<<30 || d.Scratch != 256<<20+2<<30+64<<20 {
		t.Errorf("keys resident %d, evicted %d, streamed %d, scratch+tables %d", d.Keys, d.Evicted, d.Streamed, d.Scratch)
	}
	if s.Done != 1 || s.Failed != 1 || s.Retried != 1 || s.Jobs != 1 || s.MaxQueue != 3 || s.Elapsed != ms(100) {
		t.Errorf("summary %+v", s)
	}
	if len(s.Devices) != 1 || s.Devices[0].Busy != 0.5 || s.Devices[0].VRAMPeak != 12<<30 || s.Devices[0].OOMs != 1 ||
		s.Devices[0].Fallbacks != 1 || s.Devices[0].WaitedOps != 1 {
		t.Errorf("devices %+v", s.Devices)
	}
	if len(s.Locks) != 1 || s.Locks[0].WaitMean != ms(4) || s.Locks[0].HoldMax != ms(10) {
		t.Errorf("locks %+v", s.Locks)
	}
	if len(s.Stages) != 2 || s.Stages[0].Stage != "stage" || s.Stages[1].Mean != ms(50) {
		t.Errorf("stages %+v", s.Stages)
	}
	text := s.String()
	for _, want := range []string{"50.0%", "12.00 GiB", "mem", "compute", "1 failed", "keys resident", "3.00 GiB"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary text lacks %q:\n%s", want, text)
		}
	}

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`cuzk_lease_wait_seconds_count{device="0",lock="mem"} 1`,
		`cuzk_lease_hold_seconds_count{device="0",lock="mem"} 1`,
		`cuzk_stage_seconds_count{stage="compute"} 1`,
		`cuzk_device_busy_ratio{device="0"} 0.5`,
		`cuzk_vram_peak_bytes{device="0"} 1.2884901888e+10`,
		`cuzk_oom_total{device="0"} 1`,
		`cuzk_fallback_total{device="0"} 1`,
		`cuzk_partitions_total{result="retried"} 1`,
		`cuzk_queue_depth 3`,
		`cuzk_keys_resident_bytes{device="0"} 3.221225472e+09`,
		`cuzk_keys_evicted_bytes_total{device="0"} 1.073741824e+09`,
		`cuzk_pinned_host_bytes 8.05306368e+08`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Points streamed from disk are keys streamed in the summary, said to come
// from disk, and kinds of their own on /metrics, with their staging.
func TestHeldFromDisk(t *testing.T) {
	m := New()
	m.Observe(actors.Event{Kind: actors.EvVRAM, At: ms(1), Device: 0, Worker: 0, Bytes: 1 << 30})
	m.SetHeld(0, Held{Disk: 9 << 30, Staging: 2304 << 20, Chunks: 2304 << 20, Scratch: 3 << 30})
	d := m.Summary().Devices[0]
	if d.Streamed != 9<<30 || d.FromDisk != 9<<30 || d.Keys != 0 {
		t.Fatalf("streamed %d, from disk %d, resident %d", d.Streamed, d.FromDisk, d.Keys)
	}
	if text := m.Summary().String(); !strings.Contains(text, "9.00 GiB from disk") {
		t.Errorf("the summary does not say the keys come from disk:\n%s", text)
	}
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`cuzk_device_held_bytes{device="0",kind="disk"} 9.663676416e+09`,
		`cuzk_device_held_bytes{device="0",kind="staging"} 2.415919104e+09`,
		`cuzk_device_held_bytes{device="0",kind="streamed"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestSummaryOfTheHostGate(t *testing.T) {
	m := New()
	p := actors.PartitionID{Job: "j", Partition: 0}
	for _, e := range []actors.Event{
		{Kind: actors.EvHostMem, At: ms(0), Device: -1, Worker: -1, Bytes: 1 << 30, Count: 1},
		{Kind: actors.EvHostMem, At: ms(1), Device: -1, Worker: -1, Bytes: 3 << 30, Count: 3},
		{Kind: actors.EvReadyWait, At: ms(10), Device: 0, Worker: 0, Partition: p, Took: ms(2)},
		{Kind: actors.EvStageStart, At: ms(10), Device: 0, Worker: 0, Stage: actors.StageCompute},
		{Kind: actors.EvStageEnd, At: ms(30), Device: 0, Worker: 0, Stage: actors.StageCompute, Took: ms(20)},
		{Kind: actors.EvReadyWait, At: ms(30), Device: 0, Worker: 0, Partition: p, Took: ms(6)},
		{Kind: actors.EvHostMem, At: ms(40), Device: -1, Worker: -1, Bytes: 0, Count: 0},
	} {
		m.Observe(e)
	}
	s := m.Summary()
	if h := s.Host; h.PeakPartitions != 3 || h.PeakBytes != 3<<30 || h.Ready.Count != 2 || h.Ready.Mean != ms(4) || h.Ready.Max != ms(6) {
		t.Errorf("host %+v", h)
	}
	text := s.String()
	for _, want := range []string{"at most 3 partitions held at once (3.00 GiB)", "4ms mean, 6ms max (2)", "GPU idle 50.0% on device 0"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(New().Summary().String(), "host memory") {
		t.Error("a run without the gate prints a host-memory line")
	}
}
