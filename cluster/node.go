package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/labstack/echo"
	"google.golang.org/grpc"

	"github.com/cuzk/cuzk/actors"
	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/runner"
	"github.com/cuzk/cuzk/store"
)

// maxMessage is the largest gRPC message a member's remote takes: a batch of
// the actor messages sent to it, among them leases that carry a witness of up
// to runner.MaxLeasedWitness (gRPC's default is 4 MiB).
const maxMessage = 1 << 30

// actorName is the name of every member's cluster actor: a member at
// address A is reached at PID{Address: A, Id: actorName}.
const actorName = "cuzk-cluster"

// Node is one member of a cluster: the owner of the jobs its service
// accepts, and a prover of partitions any owner leases to it. It implements
// runner.Distributor. Make it with New, give it to the service
// (runner.ServiceOptions.Cluster), then Start it with the service.
type Node struct {
	opt   Options
	epoch string

	system *actor.ActorSystem
	cl     *pcluster.Cluster
	pid    *actor.PID
	health *echo.Echo
	node   atomic.Pointer[automanaged.NodeModel]
	stop   chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	started bool
	closed  bool
	began   time.Time // the trace's zero
	// spans are the stages of the lease jobs this member runs, from the
	// actors' events, until their results take them.
	spans map[string][]*cuzkv1.ClusterSpan
	// excluded is closed, with why set, when the cluster no longer takes
	// this member (see nodeState.liveness).
	excluded chan struct{}
	why      error
	// probed holds the addresses where members left, which this member
	// asks for a hello now and then (exclusion.go): protoactor's failed
	// connects to them are expected, and not logged (log.go).
	probed sync.Map
}

// New checks opt and returns a node that has not joined yet.
func New(opt Options) (*Node, error) {
	opt = opt.withDefaults()
	if err := opt.check(); err != nil {
		return nil, err
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("cluster: epoch: %w", err)
	}
	return &Node{opt: opt, epoch: hex.EncodeToString(b[:]), stop: make(chan struct{}), began: time.Now(),
		spans: map[string][]*cuzkv1.ClusterSpan{}, excluded: make(chan struct{})}, nil
}

// SetTrace makes t the trace of this member's jobs (Options.Trace); call it
// before Start.
func (n *Node) SetTrace(t Tracer) { n.opt.Trace = t }

// Address is this member's address (host:port of its actor system), once
// started.
func (n *Node) Address() string {
	if n.system == nil {
		return ""
	}
	return n.system.Address()
}

// Start joins the cluster with svc, the service over this member's devices
// (whose options name this node as its Cluster) and st, its store. Leases
// left unfinished in st by an earlier run of this member are cancelled
// first: their owners lease those partitions again.
func (n *Node) Start(svc *runner.Service, st *store.Store) (err error) {
	n.mu.Lock()
	if n.started {
		n.mu.Unlock()
		return errors.New("cluster: node started already")
	}
	n.started = true
	n.mu.Unlock()
	if err := cancelStaleLeases(svc, st); err != nil {
		return err
	}
	host, port, _ := splitHostPort(n.opt.Listen)
	n.system = actor.NewActorSystem(actor.WithLoggerFactory(func(system *actor.ActorSystem) *slog.Logger {
		return protoactorLogger(system, &n.probed)
	}))
	provider, err := n.provider()
	if err != nil {
		return err
	}
	cfg := pcluster.Configure(n.opt.Name, provider, disthash.New(),
		remote.Configure(host, port, remote.WithServerOptions(grpc.MaxRecvMsgSize(maxMessage))),
		pcluster.WithRequestTimeout(n.opt.LeaseTTL))
	n.cl = pcluster.New(n.system, cfg)
	m, err := newNodeMetrics(n.opt.Registry)
	if err != nil {
		return fmt.Errorf("cluster: metrics: %w", err)
	}
	state := newNodeState(n, svc, st, m)
	props := actor.PropsFromProducer(func() actor.Actor { return state })
	// protoactor panics where it meets an error while joining (a port in
	// use): turned into an error here.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cluster: join %s as %s: %v", n.opt.Name, n.opt.Listen, r)
		}
	}()
	// The provider publishes the first topology while the member starts,
	// before the actor (whose address is the remote's) can be spawned:
	// the forwarder holds it until then.
	fwd := &topologyForwarder{root: n.system.Root}
	n.system.EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*pcluster.ClusterTopology); ok {
			fwd.forward(t)
		}
	})
	n.cl.StartMember()
	pid, err := n.system.Root.SpawnNamed(props, actorName)
	if err != nil {
		n.cl.Shutdown(false)
		return fmt.Errorf("cluster: start the cluster actor: %w", err)
	}
	n.pid = pid
	fwd.attach(pid)
	h, p, _ := n.system.GetHostPort()
	_, hp, _ := splitHostPort(n.opt.Health)
	n.node.Store(automanaged.NewNode(n.opt.Name, n.system.ID, h, p, hp, nil))
	n.wg.Add(1)
	go n.tick()
	slog.Info("joined the cluster", "cluster", n.opt.Name, "member", n.system.Address(), "provider", n.opt.Provider, "slots", n.opt.Slots)
	return nil
}

// provider makes the membership provider of the options.
func (n *Node) provider() (pcluster.ClusterProvider, error) {
	switch n.opt.Provider {
	case ProviderStatic:
		return n.staticProvider()
	case ProviderEtcd:
		return etcdProvider(n.opt)
	}
	return nil, fmt.Errorf("cluster: provider %q", n.opt.Provider)
}

