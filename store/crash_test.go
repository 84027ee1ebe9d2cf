package store

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

var crashSeed = flag.Uint64("crash.seed", 0, "run TestCrash with this seed only (the seed a failure printed)")

// TestCrash runs random operations against a store on a crashable in-memory
// FS and crashes it at many points: between operations, and inside them at a
// file sync, keeping a random part of what was written but not synced. Each
// crash is a clone of the FS at that instant; after the run, every clone is
// opened and must hold every job and partition change acknowledged before
// the crash, and nothing else but possibly the one operation in flight.
//
// The operations and crash decisions come from the seed. Pebble's flushes run
// on goroutines of their own, so a replay of a seed crashes at the same
// operations but a background sync may move a crash a little.
func TestCrash(t *testing.T) {
	// Two fixed seeds, and a new one each run to widen the search.
	seeds := []uint64{1, 2, uint64(time.Now().UnixNano())}
	if *crashSeed != 0 {
		seeds = []uint64{*crashSeed}
	}
	ops := 200
	if testing.Short() {
		ops = 60
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("seed %d (replay: go test ./store -run TestCrash -crash.seed %d)", seed, seed)
			c := newCrasher(t, seed)
			c.run(ops)
			for i, cp := range c.crashes {
				if err := c.verify(cp); err != nil {
					t.Fatalf("seed %d: crash %d of %d (%s): %v\nreplay: go test ./store -run TestCrash -crash.seed %d",
						seed, i+1, len(c.crashes), cp.where, err, seed)
				}
			}
			t.Logf("seed %d: %d operations, %d crashes verified", seed, ops, len(c.crashes))
		})
	}
}

// mPart is what the test knows of a partition.
type mPart struct {
	state         State
	attempts      int
	proof, public []byte
	lastError     string
	timings       map[string]time.Duration
}

func (m mPart) String() string {
	return fmt.Sprintf("{%s attempts=%d proof=%d bytes crc %08x public=%d bytes error=%q timings=%v}",
		m.state, m.attempts, len(m.proof), crc32.ChecksumIEEE(m.proof), len(m.public), m.lastError, m.timings)
}

func (in *inflight) String() string {
	switch {
	case in == nil:
		return "none"
	case in.create != nil:
		return "create " + in.create.ID
	}
	return fmt.Sprintf("%s/%d to %v", in.job, in.idx, in.after)
}

type mJob struct {
	job   Job
	parts []mPart
}

// inflight is the operation running when a crash happens: after a crash its
// effect may or may not be there, but nothing else may be.
type inflight struct {
	create *Job // a CreateJob
	job    string
	idx    int
	after  mPart // the partition if the change was made
}

type crashPoint struct {
	where    string
	fs       *vfs.MemFS
	acked    map[string]*mJob
	inflight *inflight
}

type crasher struct {
	t   *testing.T
	rng *rand.Rand
	mem *vfs.MemFS
	s   *Store

	mu       sync.Mutex // guards what follows; held by the FS hook
	acked    map[string]*mJob
	cur      *inflight
	armed    bool // crash at the next sync
	armedBg  bool // crash at the next sync of a file other than the WAL
	crashRNG *rand.Rand
	crashes  []crashPoint
	opNo     int // written by run under mu, read by step without
	// seen is, per partition, the most progress any verified crash showed:
	// a later crash may never show less.
	seen map[string]mPart
}

func newCrasher(t *testing.T, seed uint64) *crasher {
	c := &crasher{
		t:        t,
		rng:      rand.New(rand.NewPCG(seed, 1)),
		crashRNG: rand.New(rand.NewPCG(seed, 2)),
		mem:      vfs.NewCrashableMem(),
		acked:    map[string]*mJob{},
		seen:     map[string]mPart{},
	}
	fs := errorfs.Wrap(c.mem, errorfs.InjectorFunc(c.atFSOp))
	s, err := Open("/db", c.options(fs))
	if err != nil {
		t.Fatal(err)
	}
	c.s = s
	t.Cleanup(func() { c.s.Close() })
	return c
}

