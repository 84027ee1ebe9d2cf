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
