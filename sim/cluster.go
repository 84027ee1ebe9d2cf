package sim

import (
	"container/heap"
	"embed"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/cuzk/cuzk/cluster"
)

//go:embed clusters/*.json
var clusterFS embed.FS

// ClusterScenario is a farm of hosts, each with GPUs, proving jobs as the
// cuzk cluster does (docs/cluster.md): every job is owned by the host that
// accepted it, whose lease table (cluster.Leases, the code the daemons run)
// leases single partitions to hosts; leases live by heartbeats over a
// network with latency, hosts fail at a rate and come back after a repair
// time, and a failed owner resumes its jobs from its store.
//
// One GPU is not simulated op by op here: the host scenario (Host) runs
// once on the actors and the GPU model, and its measured rate (partitions
// per second per device, with its design and workers) is what each of the
// farm's GPUs proves at. That is what lets 100 hosts × 8 GPUs run in
// seconds; the cluster's decisions are the real ones.
type ClusterScenario struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Seed        uint64 `json:"seed"`
	Hosts       int    `json:"hosts"`
	GPUsPerHost int    `json:"gpus_per_host"`
	// Host is the scenario one GPU is measured on (embedded name or path).
	Host string `json:"host"`
	// LatencyMs is the one-way network latency between hosts, JitterMs its
	// uniform spread.
	LatencyMs float64 `json:"latency_ms"`
	JitterMs  float64 `json:"jitter_ms,omitempty"`
	// LeaseTTLMs and HeartbeatMs are the cluster's (default 3000 and a
	// quarter of it); DetectMs is how long the membership provider takes
	// to see a host leave or come back (default 2000).
	LeaseTTLMs  float64 `json:"lease_ttl_ms,omitempty"`
	HeartbeatMs float64 `json:"heartbeat_ms,omitempty"`
	DetectMs    float64 `json:"detect_ms,omitempty"`
	// FailuresPerHostHour is each host's rate of crashes (exponential
	// times between them); a crashed host comes back RepairS later
	// (default 60), empty, and resumes the jobs it owns from its store.
	FailuresPerHostHour float64 `json:"failures_per_host_hour,omitempty"`
	RepairS             float64 `json:"repair_s,omitempty"`
	// Jobs arrive round robin at the hosts: the i-th of a group at
	// SubmitAtMs + i·EveryMs.
	Jobs     []JobConfig `json:"jobs"`
	MaxTimeS float64     `json:"max_time_s,omitempty"`
}

// LoadClusterScenario reads a cluster scenario by embedded name or path.
func LoadClusterScenario(nameOrPath string) (*ClusterScenario, error) {
	data, src, err := readNamed(clusterFS, "clusters", nameOrPath)
	if err != nil {
		return nil, fmt.Errorf("cluster scenario %s: %w", nameOrPath, err)
	}
	var s ClusterScenario
	if err := decodeStrict(data, &s); err != nil {
		return nil, fmt.Errorf("cluster scenario %s: %w", src, err)
	}
	if err := s.defaults(); err != nil {
		return nil, fmt.Errorf("cluster scenario %s: %w", src, err)
	}
	return &s, nil
}

// ClusterScenarioNames lists the embedded cluster scenarios.
func ClusterScenarioNames() []string { return embeddedNames(clusterFS, "clusters") }

func (s *ClusterScenario) defaults() error {
	if s.LeaseTTLMs == 0 {
		s.LeaseTTLMs = 3000
	}
	if s.HeartbeatMs == 0 {
		s.HeartbeatMs = s.LeaseTTLMs / 4
	}
	if s.DetectMs == 0 {
		s.DetectMs = 2000
	}
	if s.RepairS == 0 {
		s.RepairS = 60
	}
	if s.MaxTimeS == 0 {
		s.MaxTimeS = 24 * 3600
	}
	switch {
	case s.Hosts < 1 || s.Hosts > 100000:
		return fmt.Errorf("hosts %d: want 1 to 100000", s.Hosts)
	case s.GPUsPerHost < 1 || s.GPUsPerHost > 1024:
		return fmt.Errorf("gpus_per_host %d: want 1 to 1024", s.GPUsPerHost)
	case s.Host == "":
		return errors.New("no host scenario")
	case s.LatencyMs < 0 || s.JitterMs < 0 || s.FailuresPerHostHour < 0 || s.RepairS < 0:
		return errors.New("negative latency, jitter, failure rate or repair time")
	case s.HeartbeatMs <= 0 || s.HeartbeatMs >= s.LeaseTTLMs:
		return fmt.Errorf("heartbeat %g ms: want more than 0 and less than the lease TTL %g ms", s.HeartbeatMs, s.LeaseTTLMs)
	case len(s.Jobs) == 0:
		return errors.New("no jobs")
	}
	for _, j := range s.Jobs {
		if j.Partitions < 1 || j.Count < 0 || j.EveryMs < 0 || j.SubmitAtMs < 0 {
			return fmt.Errorf("job group %q: want at least one partition and no negative count or time", j.ID)
		}
	}
	return nil
}

