package facts

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cuzk/cuzk/gpu"
)

// RunWallClock replays p on dev in real time: each call is made at its
// script time from one goroutine, and returns whenever the device says. It
// measures free memory relative to what dev reports before the script starts,
// so a real card (whose free memory is not p.VRAM) prints what the probe's
// card would. scratch is the buffer copies go into before the script has
// allocated one (see Probe.ScratchBytes). It fails if a call has not returned
// within limit after the last one was made.
func RunWallClock(dev gpu.Device, p Probe, k Kernels, scratch gpu.Buffer, limit time.Duration) ([]Line, error) {
	base := make(chan gpu.Result, 1)
	dev.Submit(gpu.Op{Kind: gpu.OpMemInfo}, func(r gpu.Result) { base <- r })
	b := <-base
	if b.Err != nil {
		return nil, fmt.Errorf("free memory before the script: %w", b.Err)
	}
	var (
		mu     sync.Mutex
		lines  []Line
		wg     sync.WaitGroup
		script = NewScript(k, scratch)
	)
	// Each stream of a probe is one host thread. A call that makes
	// something (an allocation, an event) returns it to that thread before
	// its next call, which may name it: the next call waits for it when it
	// is late (on a loaded machine), instead of naming what is not made yet.
	last := map[gpu.Stream]chan struct{}{}
	start := time.Now()
	for _, st := range p.Steps {
		if d := time.Until(start.Add(st.At)); d > 0 {
			time.Sleep(d)
		}
		if prev := last[st.Stream]; prev != nil {
			select {
			case <-prev:
			case <-time.After(limit):
				return nil, fmt.Errorf("%q: the stream's last call did not return within %v", st.Line, limit)
			}
		}
		mu.Lock()
		o, name, err := script.Op(st)
		mu.Unlock()
		if err != nil {
			return nil, err
		}
		called := time.Since(start)
		returnedCh := make(chan struct{})
		switch o.Kind {
		case gpu.OpMalloc, gpu.OpMallocAsync, gpu.OpHostAlloc, gpu.OpRecordEvent:
			last[st.Stream] = returnedCh
		default:
			delete(last, st.Stream)
		}
		wg.Add(1)
		dev.Submit(o, func(r gpu.Result) {
			defer close(returnedCh)
			returned := time.Since(start)
			free := p.Bytes() + r.Free - b.Free
			mu.Lock()
			script.Record(o, name, r)
			lines = append(lines, NewLine(st, o, called, returned, r, free))
			mu.Unlock()
			wg.Done()
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(limit):
		mu.Lock()
		defer mu.Unlock()
		return nil, fmt.Errorf("%d of %d calls returned within %v of the last call:\n%s", len(lines), len(p.Steps), limit, Format(lines))
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].Returned < lines[j].Returned })
	return lines, nil
}

// Judge returns expected when actual keeps its semantics (Compare), and
// otherwise actual followed by what differs, so that a datadriven test shows
// the difference.
func Judge(expected string, actual []Line, tol Tolerance) (string, error) {
	exp, err := ParseLines(expected)
	if err != nil {
		return "", err
	}
	diffs := Compare(exp, actual, tol)
	if len(diffs) == 0 {
		return expected, nil
	}
	return Format(actual) + "# differs from the measured behaviour:\n# " + strings.Join(diffs, "\n# ") + "\n", nil
}
