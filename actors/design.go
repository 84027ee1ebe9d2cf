package actors

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cuzk/cuzk/gpu"
)

// protocol is a lock design as one worker follows it for one partition: the
// device part, from the stage stage to the end of compute. A worker creates a
// fresh protocol per attempt and feeds it the three things that can happen to
// it: it starts, a lease it asked for is granted, and a device op it started
// completes. The protocol acts only through the worker (acquire, release,
// submit, stage events, finish), so that the worker can always clean up after
// it: every lease and buffer the protocol holds is tracked by the worker.
type protocol interface {
	start(w *worker)
	granted(w *worker, lock string)
	done(w *worker, op gpu.Op, r gpu.Result)
}

// design describes a lock design: the locks each device needs and how a
// worker walks a partition through them.
type design struct {
	name string
	// locks are the mutexes the device spawns; "budget" is served by the
	// device actor itself from its VRAM ledger.
	locks []string
	// compute and staging name the lease held while kernels run and the
	// one taken to stage a partition's inputs ("" when the compute lease
	// covers staging too).
	compute, staging string
	new              func() protocol
}

var designs = map[string]design{
	"single":        {name: "single", locks: []string{"gpu"}, compute: "gpu", new: func() protocol { return &singleProto{} }},
	"split-first":   {name: "split-first", locks: []string{"mem", "compute"}, compute: "compute", staging: "mem", new: func() protocol { return &splitProto{v: splitFirst} }},
	"split-devsync": {name: "split-devsync", locks: []string{"mem", "compute"}, compute: "compute", staging: "mem", new: func() protocol { return &splitProto{v: splitDevsync} }},
	"split":         {name: "split", locks: []string{"mem", "compute"}, compute: "compute", staging: "mem", new: func() protocol { return &splitProto{v: splitFinal} }},
	"budget":        {name: "budget", locks: []string{"compute"}, compute: "compute", staging: "budget", new: func() protocol { return &budgetProto{} }},
}

// Locks are the names of every lease a design can take, in the order a
// partition meets them: the mutexes and the budget's VRAM reservations.
var Locks = []string{"gpu", "mem", "budget", "compute"}

// DesignInfo describes a lock design to tools (bench, traces, reports).
type DesignInfo struct {
	Name string
	// Mutexes are the locks each device has for this design.
	Mutexes []string
	// Compute is the lease held while a partition's kernels run; Staging
	// the one taken to stage its inputs, "" when Compute covers staging.
	Compute, Staging string
}

// LookupDesign describes the design named name.
func LookupDesign(name string) (DesignInfo, error) {
	d, err := lookupDesign(name)
	if err != nil {
		return DesignInfo{}, err
	}
	return DesignInfo{Name: d.name, Mutexes: slices.Clone(d.locks), Compute: d.compute, Staging: d.staging}, nil
}

func lookupDesign(name string) (design, error) {
	d, ok := designs[name]
	if !ok {
		return design{}, fmt.Errorf("unknown design %q", name)
	}
	return d, nil
}

// isOOM reports whether err is a device out-of-memory.
func isOOM(err error) bool { return errors.Is(err, gpu.ErrOutOfMemory) }

// opErr wraps a failed device op with the partition and step.
func opErr(w *worker, op gpu.Op, err error) error {
	return fmt.Errorf("%s: %s on device %d: %w", w.cur.p, op.Kind, w.device, err)
}
