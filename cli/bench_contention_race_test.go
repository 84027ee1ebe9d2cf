package cli

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/sim"
)

// fitLaterFirst finds the later_first a "card" had, when the card is the
// simulator itself at a later_first the fit is not told, run from other
// seeds, every lease through its lock actor (--lock-hops): the model's lost
// share at the fitted value matches the card's, and the value lands near
// the card's own. Setting later_first to the card's lost share instead
// (what the traces alone say) would land far above it.
func TestFitLaterFirstRecoversTheCards(t *testing.T) {
	base, err := sim.LoadProfile("h200-contention-base")
	if err != nil {
		t.Fatal(err)
	}
	spec := contentionSpec{kernel: 60 * time.Millisecond, before: 40 * time.Millisecond, after: 20 * time.Millisecond,
		items: 8, maxAttempts: 3, size: 1 << 20, staged: 6 << 30, copy: 2 << 30, scratch: 1 << 30, lockHops: true}
	const card = int64(140) << 30
	const truth = 0.06
	s := spec
	s.limit = card
	race := simulatedRaceRuns(t, base, spec, card, truth)
	got, f, err := fitLaterFirst(base, spec, card, race)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("card: %d of %d ties lost (%.1f %%); fitted later_first %g, model %d of %d (%.1f %%)",
		f.card.Lost, f.card.Ties, 100*f.card.LostShare(), f.laterFirst, f.model.Lost, f.model.Ties, 100*f.model.LostShare())
	if f.card.Ties < 100 {
		t.Fatalf("only %d ties in the card's runs", f.card.Ties)
	}
	if got.Host.Handoff.LaterFirst != f.laterFirst || math.Abs(f.laterFirst-truth) > 0.03 {
		t.Errorf("fitted later_first %g (profile %g), the card's %g", f.laterFirst, got.Host.Handoff.LaterFirst, truth)
	}
	if math.Abs(f.model.LostShare()-f.card.LostShare()) > 0.02 {
		t.Errorf("the model loses %.3f of its ties at the fitted value, the card %.3f", f.model.LostShare(), f.card.LostShare())
	}
	if got.Host.Handoff.NewestFirst != base.Host.Handoff.NewestFirst {
		t.Errorf("newest_first %g changed from the base's %g", got.Host.Handoff.NewestFirst, base.Host.Handoff.NewestFirst)
	}
}

// simulatedRaceRuns are the race runs of a "card" that is the simulator at
// later_first lf: split-devsync at 3 and 4 workers on the whole card, 48
// seeds each, none of those the fit runs.
func simulatedRaceRuns(t *testing.T, base *sim.Profile, spec contentionSpec, card int64, lf float64) []sim.Trace {
	t.Helper()
	s := spec
	s.limit = card
	c := contentionSimOf(withLaterFirst(base, lf, ""), s, 1)
	var race []sim.Trace
	for _, w := range []int{3, 4} {
		for seed := uint64(1001); seed <= 1048; seed++ {
			var b bytes.Buffer
			if _, err := c.runSeedTo("split-devsync", w, seed, &b); err != nil {
				t.Fatal(err)
			}
			race = append(race, sim.Trace{Name: fmt.Sprintf("card w%d s%d", w, seed), JSON: b.Bytes()})
		}
	}
	return race
}

// Taken in place, a free compute_mtx lets its worker launch before the mem
// lock grants the next worker, whatever the order of handoffs: the same
// "card" at later_first 0.06 loses none of its ties, the model none at any
// later_first, and the fit keeps the profile's value and says so.
func TestFitLaterFirstKeptWhereItHasNoSay(t *testing.T) {
	base, err := sim.LoadProfile("h200-contention-base")
	if err != nil {
		t.Fatal(err)
	}
	spec := contentionSpec{kernel: 60 * time.Millisecond, before: 40 * time.Millisecond, after: 20 * time.Millisecond,
		items: 8, maxAttempts: 3, size: 1 << 20, staged: 6 << 30, copy: 2 << 30, scratch: 1 << 30}
	const card = int64(140) << 30
	race := simulatedRaceRuns(t, base, spec, card, 0.06)
	got, f, err := fitLaterFirst(base, spec, card, race)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("card: %d of %d ties lost; model %d of %d; no say %v, later_first %g", f.card.Lost, f.card.Ties, f.model.Lost, f.model.Ties, f.noSay, f.laterFirst)
	if f.card.Ties < 100 || f.card.Lost != 0 || f.model.Lost != 0 {
		t.Errorf("in place: the card lost %d of %d ties, the model %d of %d; want many ties and none lost", f.card.Lost, f.card.Ties, f.model.Lost, f.model.Ties)
	}
	if !f.noSay || got.Host.Handoff.LaterFirst != base.Host.Handoff.LaterFirst {
		t.Errorf("later_first %g (no say %v), want the base's %g kept", got.Host.Handoff.LaterFirst, f.noSay, base.Host.Handoff.LaterFirst)
	}
	if !strings.Contains(got.Host.Handoff.Source, "kept") {
		t.Errorf("source %q does not say the value was kept", got.Host.Handoff.Source)
	}
}

// Traces without a tie are an error, not a later_first of 0.
func TestFitLaterFirstNeedsTies(t *testing.T) {
	base, err := sim.LoadProfile("h200-contention-base")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = fitLaterFirst(base, contentionSpec{items: 2, staged: 1 << 30, size: 1 << 20}, 140<<30,
		[]sim.Trace{{Name: "empty.json", JSON: []byte(`{"traceEvents": []}`)}})
	if !errors.Is(err, sim.ErrNoRaceTies) {
		t.Errorf("traces without a tie: error %v, want %v", err, sim.ErrNoRaceTies)
	}
}
