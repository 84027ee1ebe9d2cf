package runner

import (
	"testing"

	"github.com/cuzk/cuzk/prover"
)

type footprinted struct {
	prover.Backend
	footprint, staged int64
}

func (f footprinted) Footprint(*prover.Keys) int64 { return f.footprint }

type stagesPart struct{ footprinted }

func (s stagesPart) StagedBytes(*prover.Keys) int64 { return s.staged }

// The actors' copy is what the backend's Stage copies: the footprint unless
// the backend says less, never more than it nor below zero.
func TestStagedFor(t *testing.T) {
	k := &prover.Keys{}
	for _, tc := range []struct {
		b    prover.Backend
		want int64
	}{
		{footprinted{footprint: 1000}, 1000},
		{stagesPart{footprinted{footprint: 1000, staged: 400}}, 400},
		{stagesPart{footprinted{footprint: 1000, staged: 5000}}, 1000},
		{stagesPart{footprinted{footprint: 1000, staged: -1}}, 0},
	} {
		if got := StagedFor(tc.b, k); got != tc.want {
			t.Errorf("%T %+v: staged %d, want %d", tc.b, tc.b, got, tc.want)
		}
	}
}
