package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Report is what a simulation found. Every number comes from the event stream
// or the device models; Seed replays the run.
type Report struct {
	Setup
	ResidentGiB float64 `json:"resident_gib,omitempty"`
	HeadroomGiB float64 `json:"headroom_gib,omitempty"`
	ReuseAcross bool    `json:"pool_reuse_across_streams"`
	Seed        uint64  `json:"seed"`

	Complete   bool    `json:"complete"` // every job finished before max_time_s
	SimulatedS float64 `json:"simulated_s"`
	Partitions int     `json:"partitions_proved"`
	Failed     int     `json:"partitions_failed"`
	Retries    int     `json:"retries"`
	Duplicates int     `json:"duplicate_proofs"` // invariant: 0
	Crashes    int     `json:"process_crashes"`

	// Throughput is partitions proved per second between the first submission
	// and the last proof.
	Throughput      float64 `json:"partitions_per_s"`
	SecondsPerJob10 float64 `json:"s_per_10_partition_job"`
	GPUBusyPct      float64 `json:"gpu_busy_pct"`
	VRAMPeakGiB     float64 `json:"vram_peak_gib"`
	OOMs            int     `json:"ooms"`
	// OOMsFirst are the OOMs of a first attempt to stage (a split design's
	// pre-stage under mem_mtx, any other design's allocation); OOMsFallback
	// those met on a fallback path (under compute_mtx). They add up to OOMs.
	OOMsFirst     int         `json:"ooms_pre_stage"`
	OOMsFallback  int         `json:"ooms_fallback"`
	Fallbacks     int         `json:"fallbacks"`
	DeviceWaits   int         `json:"device_wide_waits"` // syncs/frees that waited for another stream's work
	DeviceWaitedS float64     `json:"device_wide_waited_s"`
	PoolWaits     int         `json:"pool_cross_stream_waits"`
	Locks         []LockStats `json:"locks"`
	Events        int64       `json:"events"`
	// Host is the host-memory gate's part of the run; nil without the gate.
	Host *HostStats `json:"host,omitempty"`
}

// Setup is what a run simulated: the scenario and profile, the lock design
// and its workers per device, the devices and their memory.
type Setup struct {
	Scenario         string  `json:"scenario"`
	Profile          string  `json:"profile"`
	Design           string  `json:"design"`
	WorkersPerDevice int     `json:"workers_per_device"`
	Devices          int     `json:"devices"`
	VRAMGiB          float64 `json:"vram_gib"`
}

// HostStats is what the host-memory gate did: the most partitions (and
// bytes) held at once under its limit, the synthesis slots, how long
// prepared partitions waited for a GPU worker, and how long the GPUs idled.
type HostStats struct {
	LimitGiB       float64 `json:"limit_gib"`
	SynthWorkers   int     `json:"synth_workers"`
	PeakGiB        float64 `json:"peak_gib"`
	PeakPartitions int     `json:"peak_partitions"`
	ReadyWaitP50Ms float64 `json:"ready_wait_p50_ms"`
	ReadyWaitP99Ms float64 `json:"ready_wait_p99_ms"`
	GPUIdlePct     float64 `json:"gpu_idle_pct"`
}

// LockStats summarizes the leases of one lock over all devices.
type LockStats struct {
	Lock      string  `json:"lock"`
	Leases    int     `json:"leases"`
	WaitP50Ms float64 `json:"wait_p50_ms"`
	WaitP99Ms float64 `json:"wait_p99_ms"`
	HoldP50Ms float64 `json:"hold_p50_ms"`
	HoldP99Ms float64 `json:"hold_p99_ms"`
}

