package par

import (
	"fmt"
	"sync"
	"testing"
)

// Every index is visited exactly once, in chunks of at least minChunk (but
// for a range smaller than that).
func TestRangeCoversOnce(t *testing.T) {
	for _, tc := range []struct{ n, min, per int }{{0, 1, 1}, {1, 1024, 1}, {1000, 1024, 1}, {5000, 1024, 1}, {1 << 16, 7, 4}, {13, 1, 100}} {
		seen := make([]int, tc.n)
		var mu sync.Mutex
		calls := 0
		Range(tc.n, tc.min, tc.per, func(lo, hi int) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if hi-lo < tc.min && hi-lo != tc.n {
				t.Errorf("n %d: chunk [%d, %d) under %d", tc.n, lo, hi, tc.min)
			}
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("n %d: index %d visited %d times", tc.n, i, c)
			}
		}
		if tc.n == 0 && calls != 0 {
			t.Errorf("n 0: %d calls", calls)
		}
	}
}

// Collect keeps index order and returns the lowest failing index's error.
func TestCollect(t *testing.T) {
	got, err := Collect(100, func(i int) (int, error) { return i * i, nil })
	if err != nil || len(got) != 100 {
		t.Fatalf("got %d results, %v", len(got), err)
	}
	for i, v := range got {
		if v != i*i {
			t.Fatalf("result %d is %d", i, v)
		}
	}
	_, err = Collect(50, func(i int) (int, error) {
		if i == 7 || i == 40 {
			return 0, fmt.Errorf("index %d", i)
		}
		return i, nil
	})
	if err == nil || err.Error() != "index 7" {
		t.Fatalf("error %v, want index 7's", err)
	}
	if got, err := Collect(0, func(int) (int, error) { return 1, nil }); err != nil || len(got) != 0 {
		t.Fatalf("n 0: %v, %v", got, err)
	}
}
