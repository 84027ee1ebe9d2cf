package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cuzk/cuzk/actors"
)

// progress shows how a run goes while it runs: partitions proved, failed and
// retried, the mean time of each stage so far, and when the run should end
// at the rate so far. On a terminal it keeps one line up to date; elsewhere
// it writes a line for each partition that ends or is retried.
type progress struct {
	mu        sync.Mutex
	w         io.Writer
	tty       bool
	total     int
	done      int
	failed    int
	cancelled int
	retried   int
	stageSum  map[actors.Stage]time.Duration
	stageN    map[actors.Stage]int
	drawn     time.Duration // when the terminal line was last drawn
	dirty     bool          // a terminal line is showing
}

// redrawEvery bounds how often the terminal line is redrawn.
const redrawEvery = 100 * time.Millisecond

func newProgress(w io.Writer, tty bool, total int) *progress {
	return &progress{w: w, tty: tty, total: total, stageSum: map[actors.Stage]time.Duration{}, stageN: map[actors.Stage]int{}}
}

// Observe implements actors.Observer.
func (p *progress) Observe(e actors.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var line string
	switch e.Kind {
	case actors.EvStageEnd:
		if e.Err == "" {
			p.stageSum[e.Stage] += e.Took
			p.stageN[e.Stage]++
		}
		if !p.tty || e.At-p.drawn < redrawEvery {
			return
		}
	case actors.EvPartitionDone:
		p.done++
		line = fmt.Sprintf("partition %d proved and verified", e.Partition.Partition)
	case actors.EvPartitionRetry:
		p.retried++
		line = fmt.Sprintf("partition %d will be retried: %s", e.Partition.Partition, e.Err)
	case actors.EvPartitionFailed:
		p.failed++
		line = fmt.Sprintf("partition %d FAILED: %s", e.Partition.Partition, e.Err)
	case actors.EvPartitionCancelled:
		p.cancelled++
		line = fmt.Sprintf("partition %d cancelled", e.Partition.Partition)
	default:
		return
	}
	if p.tty {
		if line != "" && e.Kind != actors.EvPartitionDone {
			// Failures and retries stay on the screen above the status line.
			fmt.Fprintf(p.w, "\r\033[K[%7.2fs] %s\n", e.At.Seconds(), line)
		}
		fmt.Fprintf(p.w, "\r\033[K%s", p.status(e.At))
		p.drawn, p.dirty = e.At, true
		return
	}
	fmt.Fprintf(p.w, "[%7.2fs] %s (%s)\n", e.At.Seconds(), line, p.counts(e.At))
}

// counts says how many partitions ended and when the rest should be done.
func (p *progress) counts(at time.Duration) string {
	s := fmt.Sprintf("%d/%d proved", p.done, p.total)
	if p.failed > 0 {
		s += fmt.Sprintf(", %d failed", p.failed)
	}
	if p.cancelled > 0 {
		s += fmt.Sprintf(", %d cancelled", p.cancelled)
	}
	if p.retried > 0 {
		s += fmt.Sprintf(", %d retried", p.retried)
	}
	ended := p.done + p.failed + p.cancelled
	if ended > 0 && ended < p.total {
		eta := time.Duration(float64(at) / float64(ended) * float64(p.total-ended))
		s += fmt.Sprintf(", ETA %s", eta.Round(100*time.Millisecond))
	}
	return s
}

// status is the terminal line: counts, then each stage's mean time so far.
func (p *progress) status(at time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%7.2fs] %s", at.Seconds(), p.counts(at))
	sep := " | "
	for s := actors.StageSynthesize; s <= actors.StageFinalize; s++ {
		if n := p.stageN[s]; n > 0 {
			fmt.Fprintf(&b, "%s%s %.0f ms", sep, s, float64((p.stageSum[s]/time.Duration(n)).Microseconds())/1000)
			sep = ", "
		}
	}
	return b.String()
}

// finish ends the terminal line.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dirty {
		fmt.Fprintln(p.w)
		p.dirty = false
	}
}
