package runner

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/prover"
)

// JobRequest is one job to prove.
type JobRequest struct {
	ID         string
	Keys       *prover.Keys
	Seed       []byte
	Partitions int
	Pending    []int // nil: all
	Priority   actors.Priority
	Out        string // directory for this job's proofs; empty: Options.OutDir
}

// Options configures a Run.
type Options struct {
	Backend  prover.Backend
	Devices  []gpu.Device
	Config   actors.Config // Observer is added to, not replaced
	OutDir   string
	Sink     Sink
	Observer actors.Observer // progress, metrics, traces; may be nil
	Seed     uint64          // the runtime's random source
}

// PartitionReport is how one partition went.
type PartitionReport struct {
	Index    int                      `json:"index"`
	Device   int                      `json:"device"`
	Worker   int                      `json:"worker"`
	Stages   map[string]time.Duration `json:"-"`
	StagesMS map[string]float64       `json:"stages_ms"`
	Verified bool                     `json:"verified"`
	Attempts int                      `json:"attempts"`
	Error    string                   `json:"error,omitempty"`
	Proof    string                   `json:"proof,omitempty"`
}

// JobReport is how one job went.
type JobReport struct {
	ID         string            `json:"job_id"`
	Partitions []PartitionReport `json:"partitions"`
	Verified   int               `json:"verified"`
	Failed     int               `json:"failed"`
	Wall       time.Duration     `json:"-"`
	WallMS     float64           `json:"wall_ms"`
}

// Run proves jobs through the actors and waits until each is done or failed.
func Run(ctx context.Context, opt Options, jobs []JobRequest) ([]JobReport, error) {
	exec := NewExecutor(opt.Backend, opt.OutDir, opt.Sink)
	col := newCollector(jobs)
	engine, err := startEngine(exec, opt.Devices, opt.Config, col, opt.Observer, opt.Seed)
	if err != nil {
		return nil, err
	}
	defer engine.Stop()
	start := time.Now()
	for _, j := range jobs {
		exec.AddJob(j.ID, j.Keys, j.Seed, j.Out)
		spec := actors.JobSpec{ID: j.ID, Partitions: j.Partitions, Pending: j.Pending,
			Size: j.Keys.Constraints(), VRAM: FootprintFor(opt.Backend, j.Keys), Priority: j.Priority}
		if err := engine.Submit(spec); err != nil {
			return nil, fmt.Errorf("submit job %s: %w", j.ID, err)
		}
	}
	select {
	case <-col.allDone:
	case <-ctx.Done():
		return col.reports(time.Since(start)), ctx.Err()
	}
	return col.reports(time.Since(start)), nil
}

// startEngine starts the actors on devices with the production runtime over
// exec; own sees the events first, then extra (if any).
func startEngine(exec actors.Executor, devices []gpu.Device, cfg actors.Config, own, extra actors.Observer, seed uint64) (*actors.Engine, error) {
	obs := actors.Observers{own}
	if extra != nil {
		obs = append(obs, extra)
	}
	cfg.Observer = obs
	infos := make([]gpu.Info, len(devices))
	for i, d := range devices {
		infos[i] = d.Info()
	}
	return actors.Start(NewRuntime(context.Background(), exec, devices, seed), infos, cfg)
}

// collector turns the actors' events into reports.
type collector struct {
	mu      sync.Mutex
	jobs    map[string]*JobReport
	parts   map[actors.PartitionID]*PartitionReport
	started map[string]time.Time
	ended   map[string]time.Duration
	left    int
	allDone chan struct{}
}

func newCollector(jobs []JobRequest) *collector {
	c := &collector{jobs: map[string]*JobReport{}, parts: map[actors.PartitionID]*PartitionReport{},
		ended: map[string]time.Duration{}, left: len(jobs), allDone: make(chan struct{})}
	for _, j := range jobs {
		c.jobs[j.ID] = &JobReport{ID: j.ID}
	}
	if c.left == 0 {
		close(c.allDone)
	}
	return c
}

func (c *collector) part(p actors.PartitionID) *PartitionReport {
	r, ok := c.parts[p]
	if !ok {
		r = &PartitionReport{Index: p.Partition, Stages: map[string]time.Duration{}}
		c.parts[p] = r
	}
	return r
}

// Observe implements actors.Observer.
func (c *collector) Observe(e actors.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Kind {
	case actors.EvStageStart:
		r := c.part(e.Partition)
		r.Device, r.Worker = e.Device, e.Worker
		if e.Stage == actors.StageSynthesize {
			r.Attempts++
		}
	case actors.EvStageEnd:
		c.part(e.Partition).Stages[e.Stage.String()] = e.Took
	case actors.EvPartitionDone:
		r := c.part(e.Partition)
		r.Verified, r.Error = true, ""
	case actors.EvPartitionFailed:
		r := c.part(e.Partition)
		r.Verified, r.Error = false, e.Err
	case actors.EvJobDone:
		if _, ok := c.ended[e.Partition.Job]; !ok {
			c.ended[e.Partition.Job] = e.At
			c.left--
			if c.left == 0 {
				close(c.allDone)
			}
		}
	}
}

func (c *collector) reports(wall time.Duration) []JobReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []JobReport
	for id, j := range c.jobs {
		j.Partitions = nil
		j.Verified, j.Failed = 0, 0
		for p, r := range c.parts {
			if p.Job != id {
				continue
			}
			r.StagesMS = map[string]float64{}
			for s, d := range r.Stages {
				r.StagesMS[s] = float64(d.Microseconds()) / 1000
			}
			if r.Verified {
				j.Verified++
				r.Proof = ProofFile(p.Partition)
			} else {
				j.Failed++
			}
			j.Partitions = append(j.Partitions, *r)
		}
		sort.Slice(j.Partitions, func(a, b int) bool { return j.Partitions[a].Index < j.Partitions[b].Index })
		j.Wall = wall
		if d, ok := c.ended[id]; ok {
			j.Wall = d
		}
		j.WallMS = float64(j.Wall.Microseconds()) / 1000
		out = append(out, *j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}