func (c *crasher) options(fs vfs.FS) *Options {
	return &Options{FS: fs, Logger: quietLogger(), pebbleHook: func(o *pebble.Options) {
		// Small memtables, so that the run flushes and compacts and
		// crashes land in the middle of those too.
		o.MemTableSize = 32 << 10
		o.L0CompactionThreshold = 2
	}}
}

// atFSOp is called before every operation on the FS; an armed crasher crashes
// at the next sync, before the data reaches the disk.
func (c *crasher) atFSOp(op errorfs.Op) error {
	switch op.Kind {
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
	default:
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.armed || c.armedBg && !strings.HasSuffix(op.Path, ".log") {
		c.armed, c.armedBg = false, false
		c.crashLocked(fmt.Sprintf("op %d, at a sync of %s", c.opNo, op.Path))
	}
	return nil
}

// crashLocked clones the FS as a crash would leave it: everything synced and
// a random share of the rest (none, some, or all).
func (c *crasher) crashLocked(where string) {
	pct := []int{0, 30, 70, 100}[c.crashRNG.IntN(4)]
	fs := c.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: c.crashRNG})
	acked := make(map[string]*mJob, len(c.acked))
	for id, j := range c.acked {
		acked[id] = &mJob{job: j.job, parts: append([]mPart(nil), j.parts...)}
	}
	var in *inflight
	if c.cur != nil {
		cp := *c.cur
		in = &cp
	}
	c.crashes = append(c.crashes, crashPoint{
		where: fmt.Sprintf("%s, %d%% of unsynced data kept", where, pct), fs: fs, acked: acked, inflight: in,
	})
}

func (c *crasher) run(ops int) {
	for i := range ops {
		c.mu.Lock()
		c.opNo = i
		c.mu.Unlock()
		switch r := c.rng.IntN(100); {
		case r < 6:
			c.mu.Lock()
			c.crashLocked(fmt.Sprintf("between ops %d and %d", c.opNo-1, c.opNo))
			c.mu.Unlock()
		case r < 14:
			c.mu.Lock()
			c.armed = true
			c.mu.Unlock()
		case r < 18:
			// Flushes, compactions and MANIFEST updates sync
			// rarely; this crash waits for one, however many
			// operations later.
			c.mu.Lock()
			c.armedBg = true
			c.mu.Unlock()
		}
		c.step()
		c.mu.Lock()
		c.armed = false // a crash armed for this op and not taken is dropped
		c.mu.Unlock()
	}
	// A background crash not taken by the end is dropped too: a flush after
	// the run must not add a crash point while the test verifies them.
	c.mu.Lock()
	c.armedBg = false
	c.mu.Unlock()
}

func (c *crasher) randBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(c.rng.Uint32())
	}
	return b
}

