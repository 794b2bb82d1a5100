package moe

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// A transport that delivers far more than the layer sent overflows the
// log's channel; the check then starts at once, before any core is free,
// and the simulation waits for it rather than lose an entry or hang.
func TestCombineCheckOverflowStartsTheReplay(t *testing.T) {
	t.Parallel()
	s := Shape{Experts: 8, TopK: 2, Hidden: 64, Tokens: 4, Ranks: 2, GPUsPerNode: 2, Dispatch: FP8, Combine: BF16}
	r, err := Generate(s, RoutingSpec{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	l := r.LL()
	never := make(chan struct{}) // no other phase frees a core
	c := newCombineCheck(l, r, never)
	dups := 3*cap(c.full)*checkChunk + 5
	got := make(chan *problemList)
	go func() { // as the simulation would
		for range dups {
			c.logToken(0, 0) // message 0, back to its source, rank 0
		}
		for src := range s.Ranks {
			for i := max(1, l.Start[src]); i < l.Start[src+1]; i++ {
				c.logToken(src, int64(i))
			}
		}
		got <- c.wait()
	}()
	var probs *problemList
	select {
	case probs = <-got:
	case <-time.After(time.Minute):
		t.Fatal("the log's writer still waits for a replay that never started")
	}
	if probs.n != dups-1 {
		t.Errorf("%d problems, want %d (every delivery of message 0 after the first)", probs.n, dups-1)
	}
	if len(probs.list) == 0 || !strings.Contains(probs.list[0], "twice") {
		t.Errorf("problems: %v", probs.list)
	}
}

// docs/performance.md quotes the bytes a logged delivery takes.
func TestCombineLogEntrySize(t *testing.T) {
	var c combineCheck
	docSays(t, fmt.Sprintf("a log of its deliveries in %d bytes each", unsafe.Sizeof(c.chunk[0])))
}
