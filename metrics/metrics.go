// Package metrics turns the actors' event stream into Prometheus metrics (one
// registry, served at /metrics) and into a Summary that the CLI prints after
// a run.
package metrics

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
)

// Metrics is an actors.Observer. It is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	leaseWait  *prometheus.HistogramVec
	leaseHold  *prometheus.HistogramVec
	stage      *prometheus.HistogramVec
	deviceOp   *prometheus.HistogramVec
	busy       *prometheus.GaugeVec
	vram       *prometheus.GaugeVec
	vramPeak   *prometheus.GaugeVec
	ooms       *prometheus.CounterVec
	fallbacks  *prometheus.CounterVec
	partitions *prometheus.CounterVec
	queue      prometheus.Gauge
	keys       *prometheus.GaugeVec
	held       *prometheus.GaugeVec
	evicted    *prometheus.CounterVec
	pinned     prometheus.Gauge
	hostHeld   prometheus.Gauge
	readyWait  prometheus.Histogram

	mu      sync.Mutex
	last    time.Duration
	locks   map[lockKey]*lockAgg
	stages  map[actors.Stage]*agg
	devices map[int]*deviceAgg
	done    int
	failed  int
	retried int
	jobs    int
	maxQ    int
	host    hostAgg
}

// hostAgg follows the host-memory gate (actors.EvHostMem, EvReadyWait).
type hostAgg struct {
	peak      int64 // most bytes held at once
	peakParts int   // most partitions held at once
	ready     agg   // how long prepared partitions waited for a GPU worker
}

type lockKey struct {
	device int
	lock   string
}

type agg struct {
	n        int
	sum, max time.Duration
}

func (a *agg) add(d time.Duration) {
	a.n++
	a.sum += d
	a.max = max(a.max, d)
}

func (a agg) mean() time.Duration {
	if a.n == 0 {
		return 0
	}
	return a.sum / time.Duration(a.n)
}

type lockAgg struct{ wait, hold agg }

type deviceAgg struct {
	computing  int
	busySince  time.Duration
	busy       time.Duration
	vram, peak int64
	ooms       int
	fallbacks  int
	waitedOps  int
	keys       int64 // proving-key bytes resident
	evicted    int64 // key bytes freed for idleness
	streamed   int64 // key bytes streamed from the host or from disk
	fromDisk   int64 // of them, from disk
	scratch    int64 // device bytes held for MSM scratch and chunk buffers
}

// Buckets for lease and stage times: 100 µs to ~100 s.
var buckets = prometheus.ExponentialBuckets(1e-4, 2.5, 16)

// New returns metrics registered in a fresh registry.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		leaseWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "cuzk", Name: "lease_wait_seconds",
			Help: "Time from asking for a lock to getting it.", Buckets: buckets}, []string{"device", "lock"}),
		leaseHold: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "cuzk", Name: "lease_hold_seconds",
			Help: "Time a lock was held.", Buckets: buckets}, []string{"device", "lock"}),
		stage: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "cuzk", Name: "stage_seconds",
			Help: "Duration of a partition's stage.", Buckets: buckets}, []string{"stage"}),
		deviceOp: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "cuzk", Name: "device_op_seconds",
			Help: "Duration of a device operation, from submission to completion.", Buckets: buckets}, []string{"device", "op"}),
		busy: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "cuzk", Name: "device_busy_ratio",
			Help: "Fraction of the run during which the device computed."}, []string{"device"}),
		vram: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "cuzk", Name: "vram_in_use_bytes",
			Help: "Device memory held by partitions."}, []string{"device"}),
		vramPeak: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "cuzk", Name: "vram_peak_bytes",
			Help: "Largest device memory held by partitions."}, []string{"device"}),
		ooms: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cuzk", Name: "oom_total",
			Help: "Allocations that failed for lack of device memory."}, []string{"device"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cuzk", Name: "fallback_total",
			Help: "Times a design fell back to its slow path."}, []string{"device"}),
		partitions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cuzk", Name: "partitions_total",
			Help: "Partitions by outcome: done, failed (for good), retried (an attempt failed)."}, []string{"result"}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "cuzk", Name: "queue_depth",
			Help: "Partitions waiting for a worker."}),
		keys: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "cuzk", Name: "keys_resident_bytes",
			Help: "Proving-key points and tables kept on the device between partitions."}, []string{"device"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "cuzk", Name: "device_held_bytes",
			Help: "What the backend holds for proving keys, by kind: keys (points on the device), streamed (points on the host), disk (points streamed from the points file, in no memory), staging (host buffers the disk's points are read into), chunks (buffers streamed points pass through), scratch (MSM scratch), tables (NTT), commitments (gnark commitments' Pedersen bases on the device)."}, []string{"device", "kind"}),
		evicted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cuzk", Name: "keys_evicted_bytes_total",
			Help: "Resident key bytes freed because no partition used them for the idle time."}, []string{"device"}),
		pinned: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "cuzk", Name: "pinned_host_bytes",
			Help: "Pinned host memory kept for staging partitions."}),
		hostHeld: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "cuzk", Name: "host_partition_bytes",
			Help: "Host memory held by partitions from their synthesis until they leave the host, as the host-memory gate counts it."}),
		readyWait: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "cuzk", Name: "ready_wait_seconds",
			Help: "Time a prepared partition waited for a GPU worker.", Buckets: buckets}),
		locks:   map[lockKey]*lockAgg{},
		stages:  map[actors.Stage]*agg{},
		devices: map[int]*deviceAgg{},
	}
	m.reg.MustRegister(m.leaseWait, m.leaseHold, m.stage, m.deviceOp, m.busy, m.vram, m.vramPeak, m.ooms,
		m.fallbacks, m.partitions, m.queue, m.keys, m.evicted, m.pinned, m.held, m.hostHeld, m.readyWait)
	return m
}

