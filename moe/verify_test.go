package moe_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"moebench/moe"
)

func TestCheckDispatch(t *testing.T) {
	t.Parallel()
	r := mustGenerate(t, v3(), "powerlaw:1.2", 21)
	l := r.LL()
	exp := l.Expected()
	if len(exp) != r.Selections() {
		t.Fatalf("Expected has %d deliveries, want %d", len(exp), r.Selections())
	}
	// find returns the index of a delivery whose block holds at least two
	// tokens, so that slots can be swapped.
	find := func() int {
		for i, d := range exp {
			if d.Slot == 1 {
				return i
			}
		}
		t.Fatal("no block with two tokens")
		return -1
	}
	tests := []struct {
		name   string
		mutate func([]moe.Delivery) []moe.Delivery
		want   []string // substrings of the error; none for a clean check
	}{
		{"exact", func(d []moe.Delivery) []moe.Delivery { return d }, nil},
		{"shuffled", func(d []moe.Delivery) []moe.Delivery {
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(d), func(i, j int) { d[i], d[j] = d[j], d[i] })
			return d
		}, nil},
		{"missing", func(d []moe.Delivery) []moe.Delivery { return d[1:] }, []string{"1 problem:", "rank 0 token 0 never reached expert"}},
		{"duplicate", func(d []moe.Delivery) []moe.Delivery { return append(d, d[5]) }, []string{"delivered twice"}},
		{"swapped", func(d []moe.Delivery) []moe.Delivery {
			i := find()
			j := slices.IndexFunc(d, func(x moe.Delivery) bool {
				return x.SrcRank == d[i].SrcRank && x.DstRank == d[i].DstRank && x.LocalExpert == d[i].LocalExpert && x.Slot == 0
			})
			d[i].Slot, d[j].Slot = d[j].Slot, d[i].Slot
			return d
		}, []string{"2 problems", "misplaced", "which belongs to token"}},
		{"slot-past-count", func(d []moe.Delivery) []moe.Delivery { d[0].Slot = 1000; return d }, []string{"expects", "never reached"}},
		{"bad-rank", func(d []moe.Delivery) []moe.Delivery { d[0].DstRank = 99; return d }, []string{"out of range", "never reached"}},
		{"many", func(d []moe.Delivery) []moe.Delivery { return d[:len(d)-50] }, []string{"50 problems", "and 40 more"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := l.CheckDispatch(tt.mutate(slices.Clone(exp)))
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("CheckDispatch: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("CheckDispatch passed a broken dispatch")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestRecvRange(t *testing.T) {
	t.Parallel()
	r := mustGenerate(t, v3(), "uniform", 4)
	l := r.LL()
	for p := range r.Shape.Physical() {
		next := 0
		for src := range r.Shape.Ranks {
			begin, n := l.RecvRange(p, src)
			if begin != next {
				t.Fatalf("expert %d source %d: begin %d, want %d", p, src, begin, next)
			}
			next += n
		}
		if int64(next) != l.RecvPerExpert[p] {
			t.Fatalf("expert %d: ranges cover %d, received %d", p, next, l.RecvPerExpert[p])
		}
	}
}

// TestBlocks checks the block index against the layout: every message
// once, at its expert's block from its source, at its RecvSlot, and each
// block where RecvRange puts it within its expert.
func TestBlocks(t *testing.T) {
	t.Parallel()
	r := mustGenerate(t, v3(), "powerlaw:1.2", 9)
	l := r.LL()
	b := l.Blocks()
	R, nl := r.Shape.Ranks, r.Shape.LocalExperts()
	for p := range r.Shape.Physical() {
		for src := range R {
			begin, n := l.RecvRange(p, src)
			off := int(b.Off[p*R+src])
			if off-int(b.Off[p*R]) != begin || int(b.Off[p*R+src+1])-off != n {
				t.Fatalf("expert %d source %d: block [%d, %d), RecvRange %d+%d", p, src, off, b.Off[p*R+src+1], begin, n)
			}
			for slot := range n {
				i := int(b.Msg[off+slot])
				m := l.Msgs[i]
				if i < l.Start[src] || i >= l.Start[src+1] || int(m.DstRank)*nl+int(m.LocalExpert) != p || int(m.RecvSlot) != slot {
					t.Fatalf("expert %d source %d slot %d holds message %d %+v", p, src, slot, i, m)
				}
			}
		}
	}
	if int(b.Off[len(b.Off)-1]) != len(l.Msgs) {
		t.Fatalf("blocks hold %d messages, the layout %d", b.Off[len(b.Off)-1], len(l.Msgs))
	}
}

// TestDispatchCheckStreams feeds a check one delivery at a time and asks
// for its verdict twice: reporting the slots never filled must not change
// what it holds.
func TestDispatchCheckStreams(t *testing.T) {
	t.Parallel()
	r := mustGenerate(t, v3(), "uniform", 5)
	l := r.LL()
	c := l.NewDispatchCheck(l.Blocks())
	exp := l.Expected()
	for _, d := range exp[:len(exp)-3] {
		c.Add(d)
	}
	c.Add(exp[0])
	first := c.Err()
	if first == nil || !strings.Contains(first.Error(), "4 problems") || !strings.Contains(first.Error(), "delivered twice") {
		t.Fatalf("Err = %v, want a duplicate and three missing", first)
	}
	if again := c.Err(); again.Error() != first.Error() {
		t.Fatalf("second Err = %v, first %v", again, first)
	}
	for _, d := range exp[len(exp)-3:] {
		c.Add(d)
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "1 problem:") {
		t.Fatalf("after the last deliveries, Err = %v, want only the duplicate", err)
	}
}

func TestPayload(t *testing.T) {
	t.Parallel()
	seen := map[uint64]bool{}
	for src := range 64 {
		for tok := range 256 {
			p := moe.Payload(src, tok)
			if seen[p] {
				t.Fatalf("Payload(%d, %d) collides", src, tok)
			}
			seen[p] = true
			if v := moe.ExpertOutput(src, tok, 3); v < -1 || v >= 1 {
				t.Fatalf("ExpertOutput = %v, outside [-1, 1)", v)
			}
		}
	}
	if moe.ExpertOutput(1, 2, 3) == moe.ExpertOutput(1, 2, 4) {
		t.Error("ExpertOutput ignores the expert")
	}
}

func TestCombineReference(t *testing.T) {
	t.Parallel()
	s := moe.Shape{Experts: 4, PhysicalExperts: 8, TopK: 2, Hidden: 4096, Tokens: 2, Ranks: 2, GPUsPerNode: 2, Dispatch: moe.FP8, Combine: moe.BF16}
	// Token 0 of both routings picks logical experts 1 and 2, through
	// different replicas; token 1 has one slot empty.
	w := [][]float32{{0.75, 0.25, 1, 0}, nil}
	a, err := moe.FromTopk(s, [][]int64{{1, 2, 3, -1}, {}}, w)
	if err != nil {
		t.Fatal(err)
	}
	b, err := moe.FromTopk(s, [][]int64{{5, 6, 7, -1}, {}}, w)
	if err != nil {
		t.Fatal(err)
	}
	want0 := 0.75*moe.ExpertOutput(0, 0, 1) + 0.25*moe.ExpertOutput(0, 0, 2)
	want1 := moe.ExpertOutput(0, 1, 3)
	for name, r := range map[string]*moe.Routing{"originals": a, "replicas": b} {
		if got := r.CombineReference(0, 0); math.Abs(got-want0) > 1e-15 {
			t.Errorf("%s: token 0 reference %v, want %v", name, got, want0)
		}
		if got := r.CombineReference(0, 1); got != want1 {
			t.Errorf("%s: token 1 reference %v, want %v", name, got, want1)
		}
	}

	g := mustGenerate(t, v3(), "uniform", 8)
	ref := make([]float64, g.TokensOf(3))
	for tok := range ref {
		ref[tok] = g.CombineReference(3, tok)
	}
	tests := []struct {
		name string
		rank int
		got  func() []float64
		want string
	}{
		{"exact", 3, func() []float64 { return ref }, ""},
		{"rounding", 3, func() []float64 {
			v := slices.Clone(ref)
			v[0] += 1e-13
			return v
		}, ""},
		{"wrong", 3, func() []float64 {
			v := slices.Clone(ref)
			v[17] += 1e-6
			return v
		}, "rank 3: 1 problem: token 17: got"},
		{"short", 3, func() []float64 { return ref[:5] }, "rank 3: 5 outputs for 128 tokens"},
		{"nan", 3, func() []float64 {
			v := slices.Clone(ref)
			v[2] = math.NaN()
			return v
		}, "token 2: got NaN"},
		{"bad-rank", 16, func() []float64 { return ref }, "rank 16 out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := g.CheckCombine(tt.rank, tt.got())
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("CheckCombine: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("CheckCombine error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
