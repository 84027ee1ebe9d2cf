package cli

import (
	"bytes"
	"fmt"

	"github.com/cuzk/cuzk/sim"
)

// raceFitSeeds is how many seeds the simulator runs of each racing
// configuration for each later_first it tries.
const raceFitSeeds = 64

// raceFitMax is the largest later_first the fit tries.
const raceFitMax = 0.25

// raceFit is what fitting host.handoff.later_first through the simulator
// found: the card's ties and the model's at the value it chose.
type raceFit struct {
	card, model sim.RaceFit
	laterFirst  float64
	// noSay is set when the model lost the same share of its ties at
	// later_first 0 and raceFitMax, below the card's: later_first decides
	// none of them (a worker that takes a free compute_mtx in place
	// launches before the mem lock runs), and the profile's value is kept.
	noSay bool
}

// fitLaterFirst sets p's host.handoff.later_first to the value at which the
// simulator, running what the race runs ran (split-devsync at 3 and 4
// workers on the whole card of `card` bytes, spec's partitions, seeds 1 to
// raceFitSeeds), loses the share of launch/device-sync ties that the card's
// race traces lost (their device sync did not wait for the launch's kernel).
//
// Setting later_first to the card's share directly overshoots: the model's
// handoffs put two grants at one instant, where the card's are tens of
// microseconds apart, and some of its ties are lost by newest_first's draw
// or at a kernel's end, so the model loses about twice the card's share
// (runs/h200-2026-12-04d; docs/simulator.md "The handoff"). The model's
// share grows with later_first; the fit bisects on [0, raceFitMax]. Where
// the model loses more than the card already at 0, later_first is 0 and the
// difference is the model's floor, reported. Where the model loses no more
// at raceFitMax than at 0 (free mutexes taken in place: the launch leaves
// before the mem lock runs, whatever the order of handoffs), later_first
// has no say in these ties and p's is kept.
func fitLaterFirst(p *sim.Profile, spec contentionSpec, card int64, race []sim.Trace) (*sim.Profile, raceFit, error) {
	var f raceFit
	var err error
	if f.card, err = sim.RaceTies(race...); err != nil {
		return nil, f, err
	}
	if f.card.Ties == 0 {
		return nil, f, sim.ErrNoRaceTies
	}
	s := spec
	s.limit = card
	// model is the simulator's ties at later_first lf, its traces kept in
	// memory.
	model := func(lf float64) (sim.RaceFit, error) {
		c := contentionSimOf(withLaterFirst(p, lf, ""), s, raceFitSeeds)
		var traces []sim.Trace
		for _, w := range []int{3, 4} {
			ts, err := seedsSideBySide(raceFitSeeds, func(seed int) (sim.Trace, error) {
				var b bytes.Buffer
				if _, err := c.runSeedTo("split-devsync", w, uint64(seed), &b); err != nil {
					return sim.Trace{}, fmt.Errorf("split-devsync × %d at later_first %g, seed %d: %w", w, lf, seed, err)
				}
				return sim.Trace{Name: fmt.Sprintf("split-devsync × %d, seed %d", w, seed), JSON: b.Bytes()}, nil
			})
			if err != nil {
				return sim.RaceFit{}, err
			}
			traces = append(traces, ts...)
		}
		return sim.RaceTies(traces...)
	}
	target := f.card.LostShare()
	lo, hi := 0.0, raceFitMax
	at0, err := model(lo)
	if err != nil {
		return nil, f, err
	}
	f.model = at0
	if at0.LostShare() >= target && at0.Lost > 0 {
		return withLaterFirst(p, 0, fitSource(f)), f, nil // the model's floor
	}
	// A model that loses nothing at 0 is tried at raceFitMax too, to tell
	// a card that lost nothing from a later_first with no say.
	atHi, err := model(hi)
	if err != nil {
		return nil, f, err
	}
	if atHi.LostShare() <= at0.LostShare() {
		f.noSay = true
		if p.Host.Handoff != nil {
			f.laterFirst = p.Host.Handoff.LaterFirst
		}
		return withLaterFirst(p, f.laterFirst, fmt.Sprintf("later_first: kept, as it decides none of the launch/device-sync ties of split-devsync "+
			"at 3 and 4 workers on the whole card: the card's race runs lost %d of %d (%.1f %%), the model %d of %d (%.1f %%) at any later_first",
			f.card.Lost, f.card.Ties, 100*f.card.LostShare(), at0.Lost, at0.Ties, 100*at0.LostShare())), f, nil
	}
	if target == 0 {
		return withLaterFirst(p, 0, fitSource(f)), f, nil
	}
	f.laterFirst, f.model = hi, atHi
	if atHi.LostShare() > target {
		// Bisect to a thousandth.
		for hi-lo > 0.001 {
			mid := (lo + hi) / 2
			m, err := model(mid)
			if err != nil {
				return nil, f, err
			}
			if m.LostShare() < target {
				lo = mid
			} else {
				hi, f.model = mid, m
			}
		}
		f.laterFirst = sim.Round(hi, 3)
		if f.model, err = model(f.laterFirst); err != nil {
			return nil, f, err
		}
	}
	return withLaterFirst(p, f.laterFirst, fitSource(f)), f, nil
}

// fitSource is the profile's note of a later_first fitted through the
// simulator.
func fitSource(f raceFit) string {
	return fmt.Sprintf("later_first: fitted through the simulator so that split-devsync at 3 and 4 workers on the whole card "+
		"loses the share of launch/device-sync ties the card's race runs lost, %d of %d (%.1f %%); the model at %g loses %d of %d (%.1f %%)",
		f.card.Lost, f.card.Ties, 100*f.card.LostShare(), f.laterFirst, f.model.Lost, f.model.Ties, 100*f.model.LostShare())
}

// withLaterFirst is a copy of p whose host.handoff.later_first is lf, with
// source added to the handoff's source where it is not empty.
func withLaterFirst(p *sim.Profile, lf float64, source string) *sim.Profile {
	out := *p
	h := sim.HandoffProfile{}
	if p.Host.Handoff != nil {
		h = *p.Host.Handoff
	}
	h.LaterFirst = lf
	if source != "" {
		if h.Source != "" {
			h.Source += "; "
		}
		h.Source += source
	}
	out.Host.Handoff = &h
	return &out
}