// Held is what the backend holds for proving keys on a device, by kind
// (prover.Held).
type Held struct {
	Keys     int64 // points on the device
	Streamed int64 // points on the host, streamed
	Disk     int64 // points streamed from the points file
	Staging  int64 // host buffers the disk's points are read into
	Chunks   int64 // device buffers streamed points pass through
	Scratch  int64
	Tables   int64
	// MSMTables are precomputed MSM tables of the resident points beyond
	// the points themselves; the summary counts them with the keys.
	MSMTables int64
	// Commitments are the Pedersen bases of gnark's commitments, which
	// the summary counts with the keys.
	Commitments int64
}

// SetHeld records what the backend holds for proving keys on a device.
func (m *Metrics) SetHeld(device int, h Held) {
	d := strconv.Itoa(device)
	for kind, v := range map[string]int64{"keys": h.Keys, "streamed": h.Streamed, "disk": h.Disk, "staging": h.Staging,
		"chunks": h.Chunks, "scratch": h.Scratch, "tables": h.Tables, "commitments": h.Commitments, "msm_tables": h.MSMTables} {
		m.held.WithLabelValues(d, kind).Set(float64(v))
	}
	m.keys.WithLabelValues(d).Set(float64(h.Keys + h.Commitments + h.MSMTables))
	m.mu.Lock()
	defer m.mu.Unlock()
	dev := m.device(device)
	dev.keys, dev.streamed, dev.fromDisk, dev.scratch = h.Keys+h.Commitments+h.MSMTables, h.Streamed+h.Disk, h.Disk, h.Chunks+h.Scratch+h.Tables
}

// KeysEvicted records resident key bytes freed for idleness on a device.
func (m *Metrics) KeysEvicted(device int, bytes int64) {
	if bytes <= 0 {
		return
	}
	m.evicted.WithLabelValues(strconv.Itoa(device)).Add(float64(bytes))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.device(device).evicted += bytes
}

// SetPinnedHost records the pinned host memory kept for staging.
func (m *Metrics) SetPinnedHost(bytes int64) { m.pinned.Set(float64(bytes)) }

// Registry is the one registry the metrics live in; other packages may
// register theirs in it.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

func (m *Metrics) device(i int) *deviceAgg {
	d, ok := m.devices[i]
	if !ok {
		d = &deviceAgg{}
		m.devices[i] = d
	}
	return d
}

func (m *Metrics) lock(k lockKey) *lockAgg {
	l, ok := m.locks[k]
	if !ok {
		l = &lockAgg{}
		m.locks[k] = l
	}
	return l
}

