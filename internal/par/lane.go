package par

import (
	"container/heap"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Cores in the order of the partitions that ask for them.
//
// Synthesis runs ahead of the GPU on several partitions at once (eight on a
// 16-core host). When each of them spreads its work over goroutines of its
// own, Go shares the cores among them evenly, so they all finish together:
// at porep-sha 2^22 on the H200 the first of eight prepared partitions came
// after about 200 ms, eight times one partition's time alone, and the GPU
// waited for it. The work is the same whoever goes first; only its order
// matters to the GPU, which needs one partition at a time.
//
// A Lane is one partition's place in a queue for the host's cores: the
// pool's workers (one per core, GOMAXPROCS when first used) run the chunks of
// the lane made earliest first, and a later lane's chunks only on the cores
// the earlier ones leave idle, because they have fewer chunks than there are
// cores (one porep-sha solve at 2^22 is seven challenges wide). The first
// partition is then ready in about its time alone, and the host's throughput
// is what it was: no core idles while any lane has work.
//
// A chunk run on the pool must not wait for the pool (a Range inside a
// Range's function, on a lane): with every worker waiting, nothing would run
// the chunks they wait for. Work nested in a lane's chunk uses Range.

// Lane is a place in the queue for the host's cores: its work runs before
// that of every lane made after it. The nil Lane runs its work on goroutines
// of its own (Range), in no order.
type Lane struct{ rank uint64 }

var tickets atomic.Uint64

// lanesOff reads CUZK_CPU_LANES: "off" makes NewLane return nil, so that
// every partition's work shares the cores evenly as before.
var lanesOff = sync.OnceValue(func() bool {
	return strings.EqualFold(strings.TrimSpace(os.Getenv("CUZK_CPU_LANES")), "off")
})

// NewLane returns a lane behind every lane made before it, or nil when
// CUZK_CPU_LANES=off.
func NewLane() *Lane {
	if lanesOff() {
		return nil
	}
	return &Lane{rank: tickets.Add(1)}
}

// Range is the package's Range run by the pool in l's place: chunks of
// [0, n) of at least minChunk indices, at most perCore per core. It returns
// when every chunk has run; a panic in one is raised again here.
func (l *Lane) Range(n, minChunk, perCore int, f func(lo, hi int)) {
	if l == nil {
		Range(n, minChunk, perCore, f)
		return
	}
	if n <= 0 {
		return
	}
	p := pool()
	chunks := max(1, min(max(perCore, 1)*p.workers, n/max(minChunk, 1)))
	p.run(l, chunks, func(k int) { f(k*n/chunks, (k+1)*n/chunks) })
}

// Do runs the functions at once, in l's place, and returns when all have;
// a panic in one is raised again here.
func (l *Lane) Do(fs ...func()) {
	if l == nil {
		var wg sync.WaitGroup
		for _, f := range fs {
			wg.Go(f)
		}
		wg.Wait()
		return
	}
	pool().run(l, len(fs), func(k int) { fs[k]() })
}

// Yield runs, on the calling goroutine, the chunks queued for lanes made
// before l, until none is left. A long chunk of l's calls it now and then
// (the solver between runs of ops), so that a partition due earlier does not
// wait for chunks of later ones that took every core while it was between
// two batches: at porep-sha 2^22 the first partition's prep took 69 ms
// behind them, against 20 ms alone. It is cheap when there is nothing to
// yield to (one atomic load and runtime.Gosched). The nil Lane yields to
// none.
//
// It also lets the goroutines outside the pool run (runtime.Gosched). The
// pool's workers take every P, and a long chunk is not a scheduling point:
// a goroutine back from a cgo call (a GPU stream's sync), woken by a timer
// or sent a message waits for one to block or for the runtime to preempt
// it, up to 10 ms later. With eight partitions solving beside it, the
// first compute of a lone porep-sha job at 2^22 on the H200 took 64-71 ms
// without this, 49-57 ms with it (49 ms once the solves had ended);
// BenchmarkOutsideWait shows the wait.
func (l *Lane) Yield() {
	if l != nil {
		pool().yield(l)
	}
}

// Before says whether l's work runs before m's: l was made first. The nil
// Lane is before none and after none.
func (l *Lane) Before(m *Lane) bool { return l != nil && m != nil && l.rank < m.rank }

func (p *corePool) yield(l *Lane) {
	for {
		if p.head.Load() < l.rank {
			p.mu.Lock()
			if len(p.queue) > 0 && p.queue[0].rank < l.rank {
				b, k := p.take()
				p.mu.Unlock()
				b.chunk(k)
				continue
			}
			p.mu.Unlock()
		}
		if p.holders.Load() == 0 || l.rank <= p.admitted.Load() || holdOff() {
			runtime.Gosched()
			return
		}
		// Held: wait for the earlier lanes' work to end, or the hold to be
		// lifted, running what they queue meanwhile.
		p.mu.Lock()
		for p.holders.Load() > 0 && l.rank > p.admitted.Load() && (len(p.queue) == 0 || p.queue[0].rank >= l.rank) {
			p.wake.Wait()
		}
		p.mu.Unlock()
	}
}

// Hold: while the GPU has nothing to compute next, the partition due first
// should have the host to itself.
//
// With the lanes a partition due first takes the cores first, but it only
// has as many chunks as it has groups (a porep-sha solve at 2^22: eight of
// 16 cores), and the later partitions' chunks take the rest. They share the
// memory bandwidth and the caches: in one lone 2^22 job on the H200 the
// first partition's solve took 94 ms beside seven others against 50 ms
// alone, its prep 26 ms against 5 and its copy to the GPU 20 ms against 11,
// while the GPU waited for it.
//
// Hold(true) asks for the first partition's sake: from then on a chunk that
// yields (Lane.Yield; the solver's groups do every few thousand ops) waits
// there while two lanes made before its own have work queued or running
// (holdLanes), and runs their work if it is queued. Hold(false) takes the
// request back; the pool holds while any request stands. The runner asks
// while no prepared partition waits for the GPU: at a job's start, and
// whenever the partition computing is the last one ready. CUZK_CPU_HOLD=off
// makes Hold do nothing, to measure against.
func Hold(on bool) { pool().hold(on) }

func (p *corePool) hold(on bool) {
	if on {
		p.holders.Add(1)
		return
	}
	p.holders.Add(-1)
	p.mu.Lock()
	p.wake.Broadcast()
	p.mu.Unlock()
}

// holdLanes is how many lanes with work a hold lets run: the first
// partition's and the next one's. With one, a 10-partition porep-sha job at
// 2^20 on the H200 fell from 83-86 % GPU busy to 69-80 %: its solve alone
// (25-30 ms, one challenge's chain) is longer than its compute (23 ms), so
// the partitions solved one at a time could not keep up with the GPU.
const holdLanes = 2

// holdOff reads CUZK_CPU_HOLD.
var holdOff = sync.OnceValue(func() bool {
	return strings.EqualFold(strings.TrimSpace(os.Getenv("CUZK_CPU_HOLD")), "off")
})

// started counts b's lane among those with work; the caller holds the lock.
func (p *corePool) started(b *batch) {
	if p.active == nil {
		p.active = map[uint64]int{}
	}
	p.active[b.rank]++
	p.admit()
}

// admit sets admitted to the holdLanes-th lowest rank with work, or to
// MaxUint64 when fewer lanes have work; the caller holds the lock.
func (p *corePool) admit() {
	ranks := make([]uint64, 0, len(p.active))
	for r := range p.active {
		ranks = append(ranks, r)
	}
	a := uint64(math.MaxUint64)
	if k := max(p.holdLanes, 1); len(ranks) >= k {
		slices.Sort(ranks)
		a = ranks[k-1]
	}
	p.admitted.Store(a)
}

// ended is started undone, when b's chunks have all run.
func (p *corePool) ended(b *batch) {
	p.mu.Lock()
	if p.active[b.rank]--; p.active[b.rank] == 0 {
		delete(p.active, b.rank)
	}
	p.admit()
	p.wake.Broadcast()
	p.mu.Unlock()
}

// run runs f(0), …, f(n-1) on p's workers in l's place and waits for them.
func (p *corePool) run(l *Lane, n int, f func(k int)) {
	if n <= 0 {
		return
	}
	b := &batch{rank: l.rank, n: n, f: f}
	b.wg.Add(n)
	p.push(b)
	b.wg.Wait()
	p.ended(b)
	if b.panicked != nil {
		panic(fmt.Sprintf("%v [in a chunk run by the core pool]", b.panicked))
	}
}

// batch is one Range or Do of a lane: n chunks, handed out in order.
type batch struct {
	rank uint64
	seq  uint64 // order among batches of the same lane
	n    int
	next int // chunks handed out; under the pool's lock
	f    func(k int)
	wg   sync.WaitGroup

	once     sync.Once
	panicked any
}

// corePool is the workers and the queue of batches, the lowest rank first.
type corePool struct {
	workers int
	mu      sync.Mutex
	wake    *sync.Cond
	queue   batches
	seq     uint64
	// head is the rank of the queue's first batch (MaxUint64: none), for
	// Yield to read without the lock.
	head atomic.Uint64
	// active counts each lane's batches queued or running (under mu);
	// admitted is the highest rank a hold lets run, the holdLanes-th lowest
	// among them (MaxUint64: fewer have work); holders counts the Hold
	// requests standing.
	active    map[uint64]int
	holdLanes int
	admitted  atomic.Uint64
	holders   atomic.Int64
}

// pool is the process's pool, one worker per core.
var pool = sync.OnceValue(func() *corePool { return newCorePool(runtime.GOMAXPROCS(0)) })

func newCorePool(workers int) *corePool {
	p := &corePool{workers: workers, holdLanes: holdLanes}
	p.head.Store(math.MaxUint64)
	p.admitted.Store(math.MaxUint64)
	p.wake = sync.NewCond(&p.mu)
	for range p.workers {
		go p.work()
	}
	return p
}

func (p *corePool) push(b *batch) {
	p.mu.Lock()
	p.seq++
	b.seq = p.seq
	heap.Push(&p.queue, b)
	p.head.Store(p.queue[0].rank)
	p.started(b)
	p.mu.Unlock()
	// Broadcast: a chunk held in Yield waits on the same condition as the
	// idle workers, and a signal could wake it alone.
	p.wake.Broadcast()
}

func (p *corePool) work() {
	for {
		p.mu.Lock()
		for len(p.queue) == 0 {
			p.wake.Wait()
		}
		b, k := p.take()
		p.mu.Unlock()
		b.chunk(k)
	}
}

// take hands out the next chunk of the queue's first batch; the caller
// holds the lock and the queue is not empty.
func (p *corePool) take() (*batch, int) {
	b := p.queue[0]
	k := b.next
	b.next++
	if b.next == b.n {
		heap.Pop(&p.queue)
		if len(p.queue) == 0 {
			p.head.Store(math.MaxUint64)
		} else {
			p.head.Store(p.queue[0].rank)
		}
	}
	return b, k
}

// chunk runs chunk k; a panic is kept for the waiting caller, so that the
// worker lives on and the caller's own recovery (the stage's) sees it.
func (b *batch) chunk(k int) {
	defer b.wg.Done()
	defer func() {
		if v := recover(); v != nil {
			b.once.Do(func() { b.panicked = v })
		}
	}()
	b.f(k)
}

// batches is a heap of batches by rank, then by the order they came in.
type batches []*batch

func (h batches) Len() int { return len(h) }
func (h batches) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].seq < h[j].seq
}
func (h batches) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *batches) Push(x any)   { *h = append(*h, x.(*batch)) }
func (h *batches) Pop() any {
	old := *h
	b := old[len(old)-1]
	*h = old[:len(old)-1]
	return b
}