func buildReport(r *resolved, k *Kernel, c *collector, j *memJournal, acc deviceTotals, complete bool, crashes int) *Report {
	rep := &Report{
		Setup: Setup{Scenario: r.name, Profile: r.profile.Name, Design: r.cfg.Design, WorkersPerDevice: r.cfg.WorkersPerDevice,
			Devices: r.devices, VRAMGiB: round(float64(r.vram)/float64(gib), 2)},
		ResidentGiB: round(float64(r.mem.Resident)/float64(gib), 2), HeadroomGiB: round(float64(r.mem.Headroom)/float64(gib), 2), ReuseAcross: r.cfg.Pool.ReuseAcrossStreams,
		Seed: r.seed, Complete: complete, SimulatedS: round(k.now.Seconds(), 3),
		Partitions: c.proved, Failed: c.failed, Retries: c.retries, Duplicates: j.duplicates, Crashes: crashes,
		OOMs: c.ooms, OOMsFirst: c.ooms - c.fallbackOOMs, OOMsFallback: c.fallbackOOMs, Fallbacks: c.fallbacks, DeviceWaits: acc.deviceWaits, DeviceWaitedS: round(acc.deviceWaited.Seconds(), 3),
		PoolWaits: acc.poolWaits, VRAMPeakGiB: round(float64(acc.peak)/float64(gib), 2), Events: k.events,
	}
	span := c.lastDone - max(c.firstSubmit, 0)
	if c.proved > 0 && span > 0 {
		rep.Throughput = round(float64(c.proved)/span.Seconds(), 4)
		rep.SecondsPerJob10 = round(10*span.Seconds()/float64(c.proved), 2)
		rep.GPUBusyPct = round(100*c.busyAtDone.Seconds()/(span.Seconds()*float64(r.devices)), 1)
	}
	if r.cfg.HostMemLimit > 0 {
		slots := r.cfg.SynthWorkers
		if slots == 0 {
			slots = r.cfg.WorkersPerDevice * r.devices
		}
		rep.Host = &HostStats{LimitGiB: round(float64(r.cfg.HostMemLimit)/float64(gib), 2), SynthWorkers: slots,
			PeakGiB: round(float64(c.hostPeak)/float64(gib), 2), PeakPartitions: c.heldPeak,
			ReadyWaitP50Ms: pct(c.readyWaits, 50), ReadyWaitP99Ms: pct(c.readyWaits, 99), GPUIdlePct: round(100-rep.GPUBusyPct, 1)}
	}
	for _, name := range c.lockOrder {
		w, h := c.leaseWait[name], c.leaseHold[name]
		rep.Locks = append(rep.Locks, LockStats{Lock: name, Leases: len(w),
			WaitP50Ms: pct(w, 50), WaitP99Ms: pct(w, 99), HoldP50Ms: pct(h, 50), HoldP99Ms: pct(h, 99)})
	}
	return rep
}

// pct is the nearest-rank percentile, in milliseconds.
func pct(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s) + 99) / 100
	i = min(max(i, 1), len(s))
	return round(float64(s[i-1])/float64(time.Millisecond), 1)
}

// Round is v rounded to places decimal places, halves away from zero: the
// figures of reports, profiles and scenarios.
func Round(v float64, places int) float64 { return round(v, places) }

func round(v float64, places int) float64 {
	p := 1.0
	for range places {
		p *= 10
	}
	if v < 0 {
		return -float64(int64(-v*p+0.5)) / p
	}
	return float64(int64(v*p+0.5)) / p
}

// WriteText prints the report for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario    %s: design %s, %d worker(s)/device, %d device(s) of %.0f GiB, profile %s\n",
		r.Scenario, r.Design, r.WorkersPerDevice, r.Devices, r.VRAMGiB, r.Profile)
	status := "complete"
	if !r.Complete {
		status = "INCOMPLETE (max_time_s reached)"
	}
	fmt.Fprintf(&b, "run         %d partitions proved, %d failed, %d retries in %.1f s simulated (%s)\n",
		r.Partitions, r.Failed, r.Retries, r.SimulatedS, status)
	fmt.Fprintf(&b, "throughput  %.3f partitions/s   %.1f s per 10-partition job\n", r.Throughput, r.SecondsPerJob10)
	fmt.Fprintf(&b, "GPU busy    %.1f %%\n", r.GPUBusyPct)
	fmt.Fprintf(&b, "VRAM peak   %.2f GiB of %.2f GiB\n", r.VRAMPeakGiB, r.VRAMGiB)
	fmt.Fprintf(&b, "OOM         %d (%d pre-stage, %d in a fallback)   fallbacks %d\n", r.OOMs, r.OOMsFirst, r.OOMsFallback, r.Fallbacks)
	fmt.Fprintf(&b, "waits       %d device-wide waits (%.1f s), %d pool cross-stream waits\n", r.DeviceWaits, r.DeviceWaitedS, r.PoolWaits)
	if h := r.Host; h != nil {
		fmt.Fprintf(&b, "host mem    %d synthesis slots, at most %d partitions held (%.2f GiB of %.2f GiB); ready wait p50 %.1f ms p99 %.1f ms; GPU idle %.1f %%\n",
			h.SynthWorkers, h.PeakPartitions, h.PeakGiB, h.LimitGiB, h.ReadyWaitP50Ms, h.ReadyWaitP99Ms, h.GPUIdlePct)
	}
	if r.Crashes > 0 || r.Duplicates > 0 {
		fmt.Fprintf(&b, "crashes     %d process crash(es), %d partitions proved twice\n", r.Crashes, r.Duplicates)
	}
	if len(r.Locks) > 0 {
		fmt.Fprintf(&b, "%-11s %8s %12s %12s %12s %12s\n", "lock", "leases", "wait p50 ms", "wait p99 ms", "hold p50 ms", "hold p99 ms")
		for _, l := range r.Locks {
			fmt.Fprintf(&b, "%-11s %8d %12.1f %12.1f %12.1f %12.1f\n", l.Lock, l.Leases, l.WaitP50Ms, l.WaitP99Ms, l.HoldP50Ms, l.HoldP99Ms)
		}
	}
	fmt.Fprintf(&b, "seed        %d\n", r.Seed)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