// Observe records one event.
func (m *Metrics) Observe(e actors.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = max(m.last, e.At)
	dev := strconv.Itoa(e.Device)
	switch e.Kind {
	case actors.EvLeaseGrant:
		m.leaseWait.WithLabelValues(dev, e.Lock).Observe(e.Took.Seconds())
		m.lock(lockKey{e.Device, e.Lock}).wait.add(e.Took)
	case actors.EvLeaseRelease:
		m.leaseHold.WithLabelValues(dev, e.Lock).Observe(e.Took.Seconds())
		m.lock(lockKey{e.Device, e.Lock}).hold.add(e.Took)
	case actors.EvStageStart:
		if e.Stage == actors.StageCompute {
			d := m.device(e.Device)
			if d.computing == 0 {
				d.busySince = e.At
			}
			d.computing++
		}
	case actors.EvStageEnd:
		m.stage.WithLabelValues(e.Stage.String()).Observe(e.Took.Seconds())
		a, ok := m.stages[e.Stage]
		if !ok {
			a = &agg{}
			m.stages[e.Stage] = a
		}
		a.add(e.Took)
		if e.Stage == actors.StageCompute {
			d := m.device(e.Device)
			if d.computing > 0 {
				d.computing--
				if d.computing == 0 {
					d.busy += e.At - d.busySince
				}
			}
		}
	case actors.EvDeviceOp:
		m.deviceOp.WithLabelValues(dev, e.Op).Observe(e.Took.Seconds())
		if e.Waited {
			m.device(e.Device).waitedOps++
		}
	case actors.EvOOM:
		m.ooms.WithLabelValues(dev).Inc()
		m.device(e.Device).ooms++
	case actors.EvFallback:
		m.fallbacks.WithLabelValues(dev).Inc()
		m.device(e.Device).fallbacks++
	case actors.EvVRAM:
		d := m.device(e.Device)
		d.vram = e.Bytes
		d.peak = max(d.peak, e.Bytes)
		m.vram.WithLabelValues(dev).Set(float64(e.Bytes))
		m.vramPeak.WithLabelValues(dev).Set(float64(d.peak))
	case actors.EvPartitionDone:
		m.done++
		m.partitions.WithLabelValues("done").Inc()
	case actors.EvPartitionFailed:
		m.failed++
		m.partitions.WithLabelValues("failed").Inc()
	case actors.EvPartitionRetry:
		m.retried++
		m.partitions.WithLabelValues("retried").Inc()
	case actors.EvJobDone:
		m.jobs++
	case actors.EvQueueDepth:
		m.queue.Set(float64(e.Count))
		m.maxQ = max(m.maxQ, e.Count)
	case actors.EvHostMem:
		m.hostHeld.Set(float64(e.Bytes))
		m.host.peak = max(m.host.peak, e.Bytes)
		m.host.peakParts = max(m.host.peakParts, e.Count)
	case actors.EvReadyWait:
		m.readyWait.Observe(e.Took.Seconds())
		m.host.ready.add(e.Took)
	}
	for i, d := range m.devices {
		if m.last > 0 {
			busy := d.busy
			if d.computing > 0 {
				busy += m.last - d.busySince
			}
			m.busy.WithLabelValues(strconv.Itoa(i)).Set(float64(busy) / float64(m.last))
		}
	}
}

// LockStats summarizes one lock of one device.
type LockStats struct {
	Device            int
	Lock              string
	Grants            int
	WaitMean, WaitMax time.Duration
	HoldMean, HoldMax time.Duration
	HoldTotal         time.Duration
}

// StageStats summarizes one stage over all partitions.
type StageStats struct {
	Stage     string
	Count     int
	Mean, Max time.Duration
}

// DeviceStats summarizes one device.
type DeviceStats struct {
	Device    int
	Busy      float64 // fraction of the run during which it computed
	VRAMPeak  int64   // bytes held by partitions at most
	OOMs      int
	Fallbacks int
	WaitedOps int   // device ops that waited for another stream's work
	Keys      int64 // proving-key bytes resident (GPU backend)
	Evicted   int64 // key bytes freed for idleness
	Streamed  int64 // key bytes streamed to the device, from the host or from disk
	FromDisk  int64 // of them, from disk
	Scratch   int64 // device bytes of MSM scratch, chunk buffers and NTT tables
}

// Summary is what a run did, for people.
type Summary struct {
	Elapsed               time.Duration // time of the last event
	Jobs                  int           // jobs finished
	Done, Failed, Retried int
	MaxQueue              int
	Locks                 []LockStats
	Stages                []StageStats
	Devices               []DeviceStats
	// Host is the host-memory gate's part of the run; zero without the gate.
	Host HostStats
}

// HostStats is what the host-memory gate saw: the most partitions (and
// bytes) held at once, and how long prepared partitions waited for a GPU
// worker.
type HostStats struct {
	PeakPartitions int
	PeakBytes      int64
	Ready          StageStats // Count, Mean and Max of the waits
}

