package store

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A placement survives a reopen, is replaced by the next one, is refused
// for a partition that does not exist, and is not taken for a partition
// record (the store's partitions of the job are unchanged).
func TestPlacementRecordedBesideThePartition(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, Logger: quietLogger(), Now: fakeClock()}
	s, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateJob(Job{ID: "j", Circuit: "mimc", NumPartitions: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPlacement(Placement{Job: "j", Index: 1, Lease: "e-1", Member: "h1:1", Device: -1, Worker: -1}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPlacement(Placement{Job: "j", Index: 1, Lease: "e-2", Member: "h2:1", Device: 3, Worker: 1, Proved: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPlacement(Placement{Job: "j", Index: 2, Lease: "e-3", Member: "h1:1"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("placement of partition 2 of 2: %v, want ErrNotFound", err)
	}
	if err := s.SetPlacement(Placement{Job: "j", Index: 0, Member: "h1:1"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("placement without a lease: %v, want ErrInvalid", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open("/db", opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pls, err := s.Placements("j")
	if err != nil {
		t.Fatal(err)
	}
	pl, ok := pls[1]
	if len(pls) != 1 || !ok || pl.Lease != "e-2" || pl.Member != "h2:1" || pl.Device != 3 || pl.Worker != 1 || !pl.Proved {
		t.Fatalf("placements %+v, want partition 1's second", pls)
	}
	parts, err := s.Partitions("j")
	if err != nil || len(parts) != 2 {
		t.Fatalf("partitions %v, %v: want the job's 2", parts, err)
	}
}