// step performs one random operation and records it in the model once the
// store acknowledged it.
func (c *crasher) step() {
	t := c.t
	var open []string // jobs with a partition not final, in a stable order
	for i := 0; ; i++ {
		id := fmt.Sprintf("job-%03d", i)
		j, ok := c.acked[id]
		if !ok {
			break
		}
		for _, p := range j.parts {
			if !p.state.Final() {
				open = append(open, id)
				break
			}
		}
	}
	if c.rng.IntN(100) < 4 && c.reopenOne() {
		return
	}
	if len(open) == 0 || c.rng.IntN(100) < 12 {
		j := Job{
			ID:            fmt.Sprintf("job-%03d", len(c.acked)),
			Circuit:       "porep",
			Constraints:   c.rng.Int64N(1 << 28),
			KeyHash:       fmt.Sprintf("%x", c.randBytes(8)),
			NumPartitions: 1 + c.rng.IntN(12),
			Priority:      Priority(c.rng.IntN(4)),
			Created:       time.Unix(1_800_000_000+int64(len(c.acked)), 0).UTC(),
			Seed:          c.randBytes(c.rng.IntN(64)),
			Witness:       c.randBytes(c.rng.IntN(16 << 10)),
			Params:        map[string]string{"n": fmt.Sprint(c.opNo)},
		}
		c.begin(&inflight{create: &j})
		if err := c.s.CreateJob(j); err != nil {
			t.Fatalf("create %s: %v", j.ID, err)
		}
		c.ack(func() {
			c.acked[j.ID] = &mJob{job: j, parts: make([]mPart, j.NumPartitions)}
		})
		return
	}
	id := open[c.rng.IntN(len(open))]
	mj := c.acked[id]
	idx := c.rng.IntN(len(mj.parts))
	p := mj.parts[idx]
	if p.state.Final() {
		// A final partition refuses every change and stays as it is.
		var err error
		want := ErrTransition
		if p.state == Proved {
			want = ErrAlreadyProved
			err = c.s.MarkProved(id, idx, []byte("again"), nil, nil)
		} else {
			_, err = c.s.StartAttempt(id, idx)
		}
		if !errors.Is(err, want) {
			t.Fatalf("change of final %s/%d (%s): got %v, want %v", id, idx, p.state, err, want)
		}
		return
	}
	after := p
	var do func() error
	switch r := c.rng.IntN(100); {
	case r < 35:
		after.attempts++
		do = func() error {
			n, err := c.s.StartAttempt(id, idx)
			if err == nil && n != after.attempts {
				err = fmt.Errorf("attempt %d, want %d", n, after.attempts)
			}
			return err
		}
	case r < 60:
		after.state = Synthesized
		do = func() error { return c.s.MarkSynthesized(id, idx) }
	case r < 92:
		after.state = Proved
		after.proof = c.randBytes(192 + c.rng.IntN(200))
		after.public = c.randBytes(c.rng.IntN(64))
		after.timings = map[string]time.Duration{"compute": time.Duration(c.rng.Int64N(int64(time.Minute)))}
		do = func() error { return c.s.MarkProved(id, idx, after.proof, after.public, after.timings) }
	default:
		after.state = Failed
		after.lastError = fmt.Sprintf("failure at op %d", c.opNo)
		do = func() error { return c.s.MarkFailed(id, idx, after.lastError) }
	}
	c.begin(&inflight{job: id, idx: idx, after: after})
	if err := do(); err != nil {
		t.Fatalf("%s/%d: %v", id, idx, err)
	}
	c.ack(func() { mj.parts[idx] = after })
}

// reopenOne reopens a failed partition of any job (finished or not), if
// there is one, and reports whether it did.
func (c *crasher) reopenOne() bool {
	var ids []string
	for id := range c.acked {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		mj := c.acked[id]
		for idx, p := range mj.parts {
			if p.state != Failed {
				continue
			}
			after := p
			after.state = Pending
			c.begin(&inflight{job: id, idx: idx, after: after})
			if err := c.s.Reopen(id, idx); err != nil {
				c.t.Fatalf("reopen %s/%d: %v", id, idx, err)
			}
			c.ack(func() { mj.parts[idx] = after })
			return true
		}
	}
	return false
}

func (c *crasher) begin(in *inflight) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur = in
}

func (c *crasher) ack(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
	c.cur = nil
}

