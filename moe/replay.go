package moe

import (
	"fmt"
	"math"
)

// TraceTokens is one trace record's share of a (step, layer): the top-k
// expert ids its tokens picked on source rank Rank, or on no recorded rank
// (−1).
type TraceTokens struct {
	Rank    int       // source rank, or −1 when the trace did not record it
	Idx     []int32   // row-major [tokens][TopK]; −1 = no selection
	Weights []float32 // same shape as Idx, or nil for equal weights
}

// TraceIDs says which id space a trace's expert ids live in.
type TraceIDs uint8

// The id spaces FromTrace reads.
const (
	// LogicalIDs are model expert ids in [0, Experts); each selection is
	// mapped to a replica with Shape.PhysicalFor (the identity when the
	// shape has no redundant experts).
	LogicalIDs TraceIDs = iota
	// PhysicalIDs are replica ids in [0, Physical()), placed contiguously
	// as DeepEP, SGLang and this package place them: id p on rank
	// p/LocalExperts(). They are used as they are.
	PhysicalIDs
)

// SplitTokens is where each rank's share starts when n tokens are dealt
// evenly over ranks in order: rank r holds [at[r], at[r+1]), and the first
// n mod ranks ranks hold one more token than the rest. It returns nil when
// ranks is below 1 or n is negative.
func SplitTokens(n, ranks int) []int {
	if ranks < 1 || n < 0 {
		return nil
	}
	at := make([]int, ranks+1)
	q, rem := n/ranks, n%ranks
	for r := range ranks {
		at[r+1] = at[r] + q
		if r < rem {
			at[r+1]++
		}
	}
	return at
}

// TraceRankTokens is how many tokens each source rank holds once recs are
// placed as FromTrace places them: a ranked record's tokens on its rank, the
// unranked records' tokens concatenated in order and split evenly over the
// ranks (SplitTokens) after them. Use its maximum as Shape.Tokens.
func TraceRankTokens(ranks, topk int, recs []TraceTokens) ([]int, error) {
	if ranks < 1 || topk < 1 {
		return nil, fmt.Errorf("trace tokens: %d ranks, top-%d: want at least 1 of each", ranks, topk)
	}
	per := make([]int, ranks)
	unranked := 0
	for i, rec := range recs {
		if len(rec.Idx)%topk != 0 {
			return nil, fmt.Errorf("record %d (rank %d): %d ids are not a whole number of top-%d rows", i, rec.Rank, len(rec.Idx), topk)
		}
		if rec.Weights != nil && len(rec.Weights) != len(rec.Idx) {
			return nil, fmt.Errorf("record %d (rank %d): %d weights for %d ids", i, rec.Rank, len(rec.Weights), len(rec.Idx))
		}
		switch {
		case rec.Rank == -1:
			unranked += len(rec.Idx) / topk
		case rec.Rank < -1 || rec.Rank >= ranks:
			return nil, fmt.Errorf("record %d: rank %d is out of range [-1, %d)", i, rec.Rank, ranks)
		default:
			per[rec.Rank] += len(rec.Idx) / topk
		}
	}
	at := SplitTokens(unranked, ranks)
	for r := range per {
		per[r] += at[r+1] - at[r]
	}
	return per, nil
}

// TraceError locates a bad selection in the records given to FromTrace:
// the record's index in the slice, its rank, the token within the record
// and the top-k slot.
type TraceError struct {
	Record, Rank, Token, Slot int
	Msg                       string
}

func (e *TraceError) Error() string {
	return fmt.Sprintf("record %d (rank %d) token %d slot %d: %s", e.Record, e.Rank, e.Token, e.Slot, e.Msg)
}

// FromTrace builds the routing of one (step, layer) of a trace. Tokens are
// placed as TraceRankTokens says; shape.Tokens must be at least the largest
// per-rank count. ids says how to read the expert ids. Errors name the
// record (its index in recs and its rank), the token within the record and
// the slot; a bad selection's error is a *TraceError.
func FromTrace(shape Shape, ids TraceIDs, recs []TraceTokens) (*Routing, error) {
	if err := shape.Validate(); err != nil {
		return nil, fmt.Errorf("routing from trace: shape: %w", err)
	}
	if ids != LogicalIDs && ids != PhysicalIDs {
		return nil, fmt.Errorf("routing from trace: id space %d is neither logical nor physical", ids)
	}
	k := shape.TopK
	per, err := TraceRankTokens(shape.Ranks, k, recs)
	if err != nil {
		return nil, fmt.Errorf("routing from trace: %w", err)
	}
	for r, n := range per {
		if n > shape.Tokens {
			return nil, fmt.Errorf("routing from trace: rank %d holds %d tokens, more than the shape's %d tokens per rank", r, n, shape.Tokens)
		}
	}
	p := newTracePlacer(shape, ids, newRouting(shape, per))
	var unranked []int
	for i := range recs {
		rec := &recs[i]
		if rec.Rank < 0 {
			unranked = append(unranked, i)
			continue
		}
		if err := p.place(i, rec, rec.Rank, 0, len(rec.Idx)/k); err != nil {
			return nil, fmt.Errorf("routing from trace: %w", err)
		}
	}
	if err := p.placeUnranked(recs, unranked); err != nil {
		return nil, fmt.Errorf("routing from trace: %w", err)
	}
	return p.rt, nil
}