// Summary returns the aggregates so far, in a stable order.
func (m *Metrics) Summary() Summary {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Summary{Elapsed: m.last, Jobs: m.jobs, Done: m.done, Failed: m.failed, Retried: m.retried, MaxQueue: m.maxQ,
		Host: HostStats{PeakPartitions: m.host.peakParts, PeakBytes: m.host.peak,
			Ready: StageStats{Stage: "ready", Count: m.host.ready.n, Mean: m.host.ready.mean(), Max: m.host.ready.max}}}
	for k, l := range m.locks {
		s.Locks = append(s.Locks, LockStats{Device: k.device, Lock: k.lock, Grants: l.wait.n,
			WaitMean: l.wait.mean(), WaitMax: l.wait.max, HoldMean: l.hold.mean(), HoldMax: l.hold.max, HoldTotal: l.hold.sum})
	}
	slices.SortFunc(s.Locks, func(a, b LockStats) int {
		if a.Device != b.Device {
			return a.Device - b.Device
		}
		return strings.Compare(a.Lock, b.Lock)
	})
	for st, a := range m.stages {
		s.Stages = append(s.Stages, StageStats{Stage: st.String(), Count: a.n, Mean: a.mean(), Max: a.max})
	}
	order := func(name string) int {
		for i := actors.StageSynthesize; i <= actors.StageFinalize; i++ {
			if i.String() == name {
				return int(i)
			}
		}
		return 100
	}
	slices.SortFunc(s.Stages, func(a, b StageStats) int { return order(a.Stage) - order(b.Stage) })
	for i, d := range m.devices {
		busy := d.busy
		if d.computing > 0 {
			busy += m.last - d.busySince
		}
		ratio := 0.0
		if m.last > 0 {
			ratio = float64(busy) / float64(m.last)
		}
		s.Devices = append(s.Devices, DeviceStats{Device: i, Busy: ratio, VRAMPeak: d.peak, OOMs: d.ooms,
			Fallbacks: d.fallbacks, WaitedOps: d.waitedOps, Keys: d.keys, Evicted: d.evicted, Streamed: d.streamed, FromDisk: d.fromDisk, Scratch: d.scratch})
	}
	slices.SortFunc(s.Devices, func(a, b DeviceStats) int { return a.Device - b.Device })
	return s
}

// String prints the summary as aligned tables.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "elapsed %v: %d jobs, %d partitions done, %d failed, %d retried; queue at most %d\n",
		s.Elapsed.Round(time.Millisecond), s.Jobs, s.Done, s.Failed, s.Retried, s.MaxQueue)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(s.Devices) > 0 {
		keys := slices.ContainsFunc(s.Devices, func(d DeviceStats) bool { return d.Keys > 0 || d.Evicted > 0 || d.Streamed > 0 })
		fmt.Fprint(tw, "device\tbusy\tstaged peak\tOOMs\tfallbacks\twaited ops\t")
		if keys {
			fmt.Fprint(tw, "keys resident\tkeys streamed\tscratch+tables\tkeys evicted\t")
		}
		fmt.Fprintln(tw)
		for _, d := range s.Devices {
			fmt.Fprintf(tw, "%d\t%.1f%%\t%s\t%d\t%d\t%d\t", d.Device, 100*d.Busy, gpu.FormatBytes(d.VRAMPeak), d.OOMs, d.Fallbacks, d.WaitedOps)
			if keys {
				streamed := gpu.FormatBytes(d.Streamed)
				switch {
				case d.FromDisk > 0 && d.FromDisk == d.Streamed:
					streamed += " from disk"
				case d.FromDisk > 0:
					streamed += fmt.Sprintf(" (%s from disk)", gpu.FormatBytes(d.FromDisk))
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t", gpu.FormatBytes(d.Keys), streamed, gpu.FormatBytes(d.Scratch), gpu.FormatBytes(d.Evicted))
			}
			fmt.Fprintln(tw)
		}
		fmt.Fprintln(tw)
	}
	if len(s.Locks) > 0 {
		fmt.Fprintln(tw, "device\tlock\tgrants\twait mean\twait max\thold mean\thold max\t")
		for _, l := range s.Locks {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%v\t%v\t%v\t%v\t\n", l.Device, l.Lock, l.Grants, round(l.WaitMean), round(l.WaitMax), round(l.HoldMean), round(l.HoldMax))
		}
		fmt.Fprintln(tw)
	}
	if len(s.Stages) > 0 {
		fmt.Fprintln(tw, "stage\tcount\tmean\tmax\t")
		for _, st := range s.Stages {
			fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t\n", st.Stage, st.Count, round(st.Mean), round(st.Max))
		}
	}
	tw.Flush()
	s.writeHost(&b)
	return b.String()
}

// writeHost prints the host-memory gate's line, when the gate was on.
func (s Summary) writeHost(b *strings.Builder) {
	h := s.Host
	if h.PeakPartitions == 0 && h.Ready.Count == 0 {
		return
	}
	idle := make([]string, 0, len(s.Devices))
	for _, d := range s.Devices {
		idle = append(idle, fmt.Sprintf("%.1f%% on device %d", 100*(1-d.Busy), d.Device))
	}
	fmt.Fprintf(b, "host memory: at most %d partitions held at once (%s); ready partitions waited for a GPU worker %v mean, %v max (%d); GPU idle %s\n",
		h.PeakPartitions, gpu.FormatBytes(h.PeakBytes), round(h.Ready.Mean), round(h.Ready.Max), h.Ready.Count, strings.Join(idle, ", "))
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