// staticProvider is protoactor's automanaged provider, given its health
// server already listening on Health: the provider's own would listen on
// every interface at that port.
func (n *Node) staticProvider() (pcluster.ClusterProvider, error) {
	_, port, _ := splitHostPort(n.opt.Health)
	ln, err := net.Listen("tcp", n.opt.Health)
	if err != nil {
		return nil, fmt.Errorf("cluster: health address: %w", err)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Listener = ln
	e.GET("/_health", func(c echo.Context) error {
		node := n.node.Load()
		if node == nil {
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"error": "joining"})
		}
		return c.JSON(http.StatusOK, node)
	})
	n.health = e
	return automanaged.NewWithTesting(n.opt.Heartbeat, port, e, n.opt.Peers...), nil
}

// tick drives the cluster actor's timers: heartbeats, lease expiry,
// result resends.
func (n *Node) tick() {
	defer n.wg.Done()
	t := time.NewTicker(n.opt.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			n.system.Root.Send(n.pid, tickMsg{})
		}
	}
}

// Distribute implements runner.Distributor.
func (n *Node) Distribute(sub runner.Submission) error {
	return n.ask(distributeMsg{sub: sub})
}

// Cancel implements runner.Distributor.
func (n *Node) Cancel(id string) error {
	return n.ask(cancelMsg{id: id})
}

// Status returns what the node knows of the cluster, for logs and tests.
func (n *Node) Status() (Status, error) {
	if n.pid == nil {
		return Status{}, errors.New("cluster: node not started")
	}
	r, err := n.system.Root.RequestFuture(n.pid, statusMsg{}, 5*time.Second).Result()
	if err != nil {
		return Status{}, fmt.Errorf("cluster: status: %w", err)
	}
	return r.(Status), nil
}

// ask sends a local message to the cluster actor and waits for its error.
func (n *Node) ask(msg any) error {
	if n.pid == nil {
		return errors.New("cluster: node not started")
	}
	r, err := n.system.Root.RequestFuture(n.pid, msg, 30*time.Second).Result()
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if e, ok := r.(error); ok {
		return e
	}
	return nil
}

// Close leaves the cluster. Leases this member runs are abandoned (their
// owners lease them again when they expire); jobs it owns stay in its store
// for the next start.
func (n *Node) Close() {
	n.mu.Lock()
	if n.closed || n.cl == nil {
		n.closed = true
		n.mu.Unlock()
		return
	}
	n.closed = true
	n.mu.Unlock()
	close(n.stop)
	n.wg.Wait()
	n.cl.Shutdown(false)
	if n.health != nil {
		n.health.Close()
	}
}

// topologyForwarder sends topology events to the cluster actor, keeping
// those published before it exists.
type topologyForwarder struct {
	root *actor.RootContext
	mu   sync.Mutex
	pid  *actor.PID
	held []*pcluster.ClusterTopology
}

func (f *topologyForwarder) forward(t *pcluster.ClusterTopology) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pid == nil {
		f.held = append(f.held, t)
		return
	}
	f.root.Send(f.pid, t)
}

func (f *topologyForwarder) attach(pid *actor.PID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pid = pid
	for _, t := range f.held {
		f.root.Send(pid, t)
	}
	f.held = nil
}

// Observe implements actors.Observer: the daemon gives the node its
// actors' events, from which the stages of the leases it runs are kept
// (with their wall-clock start) for the results that go to their owners.
func (n *Node) Observe(e actors.Event) {
	if e.Kind != actors.EvStageEnd || e.Err != "" || !strings.HasPrefix(e.Partition.Job, leaseJobPrefix) {
		return
	}
	// The event comes as the stage ends: it began Took before now.
	start := time.Now().Add(-e.Took)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.spans[e.Partition.Job] = append(n.spans[e.Partition.Job], &cuzkv1.ClusterSpan{Stage: e.Stage.String(),
		StartUnixNs: start.UnixNano(), TookNs: int64(e.Took), Device: int32(e.Device), Worker: int32(e.Worker)})
}

// takeSpans returns and forgets the spans of lease job id.
func (n *Node) takeSpans(id string) []*cuzkv1.ClusterSpan {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.spans[id]
	delete(n.spans, id)
	return out
}

// Excluded is closed when the cluster no longer takes this member (it was
// cut off long enough to be seen leaving); Err then says why. The daemon
// exits: started again, it joins as a new member.
func (n *Node) Excluded() <-chan struct{} { return n.excluded }

// Err is why the node was excluded, or nil.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.why
}

func (n *Node) exclude(err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.why != nil {
		return
	}
	n.why = err
	slog.Error("cluster: excluded", "err", err)
	close(n.excluded)
}

// ClusterStatus is Status in the API's form (GetStatus).
func (n *Node) ClusterStatus() (*cuzkv1.ClusterStatus, error) {
	st, err := n.Status()
	if err != nil {
		return nil, err
	}
	out := &cuzkv1.ClusterStatus{Name: n.opt.Name, Member: st.Address, LeasesRunning: uint32(len(st.Running) - st.Unacked)}
	by := map[string]*cuzkv1.ClusterMemberStatus{}
	for _, m := range st.Members {
		ms := &cuzkv1.ClusterMemberStatus{Member: m}
		by[m] = ms
		out.Members = append(out.Members, ms)
	}
	jobs := map[string]map[string]bool{}
	for _, a := range st.Live {
		ms := by[a.Member]
		if ms == nil {
			ms = &cuzkv1.ClusterMemberStatus{Member: a.Member}
			by[a.Member] = ms
			out.Members = append(out.Members, ms)
		}
		ms.Leases++
		if jobs[a.Member] == nil {
			jobs[a.Member] = map[string]bool{}
		}
		if !jobs[a.Member][a.Job] {
			jobs[a.Member][a.Job] = true
			ms.Jobs = append(ms.Jobs, a.Job)
		}
	}
	for _, ms := range out.Members {
		sort.Strings(ms.Jobs)
	}
	return out, nil
}