// tracePlacer copies a trace's tokens into a routing, rank by rank in
// order, checking every selection.
type tracePlacer struct {
	shape  Shape
	ids    TraceIDs
	rt     *Routing
	lim    int32    // ids are below it
	seen   []uint32 // seen[p] == stamp: p taken by this token
	slotOf []int
	stamp  uint32
	fill   []int // tokens placed so far on each rank
}

func newTracePlacer(shape Shape, ids TraceIDs, rt *Routing) *tracePlacer {
	lim := int32(shape.Physical())
	if ids == LogicalIDs {
		lim = int32(shape.Experts)
	}
	return &tracePlacer{shape: shape, ids: ids, rt: rt, lim: lim,
		seen: make([]uint32, shape.Physical()), slotOf: make([]int, shape.Physical()), fill: make([]int, shape.Ranks)}
}

// place copies tokens [lo, hi) of record i to rank r.
func (p *tracePlacer) place(i int, rec *TraceTokens, r, lo, hi int) error {
	k := p.shape.TopK
	for t := lo; t < hi; t++ {
		p.stamp++
		dst := p.fill[r]
		p.fill[r]++
		g := r*p.shape.Tokens + dst
		row := p.rt.Idx[r][dst*k : dst*k+k]
		valid := 0
		for j := range k {
			e := rec.Idx[t*k+j]
			if e < -1 || e >= p.lim {
				return &TraceError{i, rec.Rank, t, j, fmt.Sprintf("expert %d is out of range [-1, %d)", e, p.lim)}
			}
			x := e
			if e >= 0 && p.ids == LogicalIDs {
				x = int32(p.shape.PhysicalFor(int(e), g))
			}
			row[j] = x
			if x < 0 {
				continue
			}
			valid++
			if p.seen[x] == p.stamp {
				return &TraceError{i, rec.Rank, t, j, fmt.Sprintf("expert %d is already selected in slot %d", e, p.slotOf[x])}
			}
			p.seen[x], p.slotOf[x] = p.stamp, j
		}
		w := p.rt.Weights[r][dst*k : dst*k+k]
		for j := range k {
			switch {
			case rec.Weights != nil:
				w[j] = rec.Weights[t*k+j]
				if f := float64(w[j]); math.IsNaN(f) || math.IsInf(f, 0) {
					return &TraceError{i, rec.Rank, t, j, fmt.Sprintf("weight %v is not finite", w[j])}
				}
			case row[j] >= 0:
				w[j] = 1 / float32(valid)
			}
		}
	}
	return nil
}

// placeUnranked splits the records without a rank (their indices in recs)
// evenly over the ranks, walking their concatenation rank by rank.
func (p *tracePlacer) placeUnranked(recs []TraceTokens, unranked []int) error {
	if len(unranked) == 0 {
		return nil
	}
	k := p.shape.TopK
	total := 0
	for _, i := range unranked {
		total += len(recs[i].Idx) / k
	}
	at := SplitTokens(total, p.shape.Ranks)
	r, g := 0, 0 // destination rank; global index into the concatenation
	for _, i := range unranked {
		rec := &recs[i]
		n := len(rec.Idx) / k
		for t := 0; t < n; {
			for r < p.shape.Ranks && g >= at[r+1] {
				r++
			}
			take := min(n-t, at[r+1]-g)
			if err := p.place(i, rec, r, t, t+take); err != nil {
				return err
			}
			t += take
			g += take
		}
	}
	return nil
}

// Traffic is what a routing asks of ranks and experts, counted in
// selections: a token picked by two experts of one rank counts twice, as
// the LL kernels send it.
type Traffic struct {
	PerRank   []int64 // selections each rank's experts receive
	PerExpert []int64 // selections each physical expert receives
	// ByLocality counts selections by where they go from their source:
	// same rank, same node, another node.
	ByLocality [numLocalities]int64
}

// Traffic counts the routing's selections per destination rank, physical
// expert and locality, without building a layout.
func (r *Routing) Traffic() Traffic {
	s := r.Shape
	t := Traffic{PerRank: make([]int64, s.Ranks), PerExpert: make([]int64, s.Physical())}
	nl := s.LocalExperts()
	for src, row := range r.Idx {
		for _, e := range row {
			if e < 0 {
				continue
			}
			dst := int(e) / nl
			t.PerExpert[e]++
			t.PerRank[dst]++
			t.ByLocality[s.LocalityOf(src, dst)]++
		}
	}
	return t
}

// RankLoad summarizes selections received per rank.
func (t Traffic) RankLoad() Load { return loadOf(t.PerRank) }

// ExpertLoad summarizes selections received per physical expert.
func (t Traffic) ExpertLoad() Load { return loadOf(t.PerExpert) }

// LoadOf summarizes any load vector: its maximum, where, mean and
// max/mean imbalance.
func LoadOf(v []int64) Load { return loadOf(v) }
