package budget

import (
	"runtime"
	"sync"
)

// Indexed runs do(0..n-1) on up to jobs goroutines (GOMAXPROCS when
// jobs <= 0) and returns the results in index order, so that the output is
// the serial run's whatever finishes first. done is called after each, one
// call at a time. The error is the lowest index's, as a serial run would
// have stopped at it; once one fails, indices not yet started are skipped.
func Indexed[T any](n, jobs int, do func(i int) (T, error), done func(i int)) ([]T, error) {
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

// Gate admits work while the memory estimates of what runs stay within a
// budget, in the order it was asked for, so that a sweep runs as many
// points at once as fit and a large one alone rather than refusing it. An
// estimate over the budget by itself runs once nothing else does (the
// commands refuse those before they start).
type Gate struct {
	mu         sync.Mutex
	cond       sync.Cond
	budget     int64 // 0: no limit
	used       int64
	next, head uint64 // tickets: the next to hand out, the next to admit
}

// NewGate is a gate for the budget b.
func NewGate(b Budget) *Gate {
	g := &Gate{budget: max(b.Bytes, 0)}
	g.cond.L = &g.mu
	return g
}

// Acquire waits until bytes fit beside what runs and every earlier caller
// was admitted; it reports whether it waited.
func (g *Gate) Acquire(bytes int64) (waited bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.next
	g.next++
	for t != g.head || g.budget > 0 && g.used > 0 && g.used+bytes > g.budget {
		waited = true
		g.cond.Wait()
	}
	g.head++
	g.used += bytes
	g.cond.Broadcast() // the next in line may fit too
	return waited
}

// Release returns what Acquire took.
func (g *Gate) Release(bytes int64) {
	g.mu.Lock()
	g.used -= bytes
	g.mu.Unlock()
	g.cond.Broadcast()
}

// asked is how many callers have asked so far (tests order their calls
// by it).
func (g *Gate) asked() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.next
}
