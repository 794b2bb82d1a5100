package main

import (
	"runtime"
	"sync"
)

// runIndexed runs do(0..n-1) on up to jobs goroutines (GOMAXPROCS when
// jobs <= 0) and returns the results in index order, so that the output is
// the serial run's whatever finishes first. done is called after each, one
// call at a time. The error is the lowest index's, as a serial run would
// have stopped at it; once one fails, indices not yet started are skipped.
func runIndexed[T any](n, jobs int, do func(i int) (T, error), done func(i int)) ([]T, error) {
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	out := make([]T, n)
	errs := make([]error, n)
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		failed bool
		next   = make(chan int)
	)
	for range min(jobs, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				mu.Lock()
				skip := failed
				mu.Unlock()
				if skip {
					continue
				}
				v, err := do(i)
				mu.Lock()
				out[i], errs[i] = v, err
				if err != nil {
					failed = true
				} else if done != nil {
					done(i)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
