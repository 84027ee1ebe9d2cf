package prover

import (
	"runtime"
	"sync"
)

// parallel splits [0, n) into one chunk per core and runs f on each.
func parallel(n int, f func(lo, hi int)) {
	workers := min(runtime.NumCPU(), max(1, n/1024))
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}