// verify opens the store a crash left and compares it with what was
// acknowledged before the crash.
func (c *crasher) verify(cp crashPoint) (err error) {
	s, err := Open("/db", c.options(cp.fs))
	if err != nil {
		return fmt.Errorf("reopen after the crash: %w", err)
	}
	defer func() {
		if cerr := s.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()
	sums, err := s.Jobs()
	if err != nil {
		return err
	}
	in := cp.inflight
	unfinished := map[string]bool{}
	partsOf := map[string][]Partition{}
	for _, sum := range sums {
		id := sum.ID
		want, ok := cp.acked[id]
		if !ok {
			if in == nil || in.create == nil || in.create.ID != id {
				return fmt.Errorf("job %s is there but was never created", id)
			}
			want = &mJob{job: *in.create, parts: make([]mPart, in.create.NumPartitions)}
		}
		got, err := s.Job(id)
		if err != nil {
			return err
		}
		if err := sameJob(got, want.job); err != nil {
			return err
		}
		parts, err := s.Partitions(id)
		if err != nil {
			return err
		}
		partsOf[id] = parts
		for i, p := range parts {
			m := mPart{state: p.State, attempts: p.Attempts, proof: p.Proof, public: p.Public,
				lastError: p.LastError, timings: p.Timings}
			ok := samePart(m, want.parts[i])
			if !ok && in != nil && in.create == nil && in.job == id && in.idx == i {
				ok = samePart(m, in.after)
			}
			if !ok {
				return fmt.Errorf("partition %s is %v, want %v (acknowledged) or the operation in flight (%v)",
					p.ID(), m, want.parts[i], in)
			}
			// State never goes backwards from one crash to the next.
			if prev, ok := c.seen[p.ID()]; ok {
				// Only MarkFailed sets an error: a partition that has one and
				// is not failed was reopened since, and may be behind.
				reopened := m.lastError != "" && m.state != Failed && prev.state != Proved
				if m.attempts < prev.attempts || rank(m.state) < rank(prev.state) && !reopened ||
					prev.state == Proved && !bytes.Equal(m.proof, prev.proof) {
					return fmt.Errorf("partition %s went back from %v to %v", p.ID(), prev, m)
				}
			}
			c.seen[p.ID()] = m
			if !p.State.Final() {
				unfinished[id] = true
			}
		}
	}
	for id := range cp.acked {
		if !containsJob(sums, id) {
			return fmt.Errorf("acknowledged job %s is lost", id)
		}
	}
	un, err := s.UnfinishedJobs()
	if err != nil {
		return err
	}
	for _, sum := range un {
		if !unfinished[sum.ID] {
			return fmt.Errorf("index lists job %s as unfinished; its partitions are all final", sum.ID)
		}
		delete(unfinished, sum.ID)
	}
	if len(unfinished) > 0 {
		return fmt.Errorf("index misses unfinished jobs %v", maps.Keys(unfinished))
	}
	// The recovered store goes on working: a pending partition can be
	// proved, and a proved one is still final.
	var provedOne, refusedOne bool
	for _, sum := range sums {
		for _, p := range partsOf[sum.ID] {
			switch {
			case !provedOne && !p.State.Final():
				provedOne = true
				if err := s.MarkProved(sum.ID, p.Index, []byte("after crash"), nil, nil); err != nil {
					return fmt.Errorf("prove after the crash: %w", err)
				}
			case !refusedOne && p.State == Proved:
				refusedOne = true
				if err := s.MarkProved(sum.ID, p.Index, []byte("again"), nil, nil); !errors.Is(err, ErrAlreadyProved) {
					return fmt.Errorf("prove a proved partition after the crash: got %v, want ErrAlreadyProved", err)
				}
			}
		}
	}
	return nil
}

func rank(s State) int {
	if s.Final() {
		return 2
	}
	return int(s)
}

func containsJob(sums []JobSummary, id string) bool {
	for _, s := range sums {
		if s.ID == id {
			return true
		}
	}
	return false
}

func sameJob(got, want Job) error {
	same := got.ID == want.ID && got.Circuit == want.Circuit && got.Constraints == want.Constraints &&
		got.KeyHash == want.KeyHash && got.NumPartitions == want.NumPartitions && got.Priority == want.Priority &&
		got.Created.Equal(want.Created) && bytes.Equal(got.Seed, want.Seed) && bytes.Equal(got.Witness, want.Witness) &&
		maps.Equal(got.Params, want.Params)
	if !same {
		return fmt.Errorf("job %s reads back as %+v, want %+v", want.ID, got, want)
	}
	return nil
}

func samePart(a, b mPart) bool {
	return a.state == b.state && a.attempts == b.attempts && bytes.Equal(a.proof, b.proof) &&
		bytes.Equal(a.public, b.public) && a.lastError == b.lastError && maps.Equal(a.timings, b.timings)
}
