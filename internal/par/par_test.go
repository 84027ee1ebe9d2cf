package par

import (
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
