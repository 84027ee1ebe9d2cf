package store

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A summary's Updated is its partitions' last write, in Summary and Jobs
// alike: a daemon forgets ended jobs by it.
func TestSummaryUpdated(t *testing.T) {
	s, err := Open("/db", &Options{FS: vfs.NewMem(), Logger: quietLogger(), Now: fakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateJob(Job{ID: "j", Circuit: "mimc", NumPartitions: 2}); err != nil {
		t.Fatal(err)
	}
	updated := func() time.Time {
		t.Helper()
		sum, err := s.Summary("j")
		if err != nil {
			t.Fatal(err)
		}
		sums, err := s.Jobs()
		if err != nil || len(sums) != 1 || !sums[0].Updated.Equal(sum.Updated) {
			t.Fatalf("jobs: %v %+v, want Updated %v", err, sums, sum.Updated)
		}
		parts, err := s.Partitions("j")
		if err != nil {
			t.Fatal(err)
		}
		var last time.Time
		for _, p := range parts {
			if p.Updated.After(last) {
				last = p.Updated
			}
		}
		if !sum.Updated.Equal(last) {
			t.Fatalf("summary Updated %v, the partitions' last write %v", sum.Updated, last)
		}
		return sum.Updated
	}
	created := updated()
	if created.IsZero() {
		t.Fatal("a new job's Updated is zero, want its creation")
	}
	if err := s.MarkFailed("j", 1, "x"); err != nil {
		t.Fatal(err)
	}
	if failed := updated(); !failed.After(created) {
		t.Errorf("Updated after a partition failed: %v, want after %v", failed, created)
	}
}
