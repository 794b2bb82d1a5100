package budget

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestRunIndexedKeepsOrderAndFirstError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		n, jobs int
		fail    []int
		wantErr string
	}{
		{"serial", 7, 1, nil, ""},
		{"parallel", 20, 4, nil, ""},
		{"more jobs than points", 3, 8, nil, ""},
		{"lowest failing index wins", 12, 4, []int{9, 5}, "point 5"},
		{"none", 0, 2, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var done []int
			got, err := Indexed(tc.n, tc.jobs, func(i int) (int, error) {
				// Later points finish first.
				time.Sleep(time.Duration(tc.n-i) * 100 * time.Microsecond)
				if slices.Contains(tc.fail, i) {
					return 0, fmt.Errorf("point %d", i)
				}
				return i * i, nil
			}, func(i int) { done = append(done, i) })
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.n || len(done) != tc.n {
				t.Fatalf("%d results, %d done calls, want %d", len(got), len(done), tc.n)
			}
			for i, v := range got {
				if v != i*i {
					t.Fatalf("result %d = %d, want %d", i, v, i*i)
				}
			}
		})
	}
}

// The gate admits in order, keeps what runs within its budget, and lets
// an estimate over the budget run alone.
func TestMemGate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		budget int64
		sizes  []int64
		most   int64 // the most that may run at once
	}{
		{"no limit", 0, []int64{5, 5, 5, 5}, 20},
		{"two at a time", 10, []int64{5, 5, 5, 5, 5, 5}, 10},
		{"large alone", 10, []int64{3, 9, 3, 3, 12, 3}, 12},
		{"one at a time", 4, []int64{4, 4, 4}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := NewGate(Budget{Bytes: tc.budget})
			var (
				mu        sync.Mutex
				used, top int64
				order     []int
				wg        sync.WaitGroup
			)
			for i, n := range tc.sizes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					g.Acquire(n)
					mu.Lock()
					order = append(order, i)
					used += n
					top = max(top, used)
					if n > tc.budget && tc.budget > 0 && used != n {
						t.Errorf("%d over the budget %d ran beside %d more", n, tc.budget, used-n)
					}
					mu.Unlock()
					time.Sleep(2 * time.Millisecond)
					mu.Lock()
					used -= n
					mu.Unlock()
					g.Release(n)
				}()
				// Ask in index order.
				for {
					if g.asked() > uint64(i) {
						break
					}
					time.Sleep(50 * time.Microsecond)
				}
			}
			wg.Wait()
			if top > tc.most {
				t.Errorf("%d ran at once, want at most %d", top, tc.most)
			}
			if !slices.IsSorted(order) {
				t.Errorf("admitted in order %v", order)
			}
		})
	}
}
