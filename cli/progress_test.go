package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/actors"
)

func progressEvents() []actors.Event {
	p := func(i int) actors.PartitionID { return actors.PartitionID{Job: "j", Partition: i} }
	return []actors.Event{
		{Kind: actors.EvStageEnd, At: 100 * time.Millisecond, Partition: p(0), Stage: actors.StageSynthesize, Took: 80 * time.Millisecond},
		{Kind: actors.EvStageEnd, At: 300 * time.Millisecond, Partition: p(0), Stage: actors.StageCompute, Took: 100 * time.Millisecond},
		{Kind: actors.EvPartitionDone, At: time.Second, Partition: p(0)},
		{Kind: actors.EvPartitionRetry, At: 1500 * time.Millisecond, Partition: p(1), Err: "out of device memory"},
		{Kind: actors.EvPartitionFailed, At: 2 * time.Second, Partition: p(1), Err: "failed after 3 attempts"},
	}
}

// Without a terminal, each partition that ends or is retried is a line with
// the counts and an estimate of the time left.
func TestProgressPlainLines(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, false, 4)
	for _, e := range progressEvents() {
		p.Observe(e)
	}
	p.finish()
	want := []string{
		"[   1.00s] partition 0 proved and verified (1/4 proved, ETA 3s)",
		"[   1.50s] partition 1 will be retried: out of device memory (1/4 proved, 1 retried, ETA 4.5s)",
		"[   2.00s] partition 1 FAILED: failed after 3 attempts (1/4 proved, 1 failed, 1 retried, ETA 2s)",
	}
	if got := strings.Split(strings.TrimSpace(b.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", b.String(), strings.Join(want, "\n"))
	}
}

// On a terminal one status line is kept up to date, with each stage's mean
// time; failures stay above it; finish ends the line.
func TestProgressTerminalLine(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, true, 4)
	for _, e := range progressEvents() {
		p.Observe(e)
	}
	p.finish()
	out := b.String()
	for _, want := range []string{
		"\r\033[K[   1.00s] 1/4 proved, ETA 3s | synthesize 80 ms, compute 100 ms",
		"\r\033[K[   2.00s] partition 1 FAILED: failed after 3 attempts\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in %q", want, out)
		}
	}
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("the status line is not ended: %q", out)
	}
}
