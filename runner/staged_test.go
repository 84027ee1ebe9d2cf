package runner

import (
	"testing"

	"github.com/cuzk/cuzk/actors"
	"github.com/cuzk/cuzk/internal/par"
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

// A partition's lane is taken when the actors start its first synthesis, in
// their order, whatever order the stages' goroutines then run in; a second
// start (a retry) keeps it.
func TestLanesInStartOrder(t *testing.T) {
	if par.NewLane() == nil {
		t.Skip("CUZK_CPU_LANES=off")
	}
	e := NewExecutor(nil, nil)
	e.AddJob("j", &prover.Keys{}, []byte("seed"), nil, nil)
	order := []int{2, 0, 1}
	for _, i := range order {
		e.Starting(actors.StageWork{Stage: actors.StageSynthesize, Partition: actors.PartitionID{Job: "j", Partition: i}})
	}
	lane := func(i int) *par.Lane { _, st, _ := e.get(actors.PartitionID{Job: "j", Partition: i}); return st.lane }
	first := lane(2)
	e.Starting(actors.StageWork{Stage: actors.StageSynthesize, Partition: actors.PartitionID{Job: "j", Partition: 2}})
	e.Starting(actors.StageWork{Stage: actors.StagePrep, Partition: actors.PartitionID{Job: "j", Partition: 3}})
	if lane(2) != first || !lane(2).Before(lane(0)) || !lane(0).Before(lane(1)) || lane(3) != nil {
		t.Fatalf("lanes: 2 %p, 0 %p, 1 %p (2 before 0: %v, 0 before 1: %v), 3 %p", lane(2), lane(0), lane(1),
			lane(2).Before(lane(0)), lane(0).Before(lane(1)), lane(3))
	}
}
