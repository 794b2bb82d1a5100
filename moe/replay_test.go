package moe

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func traceShape(ranks, experts, topk, tokens int) Shape {
	return Shape{Experts: experts, TopK: topk, Hidden: 128, Tokens: tokens, Ranks: ranks, GPUsPerNode: 2, Dispatch: FP8, Combine: BF16}
}

func TestSplitTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n, ranks int
		want     []int
	}{
		{10, 4, []int{0, 3, 6, 8, 10}},
		{8, 4, []int{0, 2, 4, 6, 8}},
		{2, 4, []int{0, 1, 2, 2, 2}},
		{0, 2, []int{0, 0, 0}},
		{5, 0, nil},
		{-1, 2, nil},
	} {
		if got := SplitTokens(tc.n, tc.ranks); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitTokens(%d, %d) = %v, want %v", tc.n, tc.ranks, got, tc.want)
		}
	}
}

func TestFromTracePlacesRankedAndUnranked(t *testing.T) {
	t.Parallel()
	s := traceShape(4, 8, 2, 3)
	recs := []TraceTokens{
		{Rank: 2, Idx: []int32{0, 1}},                                 // one token on rank 2
		{Rank: -1, Idx: []int32{2, 3, 4, 5, 6, 7}},                    // three unranked tokens ...
		{Rank: -1, Idx: []int32{1, -1, 0, 7, 3, 2, 5, 4, 6, 0, 1, 2}}, // ... and six more: 9 over 4 ranks = 3, 2, 2, 2
	}
	per, err := TraceRankTokens(s.Ranks, s.TopK, recs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{3, 2, 3, 2}; !reflect.DeepEqual(per, want) {
		t.Fatalf("tokens per rank %v, want %v", per, want)
	}
	rt, err := FromTrace(s, LogicalIDs, recs)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{
		{2, 3, 4, 5, 6, 7}, // unranked tokens 0-2
		{1, -1, 0, 7},      // 3-4
		{0, 1, 3, 2, 5, 4}, // rank 2's own token first, then 5-6
		{6, 0, 1, 2},       // 7-8
	}
	if !reflect.DeepEqual(rt.Idx, want) {
		t.Fatalf("idx %v, want %v", rt.Idx, want)
	}
	// Without weights, a token's valid selections weigh the same.
	if w := rt.Weights[1][:2]; w[0] != 1 || w[1] != 0 {
		t.Errorf("weights of a token with one selection: %v, want [1 0]", w)
	}
	tr := rt.Traffic()
	var sum int64
	for _, n := range tr.PerRank {
		sum += n
	}
	if sel := int64(rt.Selections()); sum != sel || tr.ByLocality[SameRank]+tr.ByLocality[SameNode]+tr.ByLocality[Remote] != sel {
		t.Errorf("traffic counts %d per rank, %v by locality; the routing has %d selections", sum, tr.ByLocality, sel)
	}
	ll := rt.LL()
	if !reflect.DeepEqual(tr.PerRank, ll.RecvPerRank) || !reflect.DeepEqual(tr.PerExpert, ll.RecvPerExpert) || tr.ByLocality != ll.ByLocality {
		t.Errorf("Traffic %+v disagrees with the LL layout's counts", tr)
	}
}

func TestFromTraceIDSpaces(t *testing.T) {
	t.Parallel()
	// 4 logical experts on 8 physical: logical ids go to replicas by token,
	// physical ids stay.
	s := traceShape(2, 4, 1, 2)
	s.PhysicalExperts = 8
	recs := []TraceTokens{{Rank: 0, Idx: []int32{1, 1}}, {Rank: 1, Idx: []int32{3, 3}}}
	lg, err := FromTrace(s, LogicalIDs, recs)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int32{{1, 5}, {3, 7}}; !reflect.DeepEqual(lg.Idx, want) {
		t.Errorf("logical ids placed as %v, want replicas %v", lg.Idx, want)
	}
	ph, err := FromTrace(s, PhysicalIDs, []TraceTokens{{Rank: 0, Idx: []int32{7, 6}}, {Rank: 1, Idx: []int32{0}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int32{{7, 6}, {0}}; !reflect.DeepEqual(ph.Idx, want) {
		t.Errorf("physical ids placed as %v, want %v", ph.Idx, want)
	}
}

func TestFromTraceErrors(t *testing.T) {
	t.Parallel()
	s := traceShape(2, 8, 2, 2)
	for _, tc := range []struct {
		name string
		ids  TraceIDs
		recs []TraceTokens
		want string
		at   *TraceError
	}{
		{"duplicate", LogicalIDs, []TraceTokens{{Rank: 1, Idx: []int32{0, 1, 3, 3}}}, "already selected in slot 0", &TraceError{Record: 0, Rank: 1, Token: 1, Slot: 1}},
		{"out of range", LogicalIDs, []TraceTokens{{Rank: 0, Idx: []int32{0, 1}}, {Rank: -1, Idx: []int32{8, 1}}}, "expert 8 is out of range [-1, 8)", &TraceError{Record: 1, Rank: -1, Token: 0, Slot: 0}},
		{"below -1", PhysicalIDs, []TraceTokens{{Rank: 0, Idx: []int32{0, -2}}}, "expert -2 is out of range", &TraceError{Record: 0, Rank: 0, Token: 0, Slot: 1}},
		{"weight", LogicalIDs, []TraceTokens{{Rank: 0, Idx: []int32{0, 1}, Weights: []float32{1, float32(math.Inf(1))}}}, "not finite", &TraceError{Record: 0, Rank: 0, Token: 0, Slot: 1}},
		{"too many tokens", LogicalIDs, []TraceTokens{{Rank: 0, Idx: []int32{0, 1, 2, 3, 4, 5}}}, "rank 0 holds 3 tokens, more than the shape's 2", nil},
		{"ragged", LogicalIDs, []TraceTokens{{Rank: 0, Idx: []int32{0, 1, 2}}}, "not a whole number of top-2 rows", nil},
		{"rank", LogicalIDs, []TraceTokens{{Rank: 2, Idx: []int32{0, 1}}}, "rank 2 is out of range [-1, 2)", nil},
	} {
		_, err := FromTrace(s, tc.ids, tc.recs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
			continue
		}
		var te *TraceError
		if tc.at != nil {
			if !errors.As(err, &te) {
				t.Errorf("%s: %v is not a *TraceError", tc.name, err)
				continue
			}
			if te.Record != tc.at.Record || te.Rank != tc.at.Rank || te.Token != tc.at.Token || te.Slot != tc.at.Slot {
				t.Errorf("%s: located at %+v, want %+v", tc.name, *te, *tc.at)
			}
		}
	}
}
