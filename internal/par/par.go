// Package par runs loops over index ranges on all cores.
package par

import (
	"runtime"
	"sync"
)

// Range splits [0, n) into contiguous chunks of at least minChunk indices,
// at most perCore per core (GOMAXPROCS), and runs f on each chunk in its own
// goroutine; it returns when all have. n ≤ 0 runs nothing.
func Range(n, minChunk, perCore int, f func(lo, hi int)) {
	if n <= 0 {
		return
	}
	chunks := max(1, min(max(perCore, 1)*runtime.GOMAXPROCS(0), n/max(minChunk, 1)))
	var wg sync.WaitGroup
	for k := range chunks {
		lo, hi := k*n/chunks, (k+1)*n/chunks
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

// Collect runs f(0) … f(n-1) on all cores (Range, one index at least a
// chunk) and returns their results in index order, or the error of the
// lowest index that failed.
func Collect[T any](n int, f func(i int) (T, error)) ([]T, error) {
	out := make([]T, max(n, 0))
	errs := make([]error, max(n, 0))
	Range(n, 1, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i], errs[i] = f(i)
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