// ClusterReport is what a cluster run measured.
type ClusterReport struct {
	Scenario   string  `json:"scenario"`
	Seed       uint64  `json:"seed"`
	Hosts      int     `json:"hosts"`
	GPUs       int     `json:"gpus"`
	GPURate    float64 `json:"gpu_partitions_per_s"` // measured on the host scenario
	Complete   bool    `json:"complete"`
	SimulatedS float64 `json:"simulated_s"`
	Jobs       int     `json:"jobs"`
	Proved     int     `json:"partitions_proved"`
	Throughput float64 `json:"partitions_per_s"`
	// JobP50S and JobP99S are the times from a job's arrival to its last
	// proof: a job whose owner is down waits for it to come back.
	JobP50S    float64 `json:"job_p50_s"`
	JobP99S    float64 `json:"job_p99_s"`
	IdealPerS  float64 `json:"ideal_partitions_per_s"` // every GPU at its rate, no failure
	Failures   int     `json:"host_failures"`
	Leases     int     `json:"leases"`
	Expired    int     `json:"leases_expired"`
	Dropped    int     `json:"results_dropped"` // late or duplicate proofs, never recorded
	LostGPUS   float64 `json:"lost_gpu_s"`      // GPU time spent on work never recorded
	LostPct    float64 `json:"lost_pct"`        // of all GPU time spent
	Duplicates int     `json:"duplicate_proofs"`
	Events     int64   `json:"events"`
}

// WriteText prints the report.
func (r *ClusterReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, `cluster %s (seed %d): %d hosts, %d GPUs at %.3g partitions/s each (measured on the host scenario)
  %d jobs, %d partitions proved in %.1f s simulated: %.1f partitions/s (%.1f ideal), complete %v
  a job's time from arrival to its last proof: p50 %.1f s, p99 %.1f s
  host failures %d; leases %d, expired %d; results dropped %d; duplicate proofs %d
  lost work %.1f GPU-s (%.2f %% of GPU time); %d events
`, r.Scenario, r.Seed, r.Hosts, r.GPUs, r.GPURate, r.Jobs, r.Proved, r.SimulatedS, r.Throughput, r.IdealPerS, r.Complete, r.JobP50S, r.JobP99S,
		r.Failures, r.Leases, r.Expired, r.Dropped, r.Duplicates, r.LostGPUS, r.LostPct, r.Events)
	return err
}

// MeasureGPURate runs host scenario name on the actors and returns the
// partitions per second one of its devices proved.
func MeasureGPURate(name string) (rate float64, workers int, err error) {
	hs, err := LoadScenario(name)
	if err != nil {
		return 0, 0, err
	}
	res, err := Run(hs, Options{})
	if err != nil {
		return 0, 0, fmt.Errorf("host scenario %s: %w", name, err)
	}
	r := res.Report
	if r.Throughput <= 0 || r.Devices < 1 {
		return 0, 0, fmt.Errorf("host scenario %s proved nothing", name)
	}
	return r.Throughput / float64(r.Devices), r.WorkersPerDevice, nil
}

// RunCluster simulates s, each GPU proving at rate partitions per second
// with workers partitions in flight (MeasureGPURate), with seed (0: the
// scenario's).
func RunCluster(s *ClusterScenario, rate float64, workers int, seed uint64) (*ClusterReport, error) {
	if rate <= 0 || workers < 1 {
		return nil, fmt.Errorf("cluster %s: GPU rate %g with %d workers", s.Name, rate, workers)
	}
	if seed == 0 {
		seed = s.Seed
	}
	c := newClusterSim(s, rate, workers, seed)
	c.run()
	return c.report(), nil
}

// The simulation's events.
const (
	evSubmit        = iota
	evTick          // an owner's heartbeat tick: leases of live hosts extended, the rest expire
	evLeaseArrives  // a lease reaches its member
	evServiceDone   // a GPU worker finished a partition
	evResultArrives // a proof reaches its owner
	evHostFail      // a host crashes
	evHostBack      // a host restarts
	evDetect        // the provider tells the owners a host left or came back
)

type cev struct {
	at   time.Duration
	seq  uint64
	kind int
	host int
	inc  int // the host's incarnation the event belongs to
	job  int
	part int
	work *gpuWork
	up   bool
}

type cevHeap []*cev

func (h cevHeap) Len() int { return len(h) }
func (h cevHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h cevHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cevHeap) Push(x any)   { *h = append(*h, x.(*cev)) }
func (h *cevHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// gpuWork is one leased partition on a host.
type gpuWork struct {
	lease   cluster.Lease
	owner   int
	started time.Duration
	busy    time.Duration // service time
}

type simHost struct {
	up      bool
	inc     int
	queue   []*gpuWork // leases waiting for a worker
	free    int        // workers idle over all its GPUs
	holding map[string]*gpuWork
	owner   *cluster.Leases // the lease table of the jobs it owns (nil while down)
}

type simJob struct {
	submitted bool
	arrived   time.Duration
	owner     int
	n         int
	proved    map[int]bool
	placed    map[int]cluster.Lease // the owner's store: each partition's last lease
}

type clusterSim struct {
	s       *ClusterScenario
	rate    float64
	workers int
	rnd     *rand.Rand
	now     time.Duration
	seq     uint64
	events  cevHeap
	hosts   []*simHost
	jobs    []*simJob
	nEvents int64
	rep     ClusterReport
	gpuBusy time.Duration
	lastEnd time.Duration
	jobTime []time.Duration
}

func newClusterSim(s *ClusterScenario, rate float64, workers int, seed uint64) *clusterSim {
	c := &clusterSim{s: s, rate: rate, workers: workers, rnd: rand.New(rand.NewPCG(seed, 0x636c7573746572))}
	c.rep = ClusterReport{Scenario: s.Name, Seed: seed, Hosts: s.Hosts, GPUs: s.Hosts * s.GPUsPerHost, GPURate: rate}
	for range s.Hosts {
		c.hosts = append(c.hosts, &simHost{})
	}
	return c
}

func (c *clusterSim) at(d time.Duration, e *cev) {
	c.seq++
	e.at, e.seq = c.now+d, c.seq
	heap.Push(&c.events, e)
}

func (c *clusterSim) latency() time.Duration {
	return ms(c.s.LatencyMs + c.s.JitterMs*c.rnd.Float64())
}

func (c *clusterSim) clock() time.Time { return time.Unix(0, 0).Add(c.now) }

func hostName(i int) string { return fmt.Sprintf("h%05d", i) }

func (c *clusterSim) run() {
	for i := range c.hosts {
		c.start(i)
	}
	i := 0
	for _, g := range c.s.Jobs {
		for k := range max(g.Count, 1) {
			c.jobs = append(c.jobs, &simJob{owner: i % c.s.Hosts, n: g.Partitions, proved: map[int]bool{}, placed: map[int]cluster.Lease{}})
			c.at(ms(g.SubmitAtMs+float64(k)*g.EveryMs), &cev{kind: evSubmit, job: len(c.jobs) - 1})
			i++
		}
	}
	if c.s.FailuresPerHostHour > 0 {
		for h := range c.hosts {
			c.scheduleFailure(h)
		}
	}
	limit := time.Duration(c.s.MaxTimeS * float64(time.Second))
	left := 0
	for _, j := range c.jobs {
		left += j.n
	}
	for c.events.Len() > 0 && left > 0 {
		e := heap.Pop(&c.events).(*cev)
		if e.at > limit {
			break
		}
		c.now = e.at
		c.nEvents++
		left -= c.handle(e)
	}
	c.rep.Complete = left == 0
}

// start brings host h up (again): empty GPUs, and its owned jobs resumed
// from its store with the leases it recorded adopted.
func (c *clusterSim) start(h int) {
	host := c.hosts[h]
	host.up, host.inc = true, host.inc+1
	host.queue, host.free, host.holding = nil, c.s.GPUsPerHost*c.workers, map[string]*gpuWork{}
	host.owner = cluster.NewLeases(ms(c.s.LeaseTTLMs), 3, fmt.Sprintf("%s.%d", hostName(h), host.inc))
	for j, job := range c.jobs {
		if job.owner == h && job.submitted {
			c.addJob(j)
		}
	}
	c.at(ms(c.s.HeartbeatMs), &cev{kind: evTick, host: h, inc: host.inc})
	c.at(ms(c.s.DetectMs), &cev{kind: evDetect, host: h, inc: host.inc, up: true})
}

// addJob gives job j to its owner's table: the unproved partitions, the
// recorded leases adopted.
func (c *clusterSim) addJob(j int) {
	job := c.jobs[j]
	owner := c.hosts[job.owner]
	var pending []int
	var adopt []cluster.Lease
	for p := range job.n {
		if job.proved[p] {
			continue
		}
		pending = append(pending, p)
		if a, ok := job.placed[p]; ok {
			adopt = append(adopt, a)
		}
	}
	if pending == nil {
		pending = []int{}
	}
	if err := owner.owner.AddJob(jobName(j), job.n, pending, adopt, c.clock()); err != nil {
		panic(fmt.Sprintf("sim: invariant: %v", err))
	}
	for h, host := range c.hosts {
		if host.up {
			owner.owner.MemberUp(hostName(h), c.s.GPUsPerHost*(c.workers+1))
		}
	}
}

func jobName(j int) string { return fmt.Sprintf("job%06d", j) }

func (c *clusterSim) scheduleFailure(h int) {
	mean := 3600 / c.s.FailuresPerHostHour
	c.at(time.Duration(c.rnd.ExpFloat64()*mean*float64(time.Second)), &cev{kind: evHostFail, host: h})
}

// handle runs one event and returns how many partitions it proved.
func (c *clusterSim) handle(e *cev) int {
	host := c.hosts[e.host]
	switch e.kind {
	case evSubmit:
		job := c.jobs[e.job]
		job.submitted, job.arrived = true, c.now
		if c.hosts[job.owner].up {
			c.addJob(e.job)
			c.assign(job.owner)
		}
	case evTick:
		if !host.up || host.inc != e.inc {
			return 0
		}
		c.heartbeats(e.host)
		c.expire(e.host)
		c.assign(e.host)
		c.at(ms(c.s.HeartbeatMs), &cev{kind: evTick, host: e.host, inc: e.inc})
	case evDetect:
		for o, owner := range c.hosts {
			if !owner.up {
				continue
			}
			if e.up && host.up && host.inc == e.inc {
				owner.owner.MemberUp(hostName(e.host), c.s.GPUsPerHost*(c.workers+1))
			} else if !e.up {
				c.rep.Expired += len(owner.owner.MemberDown(hostName(e.host)))
			}
			c.assign(o)
		}
	case evLeaseArrives:
		if !host.up || host.inc != e.inc {
			return 0 // the lease is lost with the host; it expires at its owner
		}
		host.holding[e.work.lease.ID] = e.work
		host.queue = append(host.queue, e.work)
		c.serve(e.host)
	case evServiceDone:
		if !host.up || host.inc != e.inc {
			return 0
		}
		w := e.work
		delete(host.holding, w.lease.ID)
		host.free++
		c.gpuBusy += w.busy
		c.at(c.latency(), &cev{kind: evResultArrives, host: w.owner, work: w})
		c.serve(e.host)
	case evResultArrives:
		return c.result(e)
	case evHostFail:
		if host.up {
			c.rep.Failures++
			for _, id := range sortedIDs(host.holding) {
				if w := host.holding[id]; w.started >= 0 {
					c.lost(c.now - w.started)
				}
			}
			host.up, host.owner, host.holding, host.queue = false, nil, nil, nil
			c.at(ms(c.s.DetectMs), &cev{kind: evDetect, host: e.host, inc: host.inc, up: false})
			if c.s.RepairS > 0 {
				c.at(time.Duration(c.s.RepairS*float64(time.Second)), &cev{kind: evHostBack, host: e.host})
			}
		}
		c.scheduleFailure(e.host)
	case evHostBack:
		if !host.up {
			c.start(e.host)
		}
	}
	return 0
}

// heartbeats extends, at owner o, the leases its live members hold.
func (c *clusterSim) heartbeats(o int) {
	by := map[string][]string{}
	var members []string
	for _, a := range c.hosts[o].owner.Live() {
		if by[a.Member] == nil {
			members = append(members, a.Member)
		}
		by[a.Member] = append(by[a.Member], a.ID)
	}
	sort.Strings(members)
	for _, m := range members {
		ids := by[m]
		var h int
		fmt.Sscanf(m, "h%d", &h)
		member := c.hosts[h]
		if !member.up {
			continue
		}
		var held []string
		for _, id := range ids {
			if _, ok := member.holding[id]; ok {
				held = append(held, id)
			}
		}
		c.hosts[o].owner.Heartbeat(m, held, c.clock())
	}
}

// assign sends owner o's new leases.
func (c *clusterSim) assign(o int) {
	owner := c.hosts[o]
	if !owner.up {
		return
	}
	for _, a := range owner.owner.Assign(c.clock()) {
		c.rep.Leases++
		var j int
		fmt.Sscanf(a.Job, "job%d", &j)
		c.jobs[j].placed[a.Partition] = a
		var h int
		fmt.Sscanf(a.Member, "h%d", &h)
		w := &gpuWork{lease: a, owner: o, started: -1}
		c.at(c.latency(), &cev{kind: evLeaseArrives, host: h, inc: c.hosts[h].inc, work: w})
	}
}

// serve starts waiting leases on host h's idle workers.
func (c *clusterSim) serve(h int) {
	host := c.hosts[h]
	for host.free > 0 && len(host.queue) > 0 {
		w := host.queue[0]
		host.queue = host.queue[1:]
		host.free--
		// A worker proves one partition in workers/rate seconds: the
		// device's rate with its workers sharing it.
		mean := float64(c.workers) / c.rate
		w.busy = time.Duration(mean * (0.9 + 0.2*c.rnd.Float64()) * float64(time.Second))
		w.started = c.now
		c.at(w.busy, &cev{kind: evServiceDone, host: h, inc: host.inc, work: w})
	}
}

// result takes a proof at its owner, as the cluster actor does.
func (c *clusterSim) result(e *cev) int {
	w := e.work
	owner := c.hosts[w.owner]
	if !owner.up {
		// The member sends it again each heartbeat; the owner down, it is
		// lost here unless the owner is back within the retention (2 min).
		if c.now-w.started-w.busy < 2*time.Minute {
			c.at(ms(c.s.HeartbeatMs)+c.latency(), &cev{kind: evResultArrives, host: w.owner, work: w})
			return 0
		}
		c.lost(w.busy)
		return 0
	}
	var j int
	fmt.Sscanf(w.lease.Job, "job%d", &j)
	job := c.jobs[j]
	if err := owner.owner.Accept(w.lease.ID, w.lease.Job, w.lease.Partition); err != nil {
		c.rep.Dropped++
		c.lost(w.busy)
		return 0
	}
	if job.proved[w.lease.Partition] {
		c.rep.Duplicates++ // the table accepted a proved partition: a bug
	}
	job.proved[w.lease.Partition] = true
	c.rep.Proved++
	c.lastEnd = c.now
	_, done := owner.owner.Proved(w.lease.Job, w.lease.Partition, w.lease.ID)
	if done {
		owner.owner.Remove(w.lease.Job)
		c.rep.Jobs++
		c.jobTime = append(c.jobTime, c.now-job.arrived)
	}
	if err := owner.owner.Check(); err != nil {
		panic(fmt.Sprintf("sim: invariant: %v", err))
	}
	c.assign(w.owner)
	return 1
}

func (c *clusterSim) lost(d time.Duration) {
	c.rep.LostGPUS += d.Seconds()
	c.gpuBusy += d
}

func (c *clusterSim) report() *ClusterReport {
	r := c.rep
	r.SimulatedS = round(c.lastEnd.Seconds(), 3)
	if c.lastEnd > 0 {
		r.Throughput = round(float64(r.Proved)/c.lastEnd.Seconds(), 2)
	}
	r.IdealPerS = round(c.rate*float64(r.GPUs), 2)
	if c.gpuBusy > 0 {
		r.LostPct = round(100*r.LostGPUS/c.gpuBusy.Seconds(), 3)
	}
	r.LostGPUS = round(r.LostGPUS, 2)
	r.Events = c.nEvents
	r.JobP50S, r.JobP99S = pct(c.jobTime, 50)/1000, pct(c.jobTime, 99)/1000
	return &r
}

// expire ends owner o's leases whose heartbeats stopped. As the cluster
// actor does, their members lease nothing more until they answer a hello:
// at once for a host that is up (a round trip), at its return otherwise.
func (c *clusterSim) expire(o int) {
	owner := c.hosts[o].owner
	for _, a := range owner.Expire(c.clock()) {
		c.rep.Expired++
		var h int
		fmt.Sscanf(a.Member, "h%d", &h)
		slots := 0
		if c.hosts[h].up {
			slots = c.s.GPUsPerHost * (c.workers + 1)
		}
		owner.MemberUp(a.Member, slots)
	}
}

// sortedIDs is for deterministic iteration where map order would leak.
func sortedIDs(m map[string]*gpuWork) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
